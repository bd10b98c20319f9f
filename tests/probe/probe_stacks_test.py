#!/usr/bin/python3
"""Where every rank is when a gate stalls (docs/probe.md, "Where a stalled rank is"): a real hang
in an unchanged program, brought up by the tool with the probe. The watchdog asks each live rank
for its stacks before teardown; the verdict names the rank that is elsewhere first (the stall
list and the diagnosis alike), with each rank's place in the program.

    python3 probe_stacks_test.py [-v] [TestClass.test_name]
"""
import json
import re
import sys
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import probe_run_test as pr  # noqa: E402 - the probe tests' helpers

ex = pr.ex
PROGRAM = str(HERE / "programs" / "stall_ways.py")


def config(d, launcher, hang):
    words = [pr.PY, PROGRAM, "--steps", "{max_steps}", "--hang", hang, "--at", "3"]
    text = f"""[launch]
nnodes = 1
nproc_per_node = 2
devices = "cpu"
backend = "gloo"
launcher = "{launcher}"

[train]
micro_batch_size = 4
gradient_accumulation_steps = 2
max_steps = 6
seed = 0
lr = 0.1

[trainer]
kind = "command"
command = [{", ".join(json.dumps(w) for w in words)}]
log_format = "bigmac"
probe = true
"""
    path = d / "bringup.toml"
    path.write_text(text)
    return path


class Stacks(pr.ProbeCase):
    def bring_up(self, name, launcher, hang):
        d = self.dir(name)
        rc, out, err = ex.run([pr.tool_binary(), "run-all", "-c", str(config(d, launcher, hang)), "--until", "dp",
                               "--run-dir", str(d / "run")], d, pr.env_with(pythonpath=()))
        self.assertEqual(rc, 1, out + err)
        self.assertRegex(out, r"\] dp +FAILED", out + err)
        (attempt,) = (d / "run").glob("0?-dp.*")
        return out + err, attempt

    def line(self, text, head):
        found = [line for line in text.splitlines() if line.startswith(head)]
        self.assertTrue(found, f"no {head!r} line in:\n{text}")
        return found[0]

    def test_a_rank_hung_in_data_loading_is_named_first_with_its_line_and_the_waiting_rank_in_all_reduce(self):
        text, attempt = self.bring_up("data", "torchrun", "data")
        # The headline, the card and the stall list all start with rank 1, the one the others wait for.
        self.assertRegex(self.line(text, "[2/5] dp"), r"first: rank 1: stalled \(rank 1 stalled after step 2")
        symptom = self.line(text, "Symptom:")
        self.assertRegex(symptom, r"rank 1 made no progress for [\d.]+ s: it never reached all_reduce #6 of world "
                                  r"\(float32\[1,4\], stall_ways\.py:\d+\), which rank 0 called; its last: "
                                  r"all_reduce #5 of world")
        self.assertRegex(self.line(text, "Cause:"), r"its main thread is in wait, called at stall_ways\.py:\d+ in "
                                                    r"load_batch")
        self.assertRegex(text, r"rank 0 launcher: no progress .*main thread in all_reduce, called at "
                               r"stall_ways\.py:\d+ in train")
        self.assertTrue(list(attempt.rglob("*.stacks")), "the whole dumps stay in the attempt")

    def test_a_rank_alone_in_a_barrier_and_the_rank_in_all_reduce_are_each_placed(self):
        text, _ = self.bring_up("barrier", "builtin", "barrier")
        # Two ranks, two calls at one index: no majority, each is named with the other's call.
        self.assertRegex(self.line(text, "Symptom:"), r"rank \d made no progress for [\d.]+ s: it called "
                                                      r"(all_reduce|barrier) #6 of world .*\(desync\)")
        self.assertRegex(text, r"rank 1 launcher: no progress .*called barrier #6 of world \(stall_ways\.py:\d+\) "
                               r"where rank 0 called all_reduce #6 of world .*main thread in barrier, called at "
                               r"stall_ways\.py:\d+ in train")
        self.assertRegex(text, r"rank 0 launcher: no progress .*main thread in all_reduce, called at "
                               r"stall_ways\.py:\d+ in train")


class Ledger(pr.ProbeCase):
    def test_each_rank_numbers_its_collectives_in_program_order_with_shape_and_line(self):
        d = self.torchrun("ledger", PROGRAM, ["--steps", "3"], pr.env_with(BIGMAC_PROBE_LOG=self.tmp / "p{rank}.jsonl"))
        line = next(n for n, text in enumerate(Path(PROGRAM).read_text().splitlines(), 1)
                    if "dist.all_reduce(p.grad)" in text)
        for rank in (0, 1):
            colls = pr.of(pr.events(self.tmp / f"p{rank}.jsonl"), "coll")
            self.assertEqual([c["seq"] for c in colls], list(range(6)))
            self.assertEqual({(c["group"], c["op"], c["site"], c["fn"], c["dtype"]) for c in colls},
                             {("world", "all_reduce", f"stall_ways.py:{line}", "train", "float32")})
            self.assertEqual([c["shape"] for c in colls], [[1, 4], [1]] * 3)
            self.assertEqual([c["global_step"] for c in colls], [0, 0, 1, 1, 2, 2])
        # The orchestrator reads every one of them as a record, none as a context line.
        (summary,) = pr.parser_summaries([self.tmp / "p1.jsonl"])
        self.assertEqual((summary["unknown_events"], summary["context_lines"], summary["unparseable"]), (0, 0, 0),
                         summary)
        self.assertEqual(summary["records"], summary["lines"], summary)
        self.assertTrue(d.exists())


if __name__ == "__main__":
    unittest.main()
