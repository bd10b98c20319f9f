#!/usr/bin/python3
"""End-to-end tests of bigmac-probe: unchanged PyTorch programs (tests/probe/programs/) run as
real processes, alone and under the real /usr/bin/torchrun (Gloo on CPU), with probe/ first on
PYTHONPATH. The probe's events are checked against what the programs themselves computed and
printed, and the programs' output with the probe against their output without it.

    /usr/bin/python3 probe_run_test.py [-v] [TestClass.test_name]
"""
import json
import math
import os
import re
import subprocess
import sys
import time
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "tests" / "examples"))
import example_trainer_test as ex  # noqa: E402 - process helpers shared with the example tests

PY = ex.PY
PROBE_DIR = REPO / "probe"
DDP = str(HERE / "programs" / "ddp_trainer.py")
PIPELINE = str(HERE / "programs" / "pipeline_p2p.py")
ENDLESS = str(HERE / "programs" / "endless_ddp.py")
SAMPLER = str(HERE / "programs" / "sampler_ddp.py")
FSDP = str(HERE / "programs" / "fsdp_trainer.py")
DDP_WAYS = str(HERE / "programs" / "ddp_ways.py")
SWITCHED_OFF = re.compile(r"^bigmac-probe: switched off after an internal error in (\w+): (\w+): ", re.M)


def env_with(pythonpath=(PROBE_DIR,), **variables):
    env = ex.child_env()
    if pythonpath:
        env["PYTHONPATH"] = os.pathsep.join(str(p) for p in pythonpath)
    env.update({k: str(v) for k, v in variables.items()})
    return env


def tool_binary():
    binary = Path(os.environ.get("BIGMAC_BIN_DIR", REPO / "build" / "bin")) / "bigmac-bringup"
    if not binary.exists():
        raise AssertionError(f"{binary}: build it first (ctest sets BIGMAC_BIN_DIR)")
    return str(binary)


def parser_summaries(paths):
    """`bigmac-bringup parse --json` of the files: the orchestrator's own reading of them."""
    done = subprocess.run([tool_binary(), "parse", "--json", *map(str, paths)], capture_output=True, text=True)
    if done.returncode != 0:
        raise AssertionError(f"parse exited {done.returncode}: {done.stderr}")
    return json.loads(done.stdout)["files"]


events, of = ex.events, ex.of


def run_spawner(argv, out_dir, env):
    """ex.run for a torch.multiprocessing.spawn program. Its resource tracker outlives the
    parent by a moment (the same without the probe), so the process group gets a grace period
    to empty before a process counts as left behind."""
    proc = ex.start(argv, out_dir, env)
    try:
        rc = proc.wait(timeout=ex.DEADLINE_S)
    except subprocess.TimeoutExpired:
        ex.stop_group(proc)
        raise AssertionError(f"{argv[:4]} ran past {ex.DEADLINE_S} s")
    end = time.monotonic() + 30
    while ex.group_alive(proc.pid) and time.monotonic() < end:
        time.sleep(0.1)
    if ex.group_alive(proc.pid):
        ex.stop_group(proc)
        raise AssertionError(f"{argv[:4]} left processes behind")
    return rc, (out_dir / "stdout.txt").read_text(), (out_dir / "stderr.txt").read_text()


def rank_output(out_dir, rank, stream="stdout"):
    """What rank `rank` wrote, from the per-rank files torchrun keeps under its --log_dir."""
    (path,) = (out_dir / "torchrun").glob(f"*/attempt_0/{rank}/{stream}.log")
    return path.read_text()


def ddp_prints(text):
    """{step: values} from the trainer's own lines."""
    pattern = re.compile(r"^rank \d+ step (\d+) loss (\S+) mean_loss (\S+) lr (\S+) grad_norm (\S+) "
                         r"clipped (\S+)$", re.M)
    return {int(m[0]): dict(zip(("loss", "mean_loss", "lr", "preclip", "clipped"), map(float, m[1:])))
            for m in pattern.findall(text)}


class ProbeCase(ex.TrainerCase):
    """A temporary folder per case (self.tmp, self.dir(name)), as the example tests have."""

    def torchrun(self, name, program, args, env, expect_rc=0, nproc=2):
        d = self.dir(name)
        rc, out, err = ex.run(ex.torchrun(nproc, d, args, program=program), d, env)
        self.assertEqual(rc, expect_rc, out + err)
        return d

    def close(self, a, b, rel=1e-12):
        self.assertLessEqual(abs(a - b), rel * max(abs(a), abs(b)), f"{a} vs {b}")


