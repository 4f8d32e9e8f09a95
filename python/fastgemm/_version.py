"""The installed distribution's version, in a module of its own so that any part of the
package (the threadpoolctl controller included) can import it without importing the rest."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version as _dist_version

try:
    __version__: str = _dist_version("fastgemm")
except PackageNotFoundError:  # imported from a source tree that was never installed
    __version__ = "0+unknown"
