"""What the in-process probe tests share (probe_hooks_test.py, probe_lifecycle_test.py): a fresh
probe put into this interpreter's real torch for each case and taken out after it, and a
GradScaler stand-in for CPU."""
import json
import sys
import tempfile
import unittest
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "probe"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent / "programs"))  # compiled_loops

from bigmac_probe.patch_set import PatchSet  # noqa: E402
from bigmac_probe.probe import Probe  # noqa: E402
from bigmac_probe.probe_settings import ProbeSettings  # noqa: E402
from bigmac_probe.torch_patches import instrument_torch  # noqa: E402



class FakeScaler:
    """torch.cuda.amp.GradScaler's contract on CPU: scale() multiplies by the scale; step()
    unscales the gradients and calls optimizer.step() only when all are finite; update()
    multiplies the scale by backoff_factor after a skipped step."""

    def __init__(self, scale, backoff_factor=0.5):
        self._scale = scale
        self._backoff = backoff_factor
        self._found_inf = False

    def scale(self, outputs):
        return outputs * self._scale

    def get_scale(self):
        return self._scale

    def step(self, optimizer):
        self._found_inf = False
        for group in optimizer.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    p.grad.div_(self._scale)
                    self._found_inf |= not bool(torch.isfinite(p.grad).all())
        return None if self._found_inf else optimizer.step()

    def update(self):
        if self._found_inf:
            self._scale *= self._backoff


class InProcess(unittest.TestCase):
    """The probe's hooks in this process's torch, on a fresh probe per case."""

    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="bigmac-probe-")
        self.tmp = Path(self._tmp.name)
        self.start(ProbeSettings(log_template=str(self.tmp / "rank{rank}.jsonl")))

    def start(self, settings):
        self.probe = Probe(settings, environ={})
        self.patches = PatchSet()
        instrument_torch(self.probe, self.patches, torch)

    def restart(self, **settings):
        """A fresh probe with these settings, and a fresh log, in place of the one running."""
        self.patches.restore()
        self.probe.log.close()
        (self.tmp / "rank0.jsonl").unlink(missing_ok=True)
        self.start(ProbeSettings(log_template=str(self.tmp / "rank{rank}.jsonl"), **settings))

    def tearDown(self):
        self.patches.restore()
        self.probe.log.close()
        self._tmp.cleanup()

    def events(self):
        path = self.tmp / "rank0.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []

    def model(self):
        torch.manual_seed(5)
        return torch.nn.Sequential(torch.nn.Linear(6, 12), torch.nn.Tanh(), torch.nn.Linear(12, 3))