class DataParallel(ProbeCase):
    def test_ddp_events_match_what_the_trainer_computed_and_change_nothing(self):
        args = ["--steps", "6", "--accum", "2"]
        plain = self.torchrun("plain", DDP, args, env_with(pythonpath=()))
        d = self.torchrun("probe", DDP, args + ["--save", str(self.tmp / "ck.pt")],
                          env_with(BIGMAC_PROBE_LOG=self.tmp / "probe" / "p{rank}.jsonl"))
        self.assertEqual(sorted(p.name for p in (d).glob("p*.jsonl")), ["p0.jsonl", "p1.jsonl"],
                         "one file per rank, none from torchrun's agent")
        logs = {r: events(d / f"p{r}.jsonl") for r in (0, 1)}
        printed = {r: ddp_prints(rank_output(d, r)) for r in (0, 1)}
        for r in (0, 1):
            self.assertEqual(rank_output(plain, r), rank_output(d, r), "the probe changed the program's numbers")
            evs = logs[r]
            self.assertEqual([e["ev"] for e in evs[:2]], ["run", "pg_ready"])
            self.assertEqual((evs[0]["world_size"], evs[0]["local_rank"], evs[0]["backend"]), (2, r, "gloo"))
            self.assertEqual(len(of(evs, "run")), 1)
            self.assertEqual((of(evs, "pg_ready")[0]["world_size"], of(evs, "pg_ready")[0]["backend"]), (2, "gloo"))
            (batch,) = of(evs, "batch")
            self.assertEqual((batch["input_shape"], batch["input_dtype"], batch["module"]),
                             ([4, 16], "float32", "DistributedDataParallel"))
            (model,) = of(evs, "model")
            self.assertIn(f"rank {r} params {model['param_count']}\n", rank_output(d, r))
            self.assertEqual(model["seed"], 1234)
            steps = of(evs, "step")
            self.assertEqual([s["global_step"] for s in steps], list(range(6)))
            for s in steps:
                want = printed[r][s["global_step"]]
                self.assertEqual((s["lr"], s["grad_norm_preclip"], s["loss_count"]),
                                 (want["lr"], want["preclip"], 2))
                self.close(s["loss"], want["loss"])
                # Per-tensor norms in float32 on PyTorch 1.13 (docs/probe.md).
                self.close(s["grad_norm"], want["clipped"], rel=1e-6)
                self.close(s["grad_norm_sq"], want["clipped"] ** 2, rel=2e-6)
            self.assertEqual([h["global_step"] for h in of(evs, "heartbeat")], list(range(6)))
            self.assertEqual(evs[-1]["ev"], "done")
            self.assertEqual(evs[-1]["steps"], 6)
        clipped = [s["grad_norm"] < s["grad_norm_preclip"] for s in of(logs[0], "step")]
        self.assertTrue(any(clipped) and not all(clipped), f"clipping must vary by step: {clipped}")
        for step in range(6):
            s0, s1 = of(logs[0], "step")[step], of(logs[1], "step")[step]
            self.assertEqual(s0["grad_norm"], s1["grad_norm"], "DDP: the same averaged gradients")
            self.close((s0["loss"] + s1["loss"]) / 2, printed[0][step]["mean_loss"])
        self.assertEqual(of(logs[0], "model")[0]["param_digest"], of(logs[1], "model")[0]["param_digest"])
        self.assertEqual([(c["step"], c["path"]) for c in of(logs[0], "ckpt")], [(5, str(self.tmp / "ck.pt"))])
        self.assertEqual(of(logs[1], "ckpt"), [])


