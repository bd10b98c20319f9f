#!/usr/bin/python3
"""In-process tests of bigmac-probe's parts (probe/bigmac_probe/): settings, the log file, the
failsafe, the gradient norm and the post-import hook, against Debian's python3-torch (CPU).

    /usr/bin/python3 probe_parts_test.py [-v] [TestClass.test_name]
"""
import contextlib
import io
import math
import sys
import tempfile
import unittest
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "probe"))

import bigmac_probe  # noqa: E402
from bigmac_probe.event_log import EventLog, expand_path  # noqa: E402
from bigmac_probe.failsafe import Failsafe  # noqa: E402
from bigmac_probe.import_hook import PostImportHook  # noqa: E402
from bigmac_probe.probe_settings import SettingsError, read_settings  # noqa: E402
from bigmac_probe.tensor_stats import grad_sum_of_squares  # noqa: E402


class Settings(unittest.TestCase):
    def test_off_unless_a_log_path_is_given(self):
        self.assertFalse(read_settings({}).enabled)
        self.assertFalse(read_settings({"BIGMAC_PROBE_LOG": "p{rank}", "BIGMAC_PROBE": "0"}).enabled)
        s = read_settings({"BIGMAC_PROBE_LOG": " /x/p{rank}.jsonl ", "BIGMAC_PROBE_SHAPES": "off"})
        self.assertEqual((s.enabled, s.log_template, s.shapes, s.digest, s.fault),
                         (True, "/x/p{rank}.jsonl", False, True, None))

    def test_bad_values_name_the_variable(self):
        for env, text in (({"BIGMAC_PROBE": "1"}, "BIGMAC_PROBE_LOG is not set"),
                          ({"BIGMAC_PROBE_LOG": "p", "BIGMAC_PROBE_DIGEST": "maybe"},
                           "BIGMAC_PROBE_DIGEST='maybe': expected 1 or 0"),
                          ({"BIGMAC_PROBE_LOG": "p", "BIGMAC_PROBE_FAULT": "nowhere"},
                           "BIGMAC_PROBE_FAULT='nowhere': expected one of install")):
            with self.assertRaises(SettingsError) as caught:
                read_settings(env)
            self.assertIn(text, str(caught.exception))

    def test_step_bound_is_an_integer_of_at_least_one(self):
        self.assertIsNone(read_settings({"BIGMAC_PROBE_LOG": "p"}).max_steps)
        self.assertEqual(read_settings({"BIGMAC_PROBE_LOG": "p", "BIGMAC_PROBE_MAX_STEPS": " 20 "}).max_steps, 20)
        for bad in ("0", "-3", "2.5", "ten"):
            env = {"BIGMAC_PROBE_LOG": "p", "BIGMAC_PROBE_MAX_STEPS": bad}
            with self.assertRaises(SettingsError) as caught:
                read_settings(env)
            self.assertEqual(str(caught.exception),
                             f"BIGMAC_PROBE_MAX_STEPS={bad!r}: expected an integer >= 1 (the steps to run)")
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                self.assertIsNone(bigmac_probe.install_from_env(env), "the probe stays off")
            self.assertEqual(err.getvalue(), f"bigmac-probe: off: {caught.exception}\n")


class EventLogFile(unittest.TestCase):
    def test_rank_expanded_folders_made_lines_appended_nonfinite_bare(self):
        with tempfile.TemporaryDirectory() as tmp:
            self.assertEqual(expand_path(f"{tmp}/r{{rank}}-l{{local_rank}}", 3, 1), f"{tmp}/r3-l1")
            for value in (1.5, math.nan):
                log = EventLog(f"{tmp}/a/b/rank{{rank}}.jsonl", clock=lambda: 7.0)
                log.open(2, 0)
                log.write("step", {"global_step": 0, "loss": value})
                log.close()
            lines = Path(f"{tmp}/a/b/rank2.jsonl").read_text().splitlines()
            self.assertEqual(lines, ['{"ev":"step","rank":2,"t":7.0,"global_step":0,"loss":1.5}',
                                     '{"ev":"step","rank":2,"t":7.0,"global_step":0,"loss":NaN}'])


class FailsafeBehaviour(unittest.TestCase):
    def test_first_failure_reported_once_then_everything_passes(self):
        reports = []
        fs = Failsafe(lambda where, exc, trace: reports.append((where, str(exc), "ZeroDivisionError" in trace)))
        self.assertEqual(fs.call("a", lambda x: x + 1, 1), 2)
        self.assertIsNone(fs.call("b", lambda: 1 / 0))
        self.assertIsNone(fs.call("c", lambda: 1 / 0))
        self.assertIsNone(fs.call("a", lambda x: x + 1, 1), "off for good")
        self.assertEqual(reports, [("b", "division by zero", True)])

    def test_injected_fault_raises_inside_the_named_hook_only(self):
        reports = []
        fs = Failsafe(lambda where, exc, trace: reports.append(where), fault="clip")
        self.assertEqual(fs.call("backward", lambda: 5), 5)
        self.assertIsNone(fs.call("clip", lambda: 5))
        self.assertEqual(reports, ["clip"])


class GradNorm(unittest.TestCase):
    def test_half_precision_gradients_neither_overflow_nor_round_away(self):
        params = [torch.nn.Parameter(torch.zeros(100000, dtype=dtype)) for dtype in
                  (torch.float16, torch.bfloat16)]
        for p in params:
            p.grad = torch.full_like(p, 300.0)  # 300**2 is past float16's largest value
        params.append(torch.nn.Parameter(torch.zeros(3)))  # no gradient: not counted
        self.assertEqual(grad_sum_of_squares(torch, params), (2 * 100000 * 300.0 ** 2, 2))

    def test_float32_gradients_as_precise_as_clip_grad_norm(self):
        torch.manual_seed(0)
        params = [torch.nn.Parameter(torch.zeros(n)) for n in (7, 1000, 50000)]
        for p in params:
            p.grad = torch.randn_like(p)
        exact = sum(float(p.grad.double().pow(2).sum()) for p in params)
        sq, count = grad_sum_of_squares(torch, params)
        self.assertEqual(count, 3)
        self.assertLess(abs(sq - exact), 1e-6 * exact)
        clip = float(torch.nn.utils.clip_grad_norm_(params, 1e9))
        self.assertLess(abs(math.sqrt(sq) - clip), 1e-6 * clip)


class ImportHook(unittest.TestCase):
    def test_callback_after_the_import_with_the_real_loader_kept(self):
        with tempfile.TemporaryDirectory() as tmp:
            Path(tmp, "bigmac_probe_fake_mod.py").write_text("VALUE = 41\n")
            sys.path.insert(0, tmp)
            seen = []
            hook = PostImportHook("bigmac_probe_fake_mod", lambda m: seen.append(m.VALUE + 1))
            try:
                hook.install()
                self.assertIn(hook, sys.meta_path)
                import bigmac_probe_fake_mod as mod  # noqa: PLC0415
                self.assertEqual(seen, [42])
                self.assertNotIn(hook, sys.meta_path)
                self.assertEqual(type(mod.__loader__).__name__, "SourceFileLoader")
                self.assertIs(mod.__spec__.loader, mod.__loader__)
                PostImportHook("bigmac_probe_fake_mod", lambda m: seen.append(0)).install()
                self.assertEqual(seen, [42, 0], "an imported module calls back at once")
            finally:
                hook.remove()
                sys.path.remove(tmp)
                sys.modules.pop("bigmac_probe_fake_mod", None)


if __name__ == "__main__":
    unittest.main()
