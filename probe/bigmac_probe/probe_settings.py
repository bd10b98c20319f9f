"""The probe's settings, read once from the environment (docs/probe.md lists them)."""
import os
from dataclasses import dataclass

# The hooks a test may make fail on purpose (BIGMAC_PROBE_FAULT): each is the `where` of one
# guarded probe callback, so a fault there is a real exception inside the probe.
HOOK_NAMES = ("install", "run", "pg_ready", "forward", "backward", "clip", "scale", "scaler_step",
              "optimizer_step", "p2p", "save", "load", "seed", "param", "done")

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


class SettingsError(ValueError):
    """A probe variable holds a value the probe does not understand."""


@dataclass(frozen=True)
class ProbeSettings:
    """What BIGMAC_PROBE_* asked for. `log_template` is None when the probe stays off."""

    log_template: str = None
    shapes: bool = True  # shape events for point-to-point transfers
    digest: bool = True  # SHA-256 of the parameters at the first step and after steps 0, 1, 2, 4, 8, ...
    input_digest: bool = True  # SHA-256 of each step's first training input (its first 1 MiB)
    fault: str = None  # test only: the hook that raises inside the probe
    max_steps: int = None  # end the program before the counted optimizer's step number max_steps
    spawn_in_place: bool = False  # run a torch.multiprocessing.spawn worker in this process
    argparse_path: str = None  # where the first command-line parse describes its parser (adopt)
    ddp_buckets: bool = False  # DDP's gradient all-reduces in the ledger, through a comm hook

    @property
    def enabled(self):
        return self.log_template is not None


def _flag(environ, name, default):
    text = environ.get(name, "").strip().lower()
    if not text:
        return default
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise SettingsError(f"{name}={environ[name]!r}: expected 1 or 0 (also true/false, yes/no, on/off)")


def _step_bound(environ, name):
    text = environ.get(name, "").strip()
    if not text:
        return None
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise SettingsError(f"{name}={environ[name]!r}: expected an integer >= 1 (the steps to run)")
    return value


def read_settings(environ=None):
    """The settings in `environ` (default os.environ); raises SettingsError on a bad value."""
    environ = os.environ if environ is None else environ
    log = environ.get("BIGMAC_PROBE_LOG", "").strip()
    switch = _flag(environ, "BIGMAC_PROBE", None)
    if switch is False:
        return ProbeSettings()
    if not log:
        if switch:
            raise SettingsError("BIGMAC_PROBE=1 but BIGMAC_PROBE_LOG is not set: "
                                "give the per-rank log path, e.g. BIGMAC_PROBE_LOG=probe-rank{rank}.jsonl")
        return ProbeSettings()
    fault = environ.get("BIGMAC_PROBE_FAULT", "").strip() or None
    if fault is not None and fault not in HOOK_NAMES:
        raise SettingsError(f"BIGMAC_PROBE_FAULT={fault!r}: expected one of {', '.join(HOOK_NAMES)}")
    return ProbeSettings(log_template=log, shapes=_flag(environ, "BIGMAC_PROBE_SHAPES", True),
                         digest=_flag(environ, "BIGMAC_PROBE_DIGEST", True),
                         input_digest=_flag(environ, "BIGMAC_PROBE_INPUT_DIGEST", True), fault=fault,
                         max_steps=_step_bound(environ, "BIGMAC_PROBE_MAX_STEPS"),
                         spawn_in_place=_flag(environ, "BIGMAC_PROBE_SPAWN_IN_PLACE", False),
                         argparse_path=environ.get("BIGMAC_PROBE_ARGPARSE", "").strip() or None,
                         ddp_buckets=_flag(environ, "BIGMAC_PROBE_DDP_BUCKETS", False))