class Digests(ProbeCase):
    """The invariants data parallelism is judged by (docs/probe.md, "Digests"): replicas in sync
    (equal `param_digest` after the same steps) and every sample once (different `input_digest`
    on every rank at every step), on a DDP program that reads through a DistributedSampler."""

    STEPS, DIGEST_STEPS = 5, [0, 1, 2, 4]
    ARGS = ["--steps", str(STEPS), "--accum", "2"]

    def digests(self, name, extra=()):
        """{rank: (the program's own prints per step, the probe's step events)}."""
        d = self.torchrun(name, SAMPLER, self.ARGS + list(extra),
                          env_with(BIGMAC_PROBE_LOG=self.tmp / name / "p{rank}.jsonl"))
        pattern = re.compile(r"^rank \d+ step (\d+) input (\w+) loss \S+ params (\w+)$", re.M)
        out = {}
        for r in (0, 1):
            printed = {int(s): (i, p) for s, i, p in pattern.findall(rank_output(d, r))}
            steps = of(events(d / f"p{r}.jsonl"), "step")
            self.assertEqual([s["global_step"] for s in steps], list(range(self.STEPS)))
            self.assertEqual([s["global_step"] for s in steps if "param_digest" in s], self.DIGEST_STEPS)
            for s in steps:
                want_input, want_params = printed[s["global_step"]]
                self.assertEqual((s["input_digest"], s["input_shape"], s["input_digest_bytes"]),
                                 (want_input, [4, 16], 4 * 16 * 4), "the step's first micro-batch")
                if "param_digest" in s:
                    self.assertEqual((s["param_digest"], s["params_after_step"]), (want_params, True))
                # Every micro-batch of the step, 2 of 4 samples each: the step's sample set.
                self.assertEqual(s["sample_count"], 8, "the samples of both micro-batches")
                self.assertRegex(s["sample_digest"], r"^[0-9a-f]{16}$")
                hashes = sample_hashes_of(s)
                self.assertEqual(len(hashes), 8, "each sample's own hash")
                self.assertEqual("%016x" % (sum(hashes) % (1 << 64)), s["sample_digest"])
            out[r] = (printed, steps)
        return d, out

    def test_a_distributed_sampler_gives_each_rank_its_own_inputs_and_the_same_params(self):
        plain = self.torchrun("plain", SAMPLER, self.ARGS, env_with(pythonpath=()))
        d, out = self.digests("sampler")
        for r in (0, 1):
            self.assertEqual(rank_output(plain, r), rank_output(d, r), "the probe changed the program's numbers")
        (_, steps0), (_, steps1) = out[0], out[1]
        for s0, s1 in zip(steps0, steps1):
            self.assertNotEqual(s0["input_digest"], s1["input_digest"], f"step {s0['global_step']}: one sample twice")
            self.assertEqual(s0.get("param_digest"), s1.get("param_digest"), "replicas in sync")
        self.assertEqual(len({s["param_digest"] for s in steps0 if "param_digest" in s}), len(self.DIGEST_STEPS),
                         "the parameters change every step")
        # The sampler deals distinct samples: the two ranks' sets differ at every step, and no
        # sample is read twice, by the other rank or at another step (the epoch's 80).
        for s0, s1 in zip(steps0, steps1):
            self.assertNotEqual(s0["sample_digest"], s1["sample_digest"])
        read = [h for s in steps0 + steps1 for h in sample_hashes_of(s)]
        self.assertEqual(len(set(read)), len(read), "every sample once")
        self.assertFalse([s for s in steps0 + steps1 if "buffer_digest" in s], "no buffers, no digest")

    def test_ranks_reading_the_same_samples_have_equal_input_digests(self):
        _, out = self.digests("same", ["--same-samples"])
        (_, steps0), (_, steps1) = out[0], out[1]
        self.assertEqual([sample_hashes_of(s) for s in steps0], [sample_hashes_of(s) for s in steps1])
        self.assertEqual([s["input_digest"] for s in steps0], [s["input_digest"] for s in steps1])
        self.assertEqual([s["sample_digest"] for s in steps0], [s["sample_digest"] for s in steps1])
        self.assertEqual(len({s["input_digest"] for s in steps0}), self.STEPS, "a new batch every step")
        self.assertEqual([s.get("param_digest") for s in steps0], [s.get("param_digest") for s in steps1])


    def test_buffers_agree_where_ddp_broadcasts_them_and_drift_where_it_does_not(self):
        """BatchNorm's running statistics, digested as each digest step's first forward reads
        them: equal on both ranks with DDP's broadcast_buffers, apart from step 1 without it,
        while the parameters agree in both (docs/probe.md, "Digests")."""
        _, out = self.digests("broadcast", ["--batchnorm"])
        (_, steps0), (_, steps1) = out[0], out[1]
        self.assertEqual([s["global_step"] for s in steps0 if "buffer_digest" in s], self.DIGEST_STEPS)
        self.assertEqual([s["buffer_digest"] for s in steps0 if "buffer_digest" in s],
                         [s["buffer_digest"] for s in steps1 if "buffer_digest" in s])
        self.assertEqual(len({s["buffer_digest"] for s in steps0 if "buffer_digest" in s}),
                         len(self.DIGEST_STEPS), "the statistics change every step")
        _, out = self.digests("own", ["--batchnorm", "--no-broadcast-buffers"])
        (_, steps0), (_, steps1) = out[0], out[1]
        apart = [s0["global_step"] for s0, s1 in zip(steps0, steps1)
                 if "buffer_digest" in s0 and s0["buffer_digest"] != s1["buffer_digest"]]
        self.assertEqual(apart, self.DIGEST_STEPS[1:], "equal at the start, each rank's own after")
        self.assertEqual([s.get("param_digest") for s in steps0], [s.get("param_digest") for s in steps1])


class BuffersUnderTheTool(ProbeCase):
    """The tool's verdict on replicas keeping BatchNorm statistics of their own: a program that
    logs nothing, adopted and brought up to dp as a user would; dp passes with a warning."""

    def test_replicas_with_their_own_batchnorm_statistics_pass_dp_with_a_warning(self):
        d = self.dir("bn")
        env = env_with(pythonpath=())
        program = [PY, SAMPLER, "--steps", "5", "--accum", "2", "--batchnorm", "--no-broadcast-buffers", "--quiet"]
        rc, out, err = ex.run([tool_binary(), "adopt", "-o", str(d / "bringup.toml"), "--", *program], d, env)
        self.assertEqual(rc, 0, out + err)
        rc, out, err = ex.run([tool_binary(), "run-all", "-c", str(d / "bringup.toml"), "--run-dir",
                               str(d / "run"), "--until", "dp"], d, env)
        self.assertEqual(rc, 0, out + err)
        self.assertRegex(out, r"\[2/5\] dp +passed .*, 1 warning\n  warning: buffers_in_sync: at step 1 "
                              r"rank 0's forward read buffers [0-9a-f]{16} and rank 1's [0-9a-f]{16}, while "
                              r"their parameters agree")
        (attempt,) = (d / "run").glob("02-dp.*")
        checks = {c["name"]: c for c in json.loads((attempt / "verdict.json").read_text())["checks"]}
        self.assertTrue(checks["buffers_in_sync"]["passed"])
        self.assertIn("SyncBatchNorm", checks["buffers_in_sync"]["warning"])
        self.assertTrue(checks["replicas_in_sync"]["passed"], checks["replicas_in_sync"]["message"])
        self.assertNotIn("warning", checks["replicas_in_sync"])


