"""A downstream package that depends on fastgemm (see check.py)."""
