#!/usr/bin/env python3
"""Pipeline stages without code change (docs/pipelines.md): a torch.distributed.pipelining
program that logs nothing (tests/probe/programs/pipelining_stages.py) run under the real
torchrun with the probe, its `layout`, `mb`, `shape` and `loss` events checked against what the
program computed; then brought up by the tool through single, pp2, shapes and target, and each
planted pipeline mistake stopped at the gate and by the check that must catch it.

A hand-written pipeline (tests/probe/programs/pipeline_chain.py and pipeline_p2p.py: dist.send/
recv, class HandWritten) is brought up the same way, on torch 1.13 and 2.x alike.

torch.distributed.pipelining is PyTorch 2.x: on Debian's 1.13 the other cases skip themselves.

    python probe_pipeline_test.py [-v] [TestClass.test_name]
"""
import json
import os
import re
import sys
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import probe_run_test as pr  # noqa: E402 - the probe run tests' process helpers

ex, events, of = pr.ex, pr.events, pr.of
PROGRAM = str(HERE / "programs" / "pipelining_stages.py")
CHAIN = str(HERE / "programs" / "pipeline_chain.py")  # a hand-written pipeline: dist.send/recv
VOCAB, DIM, BLOCKS = 32, 16, 4  # the program's sizes
EMBED, BLOCK, HEAD = VOCAB * DIM, DIM * DIM + DIM, DIM * VOCAB + VOCAB


def has_pipelining():
    try:
        import torch.distributed.pipelining  # noqa: F401, PLC0415
    except ImportError:
        return False
    return True


NEEDS = unittest.skipUnless(has_pipelining(), "torch.distributed.pipelining is PyTorch 2.x: not in this torch")


def expected_order(schedule, stage, stages, m):
    """The passes torch's schedule runs on a stage: GPipe all forwards then all backwards; 1F1B
    with num_stages - stage forwards first (its warm-up), then a backward before each forward."""
    if schedule == "gpipe":
        return [("F", i) for i in range(m)] + [("B", i) for i in range(m)]
    warmup = min(m, stages - stage)
    out = [("F", i) for i in range(warmup)]
    f, b = warmup, 0
    while b < m:
        out.append(("B", b))
        b += 1
        if f < m:
            out.append(("F", f))
            f += 1
    return out


def printed_losses(text):
    """{step: (micro-batch losses, their mean)} from the program's own lines."""
    return {int(s): (json.loads(values), float(mean)) for s, values, mean in
            re.findall(r"^step (\d+) rank \d+ losses (\[.*\]) mean (\S+)$", text, re.M)}