def sample_hashes_of(step):
    """A step event's `sample_hashes` as numbers: 16 hex digits a sample."""
    text = step["sample_hashes"]
    return [int(text[i:i + 16], 16) for i in range(0, len(text), 16)]


def torch_version(python=PY):
    """(major, minor) of the torch the programs run on (the interpreter under test's)."""
    from importlib.metadata import version  # noqa: PLC0415

    if Path(python).resolve() == Path(sys.executable).resolve():
        return tuple(int(v) for v in version("torch").split(".")[:2])
    done = subprocess.run([python, "-c", "import importlib.metadata as m; print(m.version('torch'))"],
                          capture_output=True, text=True, check=True)
    return tuple(int(v) for v in done.stdout.split(".")[:2])


FSDP2_TORCH = (2, 6)  # torch.distributed.fsdp.fully_shard, FSDP1 on the CPU with device_id


@unittest.skipUnless(torch_version() >= FSDP2_TORCH,
                     "fully_shard and FSDP1 on the CPU are PyTorch 2.6+'s (1.13's FSDP needs CUDA)")
class Sharded(ProbeCase):
    """A model held sharded (programs/fsdp_trainer.py: FSDP2's fully_shard, FSDP1 with flat and
    with original parameters) is reported as the whole model on every rank, as under DDP: the
    same parameter count, digests and gradient norms as the same program under DDP and as the
    program's own figures, with exactly the collectives docs/probe.md names ("Sharded
    parameters") and no other."""

    STEPS, DIGEST_STEPS = 5, (0, 1, 2, 4)
    LINE = re.compile(r"^rank \d+ step (\d+) loss (\S+) norm (\S+) collectives (\d+)$", re.M)
    END = re.compile(r"^rank \d+ digest (\w+) params (\d+) tensors (\d+) collectives (\d+)$", re.M)

    def hold(self, hold, probe=True, case=""):
        """{rank: (initial digest, {step: (loss, norm, collectives)}, end, probe events)}."""
        name = f"{case}{hold}-{'probe' if probe else 'plain'}"
        env = env_with(BIGMAC_PROBE_LOG=self.tmp / name / "p{rank}.jsonl") if probe else env_with(pythonpath=())
        d = self.torchrun(name, FSDP, ["--hold", hold, "--steps", str(self.STEPS)], env)
        out = {}
        for r in (0, 1):
            text = rank_output(d, r)
            (initial,) = re.findall(r"^rank \d+ initial (\w+)$", text, re.M)
            steps = {int(m[0]): (float(m[1]), float(m[2]), int(m[3])) for m in self.LINE.findall(text)}
            (end,) = self.END.findall(text)
            evs = events(d / f"p{r}.jsonl") if probe else []
            out[r] = (initial, steps, end, evs)
        return out

    def check(self, hold, gathers):
        """`hold` against DDP and against itself without the probe. `gathers`: the collectives
        one full-parameter digest takes (FSDP2: one per parameter tensor; FSDP1: one per unit)."""
        ddp, sharded, plain = self.hold("ddp", case=f"{hold}-"), self.hold(hold), self.hold(hold, probe=False)
        for r in (0, 1):
            initial, printed, end, evs = sharded[r]
            (model,) = of(evs, "model")
            self.assertEqual((model["param_count"], model["param_tensors"]), (int(end[1]), int(end[2])),
                             "the whole model's, from the global shapes")
            self.assertEqual(model["param_digest"], initial, "the full parameters before step 0")
            steps = of(evs, "step")
            self.assertEqual([s["global_step"] for s in steps], list(range(self.STEPS)))
            self.assertEqual([s["global_step"] for s in steps if "param_digest" in s], list(self.DIGEST_STEPS))
            self.assertEqual(steps[-1]["param_digest"], end[0], "the full parameters after the last step")
            for s in steps:
                loss, norm, collectives = printed[s["global_step"]]
                self.assertEqual(s["loss"], loss)
                self.close(s["grad_norm"], norm, rel=1e-6)  # clip at 10: nothing clipped
                self.assertEqual(s["grad_norm_preclip"], norm, "the norm the program's clip returned")
                # One all-reduce of the squares every step; the full parameters gathered at a
                # digest step, and once more before step 0 (`model`).
                expected = 1 + gathers * ((s["global_step"] in self.DIGEST_STEPS) + (s["global_step"] == 0))
                self.assertEqual(collectives, expected, f"the probe's collectives at step {s['global_step']}")
            # The same figures as the same program under DDP, to float64 rounding.
            mine, reference = ([e for e in run if e["ev"] in ("model", "step")] for run in (evs, ddp[r][3]))
            self.assertEqual(len(mine), len(reference))
            for a, b in zip(mine, reference):
                for key in ("param_count", "param_tensors", "param_digest", "loss"):
                    self.assertEqual(a.get(key), b.get(key), (hold, key, a))
                if "grad_norm" in a:
                    self.close(a["grad_norm"], b["grad_norm"], rel=1e-12)
            # Without the probe: none, in optimizer.step() or anywhere else in the run.
            self.assertEqual([c for _, _, c in plain[r][1].values()], [0] * self.STEPS)
            added = sum(c for _, _, c in printed.values())
            self.assertEqual(int(end[3]) - int(plain[r][2][3]), added, "no collective outside the step")
            self.assertEqual(plain[r][0], initial, "the probe changed nothing")
            self.assertEqual(plain[r][2][0], end[0], "the probe changed nothing")
        self.assertEqual(ddp[0][2][0], sharded[0][2][0], "DDP and the sharded run train alike")

    def test_fsdp2_reports_the_whole_model_on_every_rank_as_ddp_does(self):
        self.check("fsdp2", gathers=4)

    def test_fsdp1_flat_and_original_parameters_report_the_whole_model_as_ddp_does(self):
        self.check("fsdp1", gathers=2)
        self.check("fsdp1-orig", gathers=2)


