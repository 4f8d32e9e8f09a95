"""`python -m fastgemm switch on|off|status`: a switch that lasts, through a .pth hook.

``switch on`` writes ``fastgemm-switch.pth`` into this environment's site-packages (sysconfig's
purelib), so every interpreter of the environment starts with the hook; ``switch off`` removes
it. The hook is one line that costs a few microseconds at start-up and imports nothing: it puts
a finder at the front of sys.meta_path that waits for ``numpy`` to be imported, and once numpy
is loaded imports fastgemm and turns the switch on (or, if numpy's import came from fastgemm's
own, fastgemm turns it on at the end of its import: see on_import). If fastgemm cannot be
imported (uninstalled, broken) the hook does nothing and says nothing, so it never breaks the
interpreter. ``FASTGEMM_SWITCH=0`` in the environment disables it for one run.
"""

from __future__ import annotations

import os
import sys
import sysconfig

PTH_NAME = "fastgemm-switch.pth"
ENV = "FASTGEMM_SWITCH"
EXIT_USAGE = 2

# The hook's code, run by site.py from the .pth line. No fastgemm import here: the finder only
# wraps numpy's loader, and every failure is swallowed (an interpreter must always start).
_HOOK = """
class _FastgemmSwitch:
    _fastgemm_switch_hook = True
    done = False

    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name != "numpy" or cls.done:
            return None
        cls.done = True
        try:
            for finder in sys.meta_path:
                find = getattr(finder, "find_spec", None)
                spec = None if finder is cls or find is None else find(name, path, target)
                if spec is not None:
                    break
            else:
                return None
            loader, run = spec.loader, spec.loader.exec_module

            def exec_module(module):
                run(module)
                try:
                    if "fastgemm" not in sys.modules:  # else fastgemm's own import turns it on
                        import fastgemm
                        fastgemm.patch_numpy()
                except Exception:
                    pass

            loader.exec_module = exec_module
            return spec
        except Exception:
            return None


if "numpy" not in sys.modules:
    sys.meta_path.insert(0, _FastgemmSwitch)
"""

# One line, as site.py wants: it executes lines that start with "import".
PTH_LINE = (
    "import os, sys; "
    f"exec({_HOOK!r}, {{'sys': sys}}) if os.environ.get({ENV!r}, '1') != '0' else None  "
    "# fastgemm: python -m fastgemm switch on|off|status\n"
)


def site_packages() -> str:
    """This environment's site-packages (sysconfig's purelib), where the .pth goes."""
    return sysconfig.get_paths()["purelib"]


def pth_path(site: str | None = None) -> str:
    return os.path.join(site or site_packages(), PTH_NAME)


def hook_active() -> bool:
    """True when this interpreter started with the hook (and FASTGEMM_SWITCH was not 0)."""
    return any(getattr(f, "_fastgemm_switch_hook", False) for f in sys.meta_path)


def on_import() -> None:
    """Called at the end of ``import fastgemm``: when the hook is active and numpy's import
    came from fastgemm's own (so the hook left it to us), turn the switch on."""
    if hook_active() and os.environ.get(ENV, "1") != "0":
        from ._patch import patch_numpy

        patch_numpy()


def _refuse(message: str) -> int:
    sys.stderr.write(f"python -m fastgemm switch: error: {message}\n")
    return EXIT_USAGE


def main(argv: list[str], site: str | None = None) -> int:
    """``switch on|off|status``; returns the exit code. ``site`` overrides site-packages."""
    if len(argv) != 1 or argv[0] not in ("on", "off", "status"):
        if argv[:1] in (["-h"], ["--help"]):
            print(
                "usage: python -m fastgemm switch on|off|status\n"
                "Installs (on) or removes (off) a .pth hook in this environment's site-packages so every\n"
                f"interpreter of it starts with NumPy's products on fastgemm; {ENV}=0 disables it for one run."
            )
            return 0
        return _refuse("expected one of: on, off, status (python -m fastgemm switch on|off|status)")
    site = site or site_packages()
    path = pth_path(site)
    installed = os.path.isfile(path)
    if argv[0] == "status":
        state = "on" if installed else "off"
        print(f"fastgemm switch: {state} in {site}" + (f" ({path})" if installed else ""))
        if installed and os.environ.get(ENV, "1") == "0":
            print(f"{ENV}=0: disabled in this environment's processes while it is set")
        return 0
    if not os.path.isdir(site):
        return _refuse(f"site-packages {site} does not exist")
    try:
        if argv[0] == "on":
            tmp = path + ".tmp"
            with open(tmp, "w", encoding="utf-8") as f:
                f.write(PTH_LINE)
            os.replace(tmp, path)  # a half-written .pth must never be seen by a starting interpreter
        elif installed:
            os.remove(path)
    except OSError as e:
        return _refuse(f"cannot write to {site} ({e.strerror or e}); use a virtual environment you own")
    print(f"fastgemm switch: {argv[0]} in {site}" + (f" ({path})" if argv[0] == "on" else ""))
    return 0
