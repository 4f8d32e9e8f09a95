"""python -m fastgemm bench | info"""
import sys

from ._cli import main

sys.exit(main())