class GradientAveraging(ProbeCase):
    """The ways a program averages its gradients (programs/ddp_ways.py): DDP's static graph, a
    communication hook that compresses to float16, and by hand with reduce_scatter_tensor,
    all_gather_into_tensor and a functional collective. Each rank's steps, losses, norms and
    digests are the program's own, the replicas' digests agree, the probe adds no collective,
    and the program prints the same with the probe as without it."""

    STEPS = 5
    LINE = re.compile(r"^rank \d+ step (\d+) loss (\S+) mean \S+ norm (\S+) collectives (\d+)$", re.M)

    def way(self, way, nproc=2):
        plain = self.torchrun(f"{way}-plain", DDP_WAYS, ["--way", way], env_with(pythonpath=()), nproc=nproc)
        d = self.torchrun(way, DDP_WAYS, ["--way", way],
                          env_with(BIGMAC_PROBE_LOG=self.tmp / way / "p{rank}.jsonl", BIGMAC_PROBE_DDP_BUCKETS=1),
                          nproc=nproc)
        digests, ledgers = {}, {}
        for r in range(nproc):
            text = rank_output(d, r)
            self.assertEqual(rank_output(plain, r), text, f"{way}: the probe changed the program's output")
            printed = {int(m[0]): (float(m[1]), float(m[2]), int(m[3])) for m in self.LINE.findall(text)}
            (initial,) = re.findall(r"^rank \d+ initial (\w+)$", text, re.M)
            (final,) = re.findall(r"^rank \d+ digest (\w+)$", text, re.M)
            evs = events(d / f"p{r}.jsonl")
            (model,) = of(evs, "model")
            self.assertEqual((model["param_count"], model["param_digest"]), (16 * 32 + 32 + 32 * 4 + 4, initial))
            steps = of(evs, "step")
            self.assertEqual([s["global_step"] for s in steps], list(range(self.STEPS)), way)
            for s in steps:
                loss, norm, collectives = printed[s["global_step"]]
                self.assertEqual((s["loss"], s["loss_count"]), (loss, 2), way)
                self.close(s["grad_norm"], norm, rel=1e-6)  # 1.13: float32 norms per tensor
                self.assertEqual(s["sample_count"], 8, "both micro-batches")
                self.assertEqual(collectives, 0, f"{way}: the probe made a collective in the step")
            self.assertEqual(steps[-1]["param_digest"], final, way)
            digests[r] = [s.get("param_digest") for s in steps]
            ledgers[r] = [(c["group"], c["seq"], c["op"], c.get("shape"), c.get("dtype"), c.get("by"), c["site"])
                          for c in of(evs, "coll")]
        for r in range(1, nproc):
            self.assertEqual(digests[0], digests[r], f"{way}: the replicas in sync")
            self.assertEqual(ledgers[0], ledgers[r], f"{way}: every rank's ledger the same")
        self.assertEqual(sum(d is not None for d in digests[0]), 4, "steps 0, 1, 2 and 4")
        return ledgers[0]

    def bucket_entries(self, ledger):
        """DDP's gradient all-reduces (issued from C++, logged by the probe's communication hook),
        each at the program's line that called backward."""
        buckets = [c for c in ledger if c[5] is not None]
        for group, _, op, shape, dtype, by, site in buckets:
            self.assertEqual((group, op, shape, dtype, by), ("world", "all_reduce", [16 * 32 + 32 + 32 * 4 + 4],
                                                             "float32", "DDP bucket 0"))
            self.assertRegex(site, r"^ddp_ways\.py:\d+$")
        self.assertEqual([c[1] for c in ledger], list(range(len(ledger))), "one group, numbered in order")
        return buckets

    def test_plain_ddp_buckets_are_in_the_ledger_and_three_replicas_average_to_the_same_bit(self):
        # 3 ranks: DDP's own average multiplies by 1/3, which is not exact; the probe's hook in
        # its place must do the same to the bit (the program prints its digests and norms).
        ledger = self.way("plain", nproc=3)
        # The first micro-batch is under no_sync: one bucket a step, then the mean loss.
        self.assertEqual(len(self.bucket_entries(ledger)), self.STEPS)
        self.assertEqual([c[2:5] for c in ledger if c[5] is None],
                         [("all_reduce", [], "float64")] * self.STEPS + [("barrier", None, None)])

    def test_a_static_graph_and_a_float16_compression_hook_leave_steps_and_digests_right(self):
        self.assertEqual(len(self.bucket_entries(self.way("static"))), 2 * self.STEPS, "both micro-batches")
        # The program's own hook stays: its all-reduce (in float16) is logged as a call of torch's.
        hooked = self.way("fp16_hook")
        self.assertEqual(self.bucket_entries(hooked), [])
        self.assertEqual([c[4] for c in hooked if c[2] == "all_reduce"], ["float16", "float64"] * self.STEPS)

    @unittest.skipUnless(torch_version() >= (2, 0), "functional collectives, and Gloo's reduce_scatter_tensor "
                         "and all_gather_into_tensor, are PyTorch 2.x's")
    def test_gradients_averaged_with_tensor_and_functional_collectives_leave_steps_and_digests_right(self):
        self.way("collectives")