@NEEDS
class Stages(pr.ProbeCase):
    """The probe's events of two ranks, each one stage, against what the program computed."""

    def run_program(self, name, *args, probe=True):
        env = pr.env_with(BIGMAC_PROBE_LOG=self.tmp / name / "p{rank}.jsonl") if probe else pr.env_with(pythonpath=())
        d = self.torchrun(name, PROGRAM, ["--steps", "3", "--out-dir", str(self.tmp), *args], env)
        return d, ({r: events(d / f"p{r}.jsonl") for r in (0, 1)} if probe else None)

    def check_schedule(self, name, schedule):
        d, logs = self.run_program(name, "--schedule", schedule)
        plain, _ = self.run_program(name + "-plain", "--schedule", schedule, probe=False)
        self.assertEqual(pr.rank_output(plain, 1), pr.rank_output(d, 1), "the probe changed the program's numbers")
        params = {0: EMBED + 2 * BLOCK, 1: 2 * BLOCK + HEAD}
        for r in (0, 1):
            (layout,) = of(logs[r], "layout")
            self.assertEqual((layout["stage"], layout["num_stages"], layout["first_layer"], layout["last_layer"]),
                             (r, 2, 2 * r, 2 * r + 1))
            self.assertEqual((layout["param_count"], layout["dp_rank"], layout["dp_size"], layout["schedule"],
                              layout["n_microbatches"]), (params[r], 0, 1, schedule, 4))
            self.assertLess(logs[r].index(layout), logs[r].index(of(logs[r], "mb")[0]), "the layout comes first")
            for step in range(3):
                passes = [(m["phase"], m["mb"]) for m in of(logs[r], "mb") if m["global_step"] == step]
                self.assertEqual(passes, expected_order(schedule, r, 2, 4), f"rank {r} step {step}")
            for m in of(logs[r], "mb"):
                self.assertLessEqual(m["start"], m["end"])
                self.assertEqual(m["stage"], r)
        shapes = {(s["global_step"], s["stage"], s["mb"], s["where"]): s
                  for r in (0, 1) for s in of(logs[r], "shape") if "stage" in s}
        for step in range(3):
            for mb in range(4):
                self.assertEqual(shapes[(step, 0, mb, "enter")]["shape"], [2, 6])
                sent, got = shapes[(step, 0, mb, "exit")], shapes[(step, 1, mb, "enter")]
                self.assertEqual((sent["name"], got["name"]), ("hidden_states", "hidden_states"))
                self.assertEqual((sent["shape"], sent["dtype"]), (got["shape"], got["dtype"]))
                self.assertEqual(sent["shape"], [2, 6, DIM])
                self.assertEqual(shapes[(step, 1, mb, "exit")]["shape"], [2, 6, VOCAB])
                self.assertEqual((shapes[(step, 1, mb, "labels")]["shape"], shapes[(step, 1, mb, "labels")]["dtype"]),
                                 ([2, 6], "int64"))
        self.assertFalse([s for s in of(logs[0], "shape") if s.get("where") == "labels"], "labels on the last stage only")
        printed = printed_losses(pr.rank_output(d, 1))
        self.assertEqual(of(logs[0], "loss"), [], "the first stage computes no loss")
        for step in range(3):
            values, mean = printed[step]
            losses = [e for e in of(logs[1], "loss") if e["global_step"] == step]
            self.assertEqual([(e["stage"], e["mb"]) for e in losses], [(1, mb) for mb in range(4)])
            for e, value in zip(losses, values):
                self.close(e["value"], value, rel=1e-7)
            s = of(logs[1], "step")[step]
            self.assertEqual(s["loss_count"], 4)
            # scale_grads: the step applies the gradient of the micro-batches' mean.
            self.close(s["loss"], mean, rel=1e-6)
            self.assertNotIn("loss", of(logs[0], "step")[step])

    def test_gpipe_stages_passes_boundaries_and_losses(self):
        self.check_schedule("gpipe", "gpipe")

    def test_1f1b_stages_passes_boundaries_and_losses(self):
        self.check_schedule("1f1b", "1f1b")

    def test_slices_of_the_whole_models_list_are_placed_in_it(self):
        """Each stage an nn.Sequential of its slice (names 0., 1., ... on every stage): placed
        by the whole model's list, alive when the stage was made."""
        _, logs = self.run_program("slice", "--split", "slice")
        layouts = [of(logs[r], "layout")[0] for r in (0, 1)]
        self.assertEqual([(l["first_layer"], l["last_layer"], l["num_layers"]) for l in layouts],
                         [(0, 2, BLOCKS + 2), (3, 5, BLOCKS + 2)])
        self.assertIn("placed by the model's container of 6 layers", layouts[1]["layer_source"])

    def test_a_traced_split_and_an_interleaved_schedule(self):
        _, logs = self.run_program("tracer", "--split", "tracer", "--schedule", "gpipe")
        self.assertEqual([(of(logs[r], "layout")[0]["first_layer"], of(logs[r], "layout")[0]["last_layer"])
                          for r in (0, 1)], [(0, 1), (2, 3)])
        _, logs = self.run_program("interleaved", "--schedule", "interleaved")
        for r in (0, 1):
            layouts = of(logs[r], "layout")
            self.assertEqual([(l["stage"], l["num_stages"], l["first_layer"], l["stages_per_rank"]) for l in layouts],
                             [(r, 4, r, 2), (r + 2, 4, r + 2, 2)])
            self.assertEqual({l["schedule"] for l in layouts}, {"ScheduleInterleaved1F1B"})
            for stage in (r, r + 2):
                passes = [(m["phase"], m["mb"]) for m in of(logs[r], "mb") if m["global_step"] == 0 and m["stage"] == stage]
                self.assertEqual(sorted(passes), sorted([(p, i) for p in "FB" for i in range(4)]))
        self.assertEqual(sorted(e["stage"] for e in of(logs[1], "loss") if e["global_step"] == 0), [3] * 4)


