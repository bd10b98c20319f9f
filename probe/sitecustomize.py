"""Entry point of bigmac-probe (docs/probe.md): Python imports the first `sitecustomize` on
sys.path at start-up, and the tool puts this directory first on the ranks' PYTHONPATH.

After installing the probe (when BIGMAC_PROBE_LOG is set) it runs the sitecustomize that
Python would have run without it, the next one on sys.path, so a site's own customisation
(Debian's, a virtualenv's, another tool's) still happens.
"""
import os as _os
import sys as _sys

_here = _os.path.dirname(_os.path.realpath(__file__))


def _install_probe():
    try:
        import bigmac_probe

        bigmac_probe.install_from_env()
    except Exception as exc:  # noqa: BLE001 - the program must start whatever the probe does
        _sys.stderr.write(f"bigmac-probe: not installed: {type(exc).__name__}: {exc}\n")


def _run_next_sitecustomize():
    import importlib.machinery
    import importlib.util

    rest = [p for p in _sys.path if _os.path.realpath(p or _os.getcwd()) != _here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    # `import sitecustomize` afterwards finds the module the program would have had.
    _sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


_install_probe()
_run_next_sitecustomize()