class Pipeline(ProbeCase):
    ARGS = ["--steps", "4", "--micro-batches", "3"]

    def test_p2p_shapes_stage_losses_and_norms(self):
        d = self.torchrun("pp", PIPELINE, self.ARGS, env_with(BIGMAC_PROBE_LOG=self.tmp / "pp" / "p{rank}.jsonl"))
        logs = {r: events(d / f"p{r}.jsonl") for r in (0, 1)}
        shapes = {r: {(e["global_step"], e["where"], e["mb"]): e for e in of(logs[r], "shape")} for r in (0, 1)}
        self.assertEqual(len(of(logs[0], "shape")), 4 * 3 * 2)
        for step in range(4):
            for mb in range(3):
                for sender, receiver in ((0, 1), (1, 0)):
                    sent = shapes[sender][(step, "send", mb)]
                    got = shapes[receiver][(step, "recv", mb)]
                    self.assertEqual((sent["peer"], got["peer"]), (receiver, sender))
                    self.assertEqual((sent["shape"], sent["dtype"]), (got["shape"], got["dtype"]))
                    self.assertEqual(sent["shape"], [2, 16])
                forward = ("send", "recv") if step % 2 == 0 else ("batch_isend", "batch_irecv")
                self.assertEqual((shapes[0][(step, "send", mb)]["op"], shapes[1][(step, "recv", mb)]["op"]), forward)
                self.assertEqual((shapes[1][(step, "send", mb)]["op"], shapes[0][(step, "recv", mb)]["op"]),
                                 ("isend", "irecv"))
        lines = {r: re.findall(r"^stage \d step (\d+) grad_sq (\S+) global_grad_norm (\S+)(?: loss (\S+))?$",
                               rank_output(d, r), re.M) for r in (0, 1)}
        for step in range(4):
            s0, s1 = of(logs[0], "step")[step], of(logs[1], "step")[step]
            (_, sq0, norm, _), (_, sq1, _, loss) = lines[0][step], lines[1][step]
            self.close(s0["grad_norm_sq"], float(sq0), rel=2e-6)
            self.close(s1["grad_norm_sq"], float(sq1), rel=2e-6)
            self.close(math.sqrt(s0["grad_norm_sq"] + s1["grad_norm_sq"]), float(norm), rel=1e-6)
            self.assertEqual((s0["loss_count"], "loss" in s0), (0, False), "stage 0 computes no loss")
            self.assertEqual(s1["loss_count"], 3)
            self.close(s1["loss"], float(loss))
        for r, summary in enumerate(parser_summaries([d / "p0.jsonl", d / "p1.jsonl"])):
            self.assertEqual((summary["records"], summary["unparseable"], summary["unknown_events"]),
                             (len(logs[r]), 0, 0), summary)

    def test_a_probe_failure_in_a_transfer_changes_nothing(self):
        plain = self.torchrun("plain", PIPELINE, self.ARGS, env_with(pythonpath=()))
        d = self.torchrun("fault", PIPELINE, self.ARGS, env_with(
            BIGMAC_PROBE_LOG=self.tmp / "fault" / "p{rank}.jsonl", BIGMAC_PROBE_FAULT="p2p"))
        for r in (0, 1):
            self.assertEqual(rank_output(plain, r), rank_output(d, r))
            self.assertEqual(SWITCHED_OFF.findall(rank_output(d, r, "stderr")), [("p2p", "InjectedFault")])
            evs = events(d / f"p{r}.jsonl")
            self.assertEqual([e["where"] for e in of(evs, "probe_error")], ["p2p"])
            self.assertEqual(of(evs, "step"), [], "off from the first transfer on")


