#!/usr/bin/python3
"""Where every rank is when a gate stalls (docs/probe.md, "Where a stalled rank is"): a real hang
in an unchanged program, brought up by the tool with the probe. The watchdog asks each live rank
for its stacks before teardown; the verdict names the rank that is elsewhere first (the stall
list and the diagnosis alike), with each rank's place in the program.

    python3 probe_stacks_test.py [-v] [TestClass.test_name]
"""
import json
import re
import signal
import subprocess
import sys
import time
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import probe_run_test as pr  # noqa: E402 - the probe tests' helpers

ex = pr.ex
PROGRAM = str(HERE / "programs" / "stall_ways.py")


def config(d, launcher, hang, launch_extra="", program_extra=()):
    words = [pr.PY, PROGRAM, "--steps", "{max_steps}", "--hang", hang, "--at", "3", *program_extra]
    text = f"""[launch]
nnodes = 1
nproc_per_node = 2
devices = "cpu"
backend = "gloo"
launcher = "{launcher}"
{launch_extra}
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
    def bring_up(self, name, launcher, hang, program_extra=(), **env):
        d = self.dir(name)
        path = config(d, launcher, hang, program_extra=program_extra)
        rc, out, err = ex.run([pr.tool_binary(), "run-all", "-c", str(path), "--until", "dp",
                               "--run-dir", str(d / "run")], d, pr.env_with(pythonpath=(), **env))
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
        self.assertRegex(symptom, r"rank 1 made no progress for [\d.]+ s: it never reached all_reduce #9 of world "
                                  r"\(float32\[1,4\], stall_ways\.py:\d+\), which rank 0 called; its last: "
                                  r"broadcast #8 of world")
        self.assertRegex(self.line(text, "Cause:"), r"its main thread is in wait, called at stall_ways\.py:\d+ in "
                                                    r"load_batch")
        self.assertRegex(text, r"rank 0 launcher: no progress .*main thread in all_reduce, called at "
                               r"stall_ways\.py:\d+ in train")
        self.assertTrue(list(attempt.rglob("*.stacks")), "the whole dumps stay in the attempt")

    def test_under_ddp_the_rank_hung_in_data_loading_is_named_with_the_bucket_all_reduce_it_never_reached(self):
        text, _ = self.bring_up("ddp", "torchrun", "data", ["--ddp"], BIGMAC_PROBE_DDP_BUCKETS=1)
        self.assertRegex(self.line(text, "[2/5] dp"), r"first: rank 1: stalled")
        # DDP's all-reduce is issued from C++ in backward: the probe's communication hook logs it,
        # at the program's line that called backward. Per step: the bucket, then the broadcast.
        self.assertRegex(self.line(text, "Symptom:"),
                         r"rank 1 made no progress for [\d.]+ s: it never reached all_reduce #6 of world "
                         r"\(float32\[5\], DDP bucket 0, stall_ways\.py:\d+\), which rank 0 called; its last: "
                         r"broadcast #5 of world")
        self.assertRegex(self.line(text, "Cause:"), r"its main thread is in wait, called at stall_ways\.py:\d+ in "
                                                    r"load_batch")

    def test_a_rank_the_others_timed_out_waiting_for_is_named_from_the_ledgers_not_their_timeouts(self):
        # Gloo's own timeout (3 s) ends rank 0's wait in all_reduce long before the tool's
        # watchdog would (60 s here): the run ends on rank 0's error, and the ledgers say whom it
        # waited for and where.
        d = self.dir("timeout")
        path = config(d, "torchrun", "data", "stall_min_s = 60\nstall_timeout_s = 120",
                      ["--pg-timeout", "3"])
        rc, out, err = ex.run([pr.tool_binary(), "run-all", "-c", str(path), "--until", "dp",
                               "--run-dir", str(d / "run")], d, pr.env_with(pythonpath=()))
        self.assertEqual(rc, 1, out + err)
        text = out + err
        self.assertRegex(self.line(text, "Symptom:"),
                         r"rank 1 never reached all_reduce #9 of world \(float32\[1,4\], stall_ways\.py:\d+\), "
                         r"which rank 0 called; its last: broadcast #8 of world")
        (attempt,) = (d / "run").glob("0?-dp.*")
        rc, out, err = ex.run([pr.tool_binary(), "diagnose", str(attempt)], attempt, pr.env_with(pythonpath=()))
        self.assertEqual(rc, 0, out + err)
        self.assertRegex(out, r"1\. \[rank_stall\] rank 1 never reached all_reduce #9 of world")

    def test_a_rank_alone_in_a_barrier_and_the_rank_in_all_reduce_are_each_placed(self):
        text, _ = self.bring_up("barrier", "builtin", "barrier")
        # Two ranks, two calls at one index: no majority, each is named with the other's call.
        self.assertRegex(self.line(text, "Symptom:"), r"rank \d made no progress for [\d.]+ s: it called "
                                                      r"(all_reduce|barrier) #9 of world .*\(desync\)")
        self.assertRegex(text, r"rank 1 launcher: no progress .*called barrier #9 of world \(stall_ways\.py:\d+\) "
                               r"where rank 0 called all_reduce #9 of world .*main thread in barrier, called at "
                               r"stall_ways\.py:\d+ in train")
        self.assertRegex(text, r"rank 0 launcher: no progress .*main thread in all_reduce, called at "
                               r"stall_ways\.py:\d+ in train")


    def test_a_rank_calling_one_collective_more_is_named_from_the_ledgers_when_gloo_aborts(self):
        text, attempt = self.bring_up("extra", "torchrun", "extra")
        # After the fact too: `diagnose` on the attempt's folder reads the same ledgers.
        rc, out, err = ex.run([pr.tool_binary(), "diagnose", str(attempt)], attempt, pr.env_with(pythonpath=()))
        self.assertEqual(rc, 0, out + err)
        self.assertRegex(out, r"1\. \[collective_mismatch\] the ranks' collectives part at step 3, all_reduce #9 of "
                              r"world: rank 0 called all_reduce \(float32\[1,4\]")
        # Gloo's "op.preamble.length <= op.nbytes" names no call; the ledgers do, with each line.
        self.assertRegex(self.line(text, "Symptom:"),
                         r"the ranks' collectives part at step 3, all_reduce #9 of world: rank 0 called "
                         r"all_reduce \(float32\[1,4\], stall_ways\.py:\d+\); rank 1 called all_reduce "
                         r"\(float32\[145\], stall_ways\.py:\d+\)")

    def test_a_rank_reducing_another_shape_is_named_with_both_calls(self):
        text, _ = self.bring_up("shape", "torchrun", "shape")
        self.assertRegex(self.line(text, "Symptom:"),
                         r"rank \d made no progress for [\d.]+ s: it called all_reduce #9 of world "
                         r"\(float32\[(2|1,4)\], stall_ways\.py:\d+\) where rank \d called all_reduce #9 of "
                         r"world \(float32\[(1,4|2)\], stall_ways\.py:\d+\).*\(desync\)")

    def test_ranks_calling_collectives_in_another_order_are_each_placed(self):
        text, _ = self.bring_up("order", "torchrun", "order")
        self.assertRegex(text, r"rank 1 launcher: no progress .*called broadcast #9 of world "
                               r"\(float32\[1\], stall_ways\.py:\d+\) where rank 0 called all_reduce #9 of world")
        self.assertRegex(self.line(text, "Symptom:"), r"it called (broadcast|all_reduce) #9 of world .*\(desync\)")

    def test_at_a_pipeline_cut_the_rank_that_never_sent_is_named_not_the_one_in_recv(self):
        text, _ = self.bring_up("p2p", "torchrun", "p2p")
        self.assertRegex(self.line(text, "[2/5] dp"), r"first: rank 0: stalled")
        self.assertRegex(self.line(text, "Symptom:"),
                         r"rank 0 made no progress for [\d.]+ s: it never reached recv #3 of 0->1 "
                         r"\(float32, stall_ways\.py:\d+\), which rank 1 called; its last: send #2 of 0->1")
        self.assertRegex(self.line(text, "Cause:"), r"its main thread is in wait, called at stall_ways\.py:\d+ in "
                                                    r"load_batch")
        self.assertRegex(text, r"rank 1 launcher: no progress .*main thread in recv, called at stall_ways\.py:\d+")


    def test_ctrl_c_says_where_each_rank_was(self):
        # A hang the watchdog would wait 10 minutes for: the user stops it once rank 0 is in
        # all_reduce #9, the collective rank 1 (asleep in load_batch) never reaches.
        d = self.dir("ctrl_c")
        path = config(d, "torchrun", "data", launch_extra="stall_min_s = 600\nstall_timeout_s = 600\n")
        tool = subprocess.Popen([pr.tool_binary(), "run-all", "-c", str(path), "--until", "dp", "--run-dir",
                                 str(d / "run")], cwd=d, env=pr.env_with(pythonpath=()),
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            log = d / "run" / "02-dp.1" / "probe-rank0.jsonl"
            deadline = time.monotonic() + 300
            while not (log.exists() and '"seq":9,' in log.read_text()):
                self.assertIsNone(tool.poll(), "the run ended before rank 0 reached all_reduce #9")
                self.assertLess(time.monotonic(), deadline, "rank 0 never reached all_reduce #9")
                time.sleep(0.05)  # polling a file for a condition, not waiting for time to pass
            tool.send_signal(signal.SIGINT)
            out, _ = tool.communicate(timeout=120)
        finally:
            if tool.poll() is None:
                tool.kill()
                tool.wait()
        self.assertEqual(tool.returncode, 130, out)
        self.assertRegex(out, r"interrupted: rank 0: main thread in all_reduce, called at stall_ways\.py:\d+ in "
                              r"train; last collective all_reduce #9 of world \(float32\[1,4\]")
        self.assertRegex(out, r"interrupted: rank 1: main thread .*stall_ways\.py:\d+")
        self.assertTrue(list((d / "run").rglob("*.stacks")), "the whole dumps stay in the attempt")
        # ... and where each rank was is on record in the attempt, not only on the terminal.
        places = json.loads((d / "run" / "02-dp.1" / "result.json").read_text())["interrupted_at"]
        self.assertEqual(len(places), 2, places)
        self.assertRegex(places[0], r"^rank 0: main thread in all_reduce, called at stall_ways\.py:\d+")


class Ledger(pr.ProbeCase):
    def test_each_rank_numbers_its_collectives_in_program_order_with_shape_and_line(self):
        d = self.torchrun("ledger", PROGRAM, ["--steps", "3"], pr.env_with(BIGMAC_PROBE_LOG=self.tmp / "p{rank}.jsonl"))
        lines = Path(PROGRAM).read_text().splitlines()
        reduce_line = next(n for n, text in enumerate(lines, 1) if "dist.all_reduce(grad)" in text)
        # The flag every rank broadcasts after its gradients: the last broadcast of the loop.
        flag_line = max(n for n, text in enumerate(lines, 1) if "dist.broadcast(stop, 0)" in text)
        step_calls = [("world", "all_reduce", f"stall_ways.py:{reduce_line}", "train", "float32")] * 2 + [
            ("world", "broadcast", f"stall_ways.py:{flag_line}", "train", "float32")]
        # The barrier every rank passes before tearing its group down, after the loop.
        teardown_line = max(n for n, text in enumerate(lines, 1) if "dist.barrier()" in text)
        for rank in (0, 1):
            colls = pr.of(pr.events(self.tmp / f"p{rank}.jsonl"), "coll")
            self.assertEqual([c["seq"] for c in colls], list(range(10)))
            teardown = colls.pop()
            self.assertEqual((teardown["group"], teardown["op"], teardown["site"]),
                             ("world", "barrier", f"stall_ways.py:{teardown_line}"))
            self.assertEqual([(c["group"], c["op"], c["site"], c["fn"], c["dtype"]) for c in colls], step_calls * 3)
            self.assertEqual([c["shape"] for c in colls], [[1, 4], [1], [1]] * 3)
            self.assertEqual([c["global_step"] for c in colls], [0, 0, 0, 1, 1, 1, 2, 2, 2])

        # The orchestrator reads every one of them as a record, none as a context line.
        (summary,) = pr.parser_summaries([self.tmp / "p1.jsonl"])
        self.assertEqual((summary["unknown_events"], summary["context_lines"], summary["unparseable"]), (0, 0, 0),
                         summary)
        self.assertEqual(summary["records"], summary["lines"], summary)
        self.assertTrue(d.exists())

    def test_a_send_and_its_receive_share_an_index_on_their_channel(self):
        self.torchrun("p2p", PROGRAM, ["--steps", "3", "--hang", "p2p", "--at", "99"],
                      pr.env_with(BIGMAC_PROBE_LOG=self.tmp / "p{rank}.jsonl"))
        sends = [c for c in pr.of(pr.events(self.tmp / "p0.jsonl"), "coll") if c["group"] == "0->1"]
        recvs = [c for c in pr.of(pr.events(self.tmp / "p1.jsonl"), "coll") if c["group"] == "0->1"]
        self.assertEqual([(c["op"], c["seq"], c["shape"], c["dtype"]) for c in sends],
                         [("send", n, [], "float32") for n in range(3)])
        self.assertEqual([(c["op"], c["seq"], c["shape"], c["dtype"]) for c in recvs],
                         [("recv", n, [], "float32") for n in range(3)])
        self.assertTrue(all(c["site"].startswith("stall_ways.py:") for c in sends + recvs))


if __name__ == "__main__":
    unittest.main()
