#!/usr/bin/python3
"""In-process tests of bigmac-probe's parts (probe/bigmac_probe/): settings, the log file, the
failsafe, the gradient norm and the post-import hook, against Debian's python3-torch (CPU).

    /usr/bin/python3 probe_parts_test.py [-v] [TestClass.test_name]
"""
import contextlib
import hashlib
import io
import json
import math
import sys
import tempfile
import unittest
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "probe"))

import bigmac_probe  # noqa: E402
from bigmac_probe.argparse_record import describe, instrument_argparse  # noqa: E402
from bigmac_probe.digests import INPUT_DIGEST_LIMIT, SAMPLE_ROW_LIMIT, input_digest, is_digest_step, sample_hashes, sample_set  # noqa: E402
from bigmac_probe.step_tracker import StepTracker  # noqa: E402
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


    def test_input_digest_is_on_unless_switched_off(self):
        self.assertTrue(read_settings({"BIGMAC_PROBE_LOG": "p"}).input_digest)
        s = read_settings({"BIGMAC_PROBE_LOG": "p", "BIGMAC_PROBE_INPUT_DIGEST": "0"})
        self.assertEqual((s.input_digest, s.digest), (False, True), "each digest has its own switch")
        with self.assertRaisesRegex(SettingsError, "^BIGMAC_PROBE_INPUT_DIGEST='2': expected 1 or 0"):
            read_settings({"BIGMAC_PROBE_LOG": "p", "BIGMAC_PROBE_INPUT_DIGEST": "2"})


class Digests(unittest.TestCase):
    @staticmethod
    def sha(header, data):
        return hashlib.sha256(header.encode() + data).hexdigest()[:16]

    def test_input_digest_hashes_dtype_shape_and_at_most_the_first_mib(self):
        self.assertEqual(INPUT_DIGEST_LIMIT, 1 << 20)
        x = torch.arange(30, dtype=torch.int64).reshape(5, 6)
        self.assertEqual(input_digest(torch, x), (self.sha("int64[5, 6]", x.numpy().tobytes()), 240))
        big = torch.randn(700, 1000, generator=torch.Generator().manual_seed(0))  # 2.8 MB
        digest, hashed = input_digest(torch, big)
        self.assertEqual((digest, hashed), (self.sha("float32[700, 1000]", big.numpy().tobytes()[:1 << 20]), 1 << 20))
        changed = big.clone()
        changed[-1, -1] += 1  # past the first MiB: not seen
        self.assertEqual(input_digest(torch, changed)[0], digest)
        changed[0, 0] += 1
        self.assertNotEqual(input_digest(torch, changed)[0], digest)
        self.assertNotEqual(input_digest(torch, big.reshape(1000, 700))[0], digest, "the shape counts")
        self.assertNotEqual(input_digest(torch, x.double())[0], input_digest(torch, x)[0], "the dtype counts")
        self.assertEqual(input_digest(torch, torch.tensor(2.5)),
                         (self.sha("float32[]", torch.tensor(2.5).numpy().tobytes()), 4))
        self.assertEqual(input_digest(torch, torch.zeros(0, 3)), (self.sha("float32[0, 3]", b""), 0))

    def test_a_non_contiguous_input_is_read_in_order_without_copying_it_whole(self):
        torch.manual_seed(1)
        for t in (torch.randn(600, 1000).t(), torch.randint(0, 9, (8, 33))[:, :-1], torch.randn(40, 5, 3)[::2, 1:],
                  torch.randn(3000)[::3]):
            self.assertFalse(t.is_contiguous())
            self.assertEqual(input_digest(torch, t), input_digest(torch, t.contiguous()))
        # 10**12 elements, one stored: a whole copy would need 4 TB.
        huge = torch.ones(1).expand(10 ** 6, 10 ** 6)
        self.assertEqual(input_digest(torch, huge),
                         (self.sha("float32[1000000, 1000000]", torch.ones(1 << 18).numpy().tobytes()), 1 << 20))
        x = torch.ones(2, 3, requires_grad=True)
        self.assertEqual(input_digest(torch, x * 2), input_digest(torch, torch.full((2, 3), 2.0)), "grad or not")

    def test_a_sample_set_adds_up_whatever_the_split_and_the_order(self):
        rows = torch.arange(6 * 5, dtype=torch.int64).reshape(6, 5)
        whole = sample_set(torch, rows)
        self.assertEqual(whole[0], 6)
        halves = [sample_set(torch, rows[:2]), sample_set(torch, rows[2:])]
        self.assertEqual((halves[0][0] + halves[1][0], (halves[0][1] + halves[1][1]) % (1 << 64)), whole)
        self.assertEqual(sample_set(torch, rows.flip(0)), whole, "the order does not count")
        self.assertNotEqual(sample_set(torch, rows[:5])[1], whole[1])
        # Each row: dtype, one row's shape and its bytes, by hand.
        row = rows[3]
        want = int.from_bytes(hashlib.sha256(b"int64[5]" + row.numpy().tobytes()).digest()[:8], "big")
        self.assertEqual(sample_set(torch, rows[3:4]), (1, want))
        self.assertEqual(sample_hashes(torch, rows)[3], want)
        self.assertEqual(sample_hashes(torch, rows[3:4]), sample_hashes(torch, rows.clone()[3:4]),
                         "a sample read again hashes alike")
        # A long row is read at an even stride over its whole length, SAMPLE_ROW_LIMIT bytes in
        # all: a shared prefix longer than that still leaves two samples apart; an element
        # between the strided ones is not read.
        budget = SAMPLE_ROW_LIMIT // 4
        long_rows = torch.zeros(3, 2 * budget, dtype=torch.float32)
        long_rows[1, -2] = 1.0  # read: index 2 * budget - 2 is on the stride of 2
        long_rows[2, -1] = 1.0  # not read
        hashes = [sample_set(torch, long_rows[i:i + 1])[1] for i in range(3)]
        self.assertNotEqual(hashes[0], hashes[1], "a difference at the end of the row counts")
        self.assertEqual(hashes[0], hashes[2])

    def test_a_step_without_a_readable_micro_batch_has_no_sample_set(self):
        steps = StepTracker(torch, 0.0)
        steps.note_samples([1, 2, 3, 4])
        steps.note_samples([20, 0, 0, 0])
        self.assertEqual(steps.take_samples(), {"sample_count": 8, "sample_digest": "%016x" % 30,
                                                "sample_hashes": "".join("%016x" % h for h in [1, 2, 3, 4, 20, 0, 0, 0])})
        self.assertEqual(steps.take_samples(), {})
        steps.note_samples([1, 2, 3, 4])
        steps.note_samples(None)
        steps.note_samples([1, 2, 3, 4])
        self.assertEqual(steps.take_samples(), {}, "one unreadable micro-batch: no set")

    def test_sample_hashes_are_written_for_the_first_samples_only_a_step_whole(self):
        steps = StepTracker(torch, 0.0)
        limit = StepTracker.SAMPLE_HASH_LIMIT
        steps.note_samples(list(range(limit - 2)))
        self.assertEqual(len(steps.take_samples()["sample_hashes"]), 16 * (limit - 2))
        steps.note_samples([(1 << 64) - 1, 7, 9])  # 3 more than the 2 left: the step has none
        fields = steps.take_samples()
        self.assertEqual((fields["sample_count"], "sample_hashes" in fields), (3, False))
        self.assertEqual(fields["sample_digest"], "%016x" % 15, "the sum wraps at 2^64")
        steps.note_samples([5, 6])  # still 2 left: a later, smaller step gets them
        self.assertEqual(steps.take_samples()["sample_hashes"], "%016x%016x" % (5, 6))
        steps.note_samples([8])
        self.assertNotIn("sample_hashes", steps.take_samples())
        big = StepTracker(torch, 0.0)
        big.note_samples(list(range(limit + 10)))
        self.assertLessEqual(len(big._samples[2]), limit + 1, "memory bounded within a step too")
        self.assertNotIn("sample_hashes", big.take_samples())

    def test_params_are_digested_after_steps_0_1_2_and_the_powers_of_two(self):
        self.assertEqual([s for s in range(1100) if is_digest_step(s)],
                         [0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024])


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