def bringup_config(d, *plant):
    """A configuration for the program as a user would write it: two processes, two stages."""
    words = [pr.PY, PROGRAM, "--steps", "{max_steps}", "--schedule", "{schedule}", "--micro-batches",
             "{micro_batches}", "--micro-batch-size", "{micro_batch_size}", "--seq-len", "{seq_length}",
             "--out-dir", "{attempt_dir}", *plant]
    text = f"""[launch]
nnodes = 1
nproc_per_node = 2
devices = "cpu"
backend = "gloo"
launcher = "builtin"

[parallel]
pp_size = 2
schedule = "1f1b"

[train]
micro_batch_size = 2
gradient_accumulation_steps = 4
seq_length = 6
max_steps = 5
seed = 5
lr = 0.5

[model]
num_layers = {BLOCKS}

[trainer]
kind = "command"
command = [{", ".join(json.dumps(w) for w in words)}]
log_format = "bigmac"
probe = true
"""
    path = d / "bringup.toml"
    path.write_text(text)
    return path


@NEEDS
class Gates(pr.ProbeCase):
    """The program brought up by the tool, its pipeline judged from the probe's events alone."""

    def run_all(self, name, *plant):
        d = self.dir(name)
        config = bringup_config(d, *plant)
        rc, out, err = ex.run([pr.tool_binary(), "run-all", "-c", str(config), "--run-dir", str(d / "run")], d,
                              pr.env_with(pythonpath=()))
        return rc, out + err, d

    def verdict(self, d, gate):
        (attempt,) = (d / "run").glob(f"0?-{gate}.*")
        return {c["name"]: c for c in json.loads((attempt / "verdict.json").read_text())["checks"]}

    def test_a_correct_pipeline_passes_pp2_shapes_and_target(self):
        rc, out, d = self.run_all("correct")
        self.assertEqual(rc, 0, out)
        self.assertRegex(out, r"dp: pending -> not applicable \(the target layout has no data-parallel replicas")
        for gate in ("pp2", "shapes", "target"):
            self.assertRegex(out, rf"\] {gate} +passed")
        checks = self.verdict(d, "pp2")
        for name in ("layer_coverage", "param_count", "schedule_order", "no_starved_stage", "loss_vs_baseline"):
            self.assertTrue(checks[name]["passed"], checks[name]["message"])
        self.assertIn("stage 0: 0..1, stage 1: 2..3", checks["layer_coverage"]["message"])
        checks = self.verdict(d, "shapes")
        for name in ("shape_chain", "fixed_seq_length", "labels_last_stage_only", "no_middle_stage_loss"):
            self.assertTrue(checks[name]["passed"], checks[name]["message"])
        self.assertTrue(self.verdict(d, "target")["single_checkpoint_writer"]["passed"])

    def test_adopted_as_a_user_would_then_brought_up_through_every_gate(self):
        """`adopt` learns the stages (one a process), their schedule, micro-batches and layers,
        and that --batch-size is the whole step's batch; `run-all` with the draft unchanged."""
        d = self.dir("adopted")
        env = pr.env_with(pythonpath=())
        program = [pr.PY, PROGRAM, "--steps", "3", "--schedule", "gpipe", "--micro-batches", "2",
                   "--batch-size", "4", "--seq-len", "6", "--out-dir", "out"]
        rc, out, err = ex.run([pr.tool_binary(), "adopt", "-o", str(d / "bringup.toml"), "--", *program], d, env)
        self.assertEqual(rc, 0, out + err)
        draft = (d / "bringup.toml").read_text()
        for line in (r"nproc_per_node = 2 +# every process is a pipeline stage", r"pp_size = 2 +#",
                     r"schedule = 'gpipe' +# the stages ran under gpipe", r"num_layers = 4 +# the probe read",
                     r"micro_batch_size = 2 +# measured", r"gradient_accumulation_steps = 2 +# measured",
                     r"pp2.micro_batches = 2 ", r"--batch-size 4 is the whole step's batch"):
            self.assertRegex(draft, line)
        rc, out, err = ex.run([pr.tool_binary(), "run-all", "-c", str(d / "bringup.toml"), "--run-dir",
                               str(d / "run")], d, env)
        self.assertEqual(rc, 0, out + err)
        self.assertRegex(out, r"4 gates passed, 1 not applicable \(dp\)")
        checks = self.verdict(d, "pp2")
        self.assertIn("gpipe order, 2 micro-batches each", checks["schedule_order"]["message"])

    def stopped(self, name, plant, gate, check, pattern):
        rc, out, d = self.run_all(name, "--plant", plant)
        self.assertEqual(rc, 1, out)
        self.assertRegex(out, rf"\] {gate} +FAILED")
        checks = self.verdict(d, gate)
        self.assertFalse(checks[check]["passed"], checks[check])
        self.assertRegex(checks[check]["message"], pattern)

    def test_a_layer_on_two_stages_stops_pp2(self):
        self.stopped("overlap", "overlap", "pp2", "layer_coverage", r"layer 1 is held by 2 stages")

    def test_a_split_out_of_range_stops_pp2(self):
        self.stopped("range", "out-of-range", "pp2", "layer_coverage", r"stage 1 owns no layer")

    def test_a_sequence_trimmed_at_the_cut_stops_pp2(self):
        self.stopped("trim", "trim", "pp2", "exit_status", r"rank 0")

    def test_every_rank_writing_checkpoints_stops_target(self):
        self.stopped("saves", "every-rank-saves", "target", "single_checkpoint_writer", r"2 ranks wrote checkpoints")


