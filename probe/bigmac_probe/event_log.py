"""One rank's bigmac-log v1 file (docs/log-contract.md), opened on the first event."""
import json
import os
import time


def expand_path(template, rank, local_rank):
    """The log path for this rank: `{rank}`, `{local_rank}` and `{pid}` filled in."""
    return (template.replace("{rank}", str(rank)).replace("{local_rank}", str(local_rank))
            .replace("{pid}", str(os.getpid())))


class EventLog:
    """Appends one JSON object per line. Each line is a single write(2) to an O_APPEND
    descriptor, so a reader never sees half a line from this process and the watchdog sees
    every event as soon as it is written."""

    def __init__(self, template, clock=time.time):
        self.template = template
        self.clock = clock
        self.rank = None
        self.path = None
        self._fd = None

    @property
    def is_open(self):
        return self._fd is not None

    def open(self, rank, local_rank):
        self.rank = rank
        self.path = expand_path(self.template, rank, local_rank)
        folder = os.path.dirname(self.path)
        if folder:
            os.makedirs(folder, exist_ok=True)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644)

    def write(self, ev, fields):
        # json writes non-finite floats bare (NaN, Infinity), as the contract allows.
        line = json.dumps({"ev": ev, "rank": self.rank, "t": self.clock(), **fields},
                          separators=(",", ":")) + "\n"
        data = line.encode()
        while data:
            written = os.write(self._fd, data)
            data = data[written:]

    def write_line(self, ev, body):
        """write() for a line whose other fields are already JSON (`body` begins with a comma):
        the ledger's, written on every collective, skips json.dumps."""
        data = f'{{"ev":"{ev}","rank":{self.rank},"t":{self.clock()!r}{body}}}\n'.encode()
        while data:
            written = os.write(self._fd, data)
            data = data[written:]

    def close(self):
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