class Startup(ProbeCase):
    TINY = ("import sitecustomize, torch\n"
            "print(sitecustomize.__file__)\n"
            "m = torch.nn.Linear(2, 1)\n"
            "o = torch.optim.SGD(m.parameters(), lr=0.1)\n"
            "m(torch.ones(1, 2)).sum().backward()\n"
            "o.step()\n")

    def test_an_existing_sitecustomize_still_runs(self):
        site = self.dir("site")
        (site / "sitecustomize.py").write_text(
            "import os\nopen(os.environ['MARKER'], 'w').write(__file__)\n")
        d = self.dir("chained")
        marker, log = d / "marker", d / "p{rank}.jsonl"
        rc, out, err = ex.run([PY, "-c", self.TINY], d, env_with((PROBE_DIR, site), MARKER=marker,
                                                                 BIGMAC_PROBE_LOG=log))
        self.assertEqual(rc, 0, err)
        self.assertEqual(marker.read_text(), str(site / "sitecustomize.py"))
        self.assertEqual(out.splitlines()[0], str(site / "sitecustomize.py"))
        self.assertEqual([e["ev"] for e in events(d / "p0.jsonl")],
                         ["run", "batch", "model", "step", "heartbeat", "done"])
        # Without another one on PYTHONPATH, the system's own (Debian's) is the one that runs.
        shown = [ex.run([PY, "-c", "import sitecustomize; print(sitecustomize.__file__)"], self.dir(name), env)
                 for name, env in (("system", env_with(pythonpath=())), ("probed", env_with(BIGMAC_PROBE_LOG=log)))]
        self.assertEqual(shown[0], shown[1])

    def test_bad_settings_and_probe_failures_never_break_the_program(self):
        args = [PY, DDP, "--steps", "3"]
        rc, plain, _ = ex.run(args, self.dir("plain"), env_with(pythonpath=()))
        self.assertEqual(rc, 0)
        cases = {
            "log_is_a_directory": ({"BIGMAC_PROBE_LOG": self.tmp}, ": IsADirectoryError: [Errno 21] Is a directory"),
            "bad_flag": ({"BIGMAC_PROBE_LOG": self.tmp / "x{rank}", "BIGMAC_PROBE_SHAPES": "maybe"},
                         "bigmac-probe: off: BIGMAC_PROBE_SHAPES='maybe': expected 1 or 0"),
            "install_fails": ({"BIGMAC_PROBE_LOG": self.tmp / "y{rank}", "BIGMAC_PROBE_FAULT": "install"},
                              "in install: InjectedFault"),
            "bad_bound": ({"BIGMAC_PROBE_LOG": self.tmp / "z{rank}", "BIGMAC_PROBE_MAX_STEPS": "0"},
                          "bigmac-probe: off: BIGMAC_PROBE_MAX_STEPS='0': expected an integer >= 1"),
        }
        for name, (variables, text) in cases.items():
            with self.subTest(name):
                rc, out, err = ex.run(args, self.dir(name), env_with(**variables))
                self.assertEqual((rc, out), (0, plain), err)
                probe_lines = [line for line in err.splitlines() if line.startswith("bigmac-probe")]
                self.assertEqual(len(probe_lines), 1, err)
                self.assertIn(text, probe_lines[0])
        self.assertEqual(sorted(p.name for p in self.tmp.iterdir() if p.is_file()), [],
                         "no probe log where the probe was off")

    def test_a_crashing_program_gets_no_done_and_keeps_its_own_error(self):
        d = self.dir("crash")
        rc, _, err = ex.run([PY, "-c", self.TINY + "raise RuntimeError('the program failed')\n"], d,
                            env_with(BIGMAC_PROBE_LOG=d / "p{rank}.jsonl"))
        self.assertEqual(rc, 1)
        self.assertTrue(err.rstrip().endswith("RuntimeError: the program failed"), err)
        self.assertEqual([e["ev"] for e in events(d / "p0.jsonl")], ["run", "batch", "model", "step", "heartbeat"])


