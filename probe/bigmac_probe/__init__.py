"""bigmac-probe: bigmac-log v1 events from a PyTorch program without changing it (docs/probe.md).

sitecustomize.py beside this package calls install_from_env() at interpreter start-up when
BIGMAC_PROBE_LOG is set. Nothing here imports torch: the hooks go in when the program does.
"""
import atexit
import os
import sys

__version__ = "0.1.0"

_installed = None  # (probe, patches) of this process


def install(settings, environ=None):
    """Puts the probe in for this process; its torch hooks follow torch's import. Returns the
    Probe (the one already installed, if any)."""
    global _installed
    if _installed is not None:
        return _installed[0]
    from .import_hook import PostImportHook
    from .patch_set import PatchSet
    from .probe import Probe
    from .torch_patches import instrument_torch

    probe = Probe(settings, environ)
    patches = PatchSet()

    def on_torch(torch):
        def hooks():
            try:
                instrument_torch(probe, patches, torch)
            except BaseException:
                patches.restore()  # all hooks or none
                raise
        probe.guard("install", hooks)

    PostImportHook("torch", on_torch).install()
    if settings.argparse_path:
        from .argparse_record import instrument_argparse

        PostImportHook("argparse", lambda argparse: probe.guard(
            "install", instrument_argparse, probe, patches, argparse)).install()
    atexit.register(probe.at_exit)
    os.register_at_fork(after_in_child=probe.failsafe.stand_down)
    _installed = (probe, patches)
    return probe


def install_from_env(environ=None):
    """install() with the settings of BIGMAC_PROBE_* (or nothing when the probe is off). A bad
    setting is reported on stderr and leaves the probe off: the program runs regardless."""
    from .probe_settings import SettingsError, read_settings

    try:
        settings = read_settings(environ)
    except SettingsError as err:
        sys.stderr.write(f"bigmac-probe: off: {err}\n")
        return None
    return install(settings, environ) if settings.enabled else None