def chain_config(d, *plant):
    """The tool's configuration for tests/probe/programs/pipeline_chain.py: two processes, two
    stages; the program makes as many stages as it has processes."""
    words = [pr.PY, CHAIN, "--steps", "{max_steps}", "--micro-batches", "{micro_batches}", "--micro",
             "{micro_batch_size}", "--seed", "{seed}", "--lr", "{lr}", *plant]
    path = d / "bringup.toml"
    path.write_text(f"""[launch]
nnodes = 1
nproc_per_node = 2
devices = "cpu"
backend = "gloo"
launcher = "builtin"

[parallel]
pp_size = 2
schedule = "gpipe"

[train]
micro_batch_size = 2
gradient_accumulation_steps = 4
max_steps = 4
seed = 5
lr = 0.1

[model]
num_layers = 4

[trainer]
kind = "command"
command = [{", ".join(json.dumps(w) for w in words)}]
log_format = "bigmac"
probe = true
""")
    return path


def unobservable(d, gate):
    """{field: the checks it left unobservable} of a gate's verdict."""
    (attempt,) = (d / "run").glob(f"0?-{gate}.*")
    return {u["field"]: u["checks"] for u in json.loads((attempt / "verdict.json").read_text())["unobservable"]}


class HandWritten(pr.ProbeCase):
    """A hand-written pipeline (dist.send/recv, no torch.distributed.pipelining), which logs
    nothing: the probe writes each rank's place in the point-to-point chain as its `layout` and
    the losses it computed; the orchestrator counts the stages along the chain. What the
    transfers cannot say (the micro-batch passes; layers a parameter name does not number) is
    unobservable at the gates, never judged on a guess. Runs on torch 1.13 and 2.x."""

    def test_the_chain_gives_each_rank_its_neighbours_layers_and_losses(self):
        d = self.torchrun("chain", CHAIN, ["--steps", "3"], pr.env_with(BIGMAC_PROBE_LOG=self.tmp / "chain" / "p{rank}.jsonl"))
        logs = {r: events(d / f"p{r}.jsonl") for r in (0, 1)}
        (head,), (tail,) = of(logs[0], "layout"), of(logs[1], "layout")
        self.assertEqual((head["stage"], head["prev_rank"], head["next_rank"]), (0, -1, 1))
        self.assertEqual((tail["stage"], tail["prev_rank"], tail["next_rank"]), (-1, 0, -1), "counted by the tool")
        self.assertEqual((head["first_layer"], head["last_layer"], tail["first_layer"], tail["last_layer"]), (0, 1, 2, 3))
        self.assertEqual(head["param_count"], 8 * 16 + 16 + 2 * (16 * 16 + 16))
        self.assertIn("the micro-batch passes (mb)", tail["not_inferred"])
        self.assertEqual(of(logs[0], "loss"), [], "the first stage computes no loss")
        printed = {int(s): float(v) for s, v in re.findall(r"^step (\d+) loss (\S+)$", pr.rank_output(d, 1), re.M)}
        self.assertEqual(sorted(printed), [0, 1, 2])
        for step, value in printed.items():
            losses = [e for e in of(logs[1], "loss") if e["global_step"] == step]
            self.assertEqual([e["mb"] for e in losses], [0, 1, 2])
            self.close(sum(e["value"] for e in losses), value, rel=1e-6)
        # The orchestrator's reading: the stage and the stage count resolved along the chain.
        for r, summary in enumerate(pr.parser_summaries([d / "p0.jsonl", d / "p1.jsonl"])):
            self.assertEqual((summary["records"], summary["unparseable"], summary["unknown_events"]),
                             (len(logs[r]), 0, 0), summary)

    def test_layers_no_parameter_name_numbers_are_not_guessed(self):
        """tests/probe/programs/pipeline_p2p.py: rank 0 holds an nn.Sequential (`0.weight`, the
        head's own numbering), rank 1 a bare Linear (`weight`): no range for it."""
        d = self.torchrun("p2p", pr.PIPELINE, ["--steps", "2"],
                          pr.env_with(BIGMAC_PROBE_LOG=self.tmp / "p2p" / "p{rank}.jsonl"))
        (head,), (tail,) = (of(events(d / f"p{r}.jsonl"), "layout") for r in (0, 1))
        self.assertEqual((head["stage"], head["next_rank"], head["first_layer"], head["last_layer"]), (0, 1, 0, 0))
        self.assertEqual((tail["stage"], tail["prev_rank"], tail["first_layer"]), (-1, 0, -1))
        self.assertRegex(tail["layers_unknown"], r"`Linear` gives no layer index")
        self.assertIn("the layer range", tail["not_inferred"])

    def test_brought_up_through_every_gate_with_what_is_not_inferred_unobservable(self):
        d = self.dir("gates")
        rc, out, err = ex.run([pr.tool_binary(), "run-all", "-c", str(chain_config(d)), "--run-dir", str(d / "run")],
                              d, pr.env_with(pythonpath=()))
        self.assertEqual(rc, 0, out + err)
        for gate in ("single", "pp2", "shapes", "target"):
            self.assertRegex(out, rf"\] {gate} +passed")
        checks = Gates.verdict(self, d, "pp2")
        self.assertTrue(checks["layer_coverage"]["passed"], checks["layer_coverage"]["message"])
        self.assertIn("stage 0: 0..1, stage 1: 2..3", checks["layer_coverage"]["message"], "stage 1: counted")
        self.assertTrue(checks["loss_vs_baseline"]["passed"], checks["loss_vs_baseline"]["message"])
        self.assertLessEqual({"schedule_order", "no_starved_stage"}, set(unobservable(d, "pp2").get("mb", [])),
                             "the passes of a hand-written schedule are not inferred")
        checks = Gates.verdict(self, d, "shapes")
        # 4 steps × 4 micro-batches, each sent forward and its gradient back: 32 pairs.
        self.assertIn("32 stage boundaries", checks["shape_chain"]["message"])
        self.assertTrue(checks["no_middle_stage_loss"]["passed"], checks["no_middle_stage_loss"]["message"])
        shapes = unobservable(d, "shapes")
        self.assertIn("fixed_seq_length", shapes.get("seq_length", []), "an MLP: no sequence to hold")
        self.assertIn("labels_last_stage_only", shapes.get("shape", []), "labels are not transferred")

    def test_a_layer_on_two_stages_stops_pp2(self):
        d = self.dir("overlap")
        rc, out, err = ex.run([pr.tool_binary(), "run-all", "-c", str(chain_config(d, "--plant", "overlap")),
                               "--run-dir", str(d / "run")], d, pr.env_with(pythonpath=()))
        self.assertEqual(rc, 1, out + err)
        self.assertRegex(out, r"\] pp2 +FAILED")
        check = Gates.verdict(self, d, "pp2")["layer_coverage"]
        self.assertFalse(check["passed"], check)
        self.assertRegex(check["message"], r"layer 1 is held by 2 stages")


if __name__ == "__main__":
    unittest.main()
