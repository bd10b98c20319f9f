"""Runs the probe's callbacks so that nothing the probe does can reach the program: the first
exception inside one is reported once and switches the probe off for the rest of the process."""
import traceback


class InjectedFault(RuntimeError):
    """Raised inside the probe on purpose (BIGMAC_PROBE_FAULT), to test the failsafe for real."""


class Failsafe:
    def __init__(self, report, fault=None):
        """`report(where, exc, traceback_text)` is called once, on the first failure."""
        self.active = True
        # (where, "Type: message") of the failure that switched the probe off. Not the exception:
        # its traceback would keep every frame of the program's stack at that moment, with the
        # tensors in them, alive until the interpreter's teardown.
        self.failure = None
        self._report = report
        self._fault = fault

    def call(self, where, callback, *args):
        """`callback(*args)`, or None once the probe is off or when the callback fails."""
        if not self.active:
            return None
        try:
            if where == self._fault:
                raise InjectedFault(f"fault injected by BIGMAC_PROBE_FAULT={where}")
            return callback(*args)
        except Exception as exc:  # noqa: BLE001 - the point: nothing may escape into the program
            self.trip(where, exc)
            return None

    def trip(self, where, exc):
        if not self.active:
            return
        self.active = False
        self.failure = (where, f"{type(exc).__name__}: {exc}")
        try:
            self._report(where, exc, traceback.format_exc())
        except Exception:  # noqa: BLE001 - reporting is best effort; the probe is off either way
            pass

    def stand_down(self):
        """Off without a report (a forked child: its parent owns the log)."""
        self.active = False