class ArgparseRecord(unittest.TestCase):
    """The program's parser as adopt reads it (BIGMAC_PROBE_ARGPARSE): written once, at the
    first parse of sys.argv, with each action's words, type and default; the parse unchanged."""

    def parser(self):
        import argparse  # noqa: PLC0415
        p = argparse.ArgumentParser()
        p.add_argument("total_epochs", type=int)
        p.add_argument("--batch_size", "-b", default=32, type=int)
        p.add_argument("--lr", default=0.5, type=float)
        p.add_argument("--layers", nargs="+", type=int, default=[1])
        p.add_argument("--dry-run", action="store_true")
        return p

    def test_actions_carry_words_type_and_default(self):
        actions = {a["dest"]: a for a in describe(self.parser())["actions"]}
        self.assertEqual(actions["total_epochs"]["options"], [])
        self.assertEqual((actions["batch_size"]["nargs"], actions["batch_size"]["takes_value"],
                          actions["batch_size"]["type"], actions["batch_size"]["default"]),
                         (None, True, "int", 32))
        self.assertEqual(actions["lr"]["default"], 0.5)
        self.assertEqual((actions["layers"]["nargs"], actions["layers"]["default"]), ("+", None))
        self.assertEqual((actions["dry_run"]["takes_value"], actions["dry_run"]["store"]), (False, False))

    def test_the_first_parse_of_sys_argv_writes_it_once_and_parses_as_before(self):
        import argparse  # noqa: PLC0415
        from bigmac_probe.patch_set import PatchSet  # noqa: PLC0415
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp, "sub", "argparse.json")
            settings = read_settings({"BIGMAC_PROBE_LOG": str(Path(tmp, "p.jsonl")),
                                      "BIGMAC_PROBE_ARGPARSE": str(path)})
            from bigmac_probe.probe import Probe  # noqa: PLC0415
            probe = Probe(settings, {})
            patches = PatchSet()
            instrument_argparse(probe, patches, argparse)
            argv = sys.argv
            try:
                parsed = self.parser().parse_args(["7"])  # an explicit list: not the command line
                self.assertFalse(path.exists())
                sys.argv = ["train.py", "5", "-b", "8"]
                parsed = self.parser().parse_args()
                self.assertEqual((parsed.total_epochs, parsed.batch_size, parsed.lr), (5, 8, 0.5))
                record = json.loads(path.read_text())
                self.assertEqual(record["argv"], ["train.py", "5", "-b", "8"])
                sys.argv = ["train.py", "6"]
                self.parser().parse_args()
                self.assertEqual(json.loads(path.read_text())["argv"][1], "5", "written once")
            finally:
                sys.argv = argv
                patches.restore()


if __name__ == "__main__":
    unittest.main()
