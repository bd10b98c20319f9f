"""How this folder's programs end a rank: the interpreter's own shutdown is skipped.

PyTorch 2.x's Gloo keeps worker threads past destroy_process_group() (DDP and FSDP keep the
group; even without them the last work's release can still be running). When the interpreter
finalizes, such a thread releasing a tensor Python has seen is stopped inside a destructor and
the rank aborts ("terminate called without an active exception", exit -6): in CI about one plain
run in a few hundred under load, after the barrier, the deletes and gc.collect() the programs
already do. Ending with os._exit after the atexit handlers (the probe's writes its last events
there) and a flush gives the same output and exit status with no finalization to race.
"""

import atexit
import os
import sys


def end_rank(status=0):
    """Runs the atexit handlers, flushes stdout and stderr, and ends the process with `status`."""
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)
