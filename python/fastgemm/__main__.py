"""python -m fastgemm bench | info | run"""

import sys

from ._cli import main

sys.exit(main())
