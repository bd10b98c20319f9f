"""Stacks on request (docs/probe.md, "Where a stalled rank is"): when the orchestrator's watchdog
declares a stall it sends each live rank STACK_SIGNAL, and faulthandler, registered here, writes
every thread's Python stack to the rank's stacks file from inside the signal handler. That works
while the main thread is blocked in a collective, a receive or a sleep, with or without the GIL,
and needs no cooperation from the program. The `run` event says where the dump goes and how to
read it (the main thread's id, which directories are libraries rather than the program)."""
import faulthandler
import os
import signal
import site
import socket
import sys
import sysconfig
import threading

STACK_SIGNAL = signal.SIGUSR2


def library_dirs(torch=None):
    """Where code that is not the program lives: the standard library, every site-packages, the
    directory holding torch (Debian's dist-packages is on neither list), and the probe itself."""
    dirs = []
    paths = sysconfig.get_paths()
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        if paths.get(key):
            dirs.append(paths[key])
    try:
        dirs.extend(site.getsitepackages())
    except AttributeError:  # a virtualenv's old site.py has no getsitepackages
        pass
    if torch is not None and getattr(torch, "__file__", None):
        dirs.append(os.path.dirname(os.path.dirname(os.path.abspath(torch.__file__))))
    dirs.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    seen = []
    for d in dirs:
        d = os.path.realpath(d)
        if d not in seen:
            seen.append(d)
    return seen


class StackDump:
    """faulthandler on STACK_SIGNAL, writing to `<log path>.stacks`."""

    def __init__(self):
        self._file = None

    def arm(self, log_path, torch=None):
        """Registers the handler, once; returns the `run` fields that tell the orchestrator how
        to ask for and read the stacks, or why it cannot."""
        if self._file is not None:
            return {}
        if sys.platform == "win32":
            return {"stacks_unavailable": "no signals to ask for stacks on this platform"}
        current = signal.getsignal(STACK_SIGNAL)
        if current not in (signal.SIG_DFL, None):
            # The program handles this signal itself: taking it over would change the program.
            return {"stacks_unavailable": f"the program handles {STACK_SIGNAL.name} itself"}
        path = log_path + ".stacks"
        try:
            # Kept open for the life of the process (never unregistered: a request that arrives
            # while the program ends must not find the signal's default action, which kills).
            self._file = open(path, "a", encoding="utf-8")  # noqa: SIM115
            faulthandler.register(STACK_SIGNAL, file=self._file, all_threads=True, chain=False)
        except (OSError, ValueError, RuntimeError) as exc:
            return {"stacks_unavailable": f"{type(exc).__name__}: {exc}"}
        return {"stacks_signal": int(STACK_SIGNAL), "stacks_path": os.path.abspath(path),
                "main_thread": f"0x{threading.main_thread().ident:x}", "host": socket.gethostname(),
                "library_dirs": os.pathsep.join(library_dirs(torch))}