class Bounded(ProbeCase):
    """BIGMAC_PROBE_MAX_STEPS ends a program that has no step limit of its own, cleanly."""

    BOUND = 3

    def assert_ended_at_the_bound(self, log, output, rank):
        evs = events(log)
        self.assertEqual(of(evs, "run")[0]["bound"], self.BOUND)
        self.assertEqual([s["global_step"] for s in of(evs, "step")], list(range(self.BOUND)))
        self.assertEqual([(d["steps"], d["bounded"]) for d in of(evs, "done")], [(self.BOUND, True)])
        self.assertEqual(evs[-1]["ev"], "done")
        mine = [line for line in output.splitlines() if line.startswith(f"rank {rank} ")]
        self.assertEqual([re.sub(r" loss .*", "", line) for line in mine],
                         [f"rank {rank} step {s}" for s in range(self.BOUND)]
                         + [f"rank {rank} finally after {self.BOUND} steps", f"rank {rank} atexit",
                            f"rank {rank} destroy_process_group"])

    def test_an_endless_ddp_program_stops_at_the_bound_on_every_rank(self):
        d = self.torchrun("ddp", ENDLESS, [], env_with(BIGMAC_PROBE_LOG=self.tmp / "ddp" / "p{rank}.jsonl",
                                                       BIGMAC_PROBE_MAX_STEPS=self.BOUND))
        for r in (0, 1):
            self.assert_ended_at_the_bound(d / f"p{r}.jsonl", rank_output(d, r), r)

    def test_mp_spawn_children_stop_at_the_bound_and_exit_0(self):
        d = self.dir("spawn")
        rc, out, err = run_spawner([PY, ENDLESS, "--spawn", "2", "--init", f"file://{d}/store"], d,
                              env_with(BIGMAC_PROBE_LOG=d / "p{rank}.jsonl", BIGMAC_PROBE_MAX_STEPS=self.BOUND))
        self.assertEqual(rc, 0, out + err)
        self.assertEqual(sorted(p.name for p in d.glob("p*.jsonl")), ["p0.jsonl", "p1.jsonl"],
                         "one log per child, none from the parent")
        for r in (0, 1):
            self.assert_ended_at_the_bound(d / f"p{r}.jsonl", out, r)


    def test_a_spawn_under_a_launcher_runs_its_worker_in_place_in_the_launchers_world(self):
        # Each of torchrun's 2 ranks calls mp.spawn(train, nprocs=4) with its own file store:
        # in place, each runs train(LOCAL_RANK) once, in torchrun's world of 2 (its rendezvous,
        # not the program's store), and stops at the bound; no worker process, no store file.
        d = self.dir("in_place")
        store = d / "programs-own-store"
        rc, out, err = ex.run(ex.torchrun(2, d, ["--spawn", "4", "--init", f"file://{store}"],
                                          program=ENDLESS), d,
                              env_with(BIGMAC_PROBE_LOG=d / "p{rank}.jsonl", BIGMAC_PROBE_MAX_STEPS=self.BOUND,
                                       BIGMAC_PROBE_SPAWN_IN_PLACE=1))
        self.assertEqual(rc, 0, out + err)
        self.assertEqual(sorted(p.name for p in d.glob("p*.jsonl")), ["p0.jsonl", "p1.jsonl"])
        self.assertFalse(store.exists(), "the program's own rendezvous was used")
        for r in (0, 1):
            evs = events(d / f"p{r}.jsonl")
            run = of(evs, "run")[0]
            self.assertEqual((run["spawn_in_place"], run["world_size"], run.get("spawned_nprocs")),
                             (4, 2, None))
            self.assertEqual(of(evs, "pg_ready")[0]["world_size"], 2)
            self.assert_ended_at_the_bound(d / f"p{r}.jsonl", rank_output(d, r), r)
    def test_a_program_that_catches_the_exit_is_ended_at_the_fourth_refused_step(self):
        program = ("import atexit, torch\n"
                   "atexit.register(lambda: print('atexit ran', flush=True))\n"
                   "m = torch.nn.Linear(2, 1)\n"
                   "o = torch.optim.SGD(m.parameters(), lr=0.1)\n"
                   "caught = 0\n"
                   "for attempt in range(50):\n"
                   "    m(torch.ones(1, 2)).sum().backward()\n"
                   "    try:\n"
                   "        o.step()\n"
                   "    except SystemExit as e:\n"
                   "        caught += 1\n"
                   "        print('caught', e.code, caught)\n"  # not flushed: the probe flushes
                   "print('stepped on past every refusal')\n"
                   "raise SystemExit(3)\n")
        d = self.dir("catch")
        rc, out, err = ex.run([PY, "-c", program], d, env_with(BIGMAC_PROBE_LOG=d / "p{rank}.jsonl",
                                                               BIGMAC_PROBE_MAX_STEPS=2))
        self.assertEqual(rc, 0, err)
        self.assertEqual(out, "caught 0 1\ncaught 0 2\ncaught 0 3\n", "os._exit: no atexit handler runs")
        evs = events(d / "p0.jsonl")
        self.assertEqual([s["global_step"] for s in of(evs, "step")], [0, 1])
        self.assertEqual([(e["steps"], e["bounded"]) for e in of(evs, "done")], [(2, True)])


if __name__ == "__main__":
    unittest.main()
