#!/usr/bin/python3
"""In-process tests of bigmac-probe's hooks (probe/bigmac_probe/torch_patches.py), put into this
interpreter's real torch (Debian's python3-torch, CPU) and taken out again after each case.

    /usr/bin/python3 probe_hooks_test.py [-v] [TestClass.test_name]

Not tested for real here: torch.cuda.amp.GradScaler with CUDA (no GPU on the test machine).
Its contract (scale() multiplies by the scale, step() unscales and skips optimizer.step() on
non-finite gradients) is exercised through FakeScaler, which the probe instruments with the
same code as the real class; the real class is only seen disabled, as it is without CUDA.
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
import torch.distributed as dist

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "probe"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent / "programs"))  # compiled_loops

from bigmac_probe.patch_set import PatchSet  # noqa: E402
from bigmac_probe.probe import Probe  # noqa: E402
from bigmac_probe.probe_settings import HOOK_NAMES, ProbeSettings  # noqa: E402
from bigmac_probe.step_tracker import StepTracker  # noqa: E402
from bigmac_probe.torch_patches import instrument_scaler_class, instrument_torch  # noqa: E402
from probe_in_process import FakeScaler, InProcess  # noqa: E402
from probe_run_test import of, parser_summaries  # noqa: E402

# torch.amp.GradScaler("cpu") (PyTorch 2.3+) with float16 autocast on the CPU: a real scaler that
# scales, unscales and skips, which 1.13 (CUDA only, disabled without it) cannot show.
CPU_SCALER = hasattr(getattr(torch, "amp", None), "GradScaler")
NO_CPU_SCALER = f"torch.amp.GradScaler('cpu') is PyTorch 2.3+'s (torch {torch.__version__} here)"
# Fused optimizers on the CPU (PyTorch 2.4+).
FUSED_ON_CPU = tuple(int(v) for v in torch.__version__.split("+")[0].split(".")[:2]) >= (2, 4)


def grad_norm(params):
    return math.sqrt(sum(float(p.grad.double().pow(2).sum()) for p in params if p.grad is not None))


class Instrumented(InProcess):
    """The probe's hooks in this process's torch: steps, numerics, scalers, digests, failures."""

    def test_step_events_carry_what_the_loop_computed(self):
        model = self.model()
        opt = torch.optim.AdamW(model.parameters(), lr=0.02)
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: (s + 1) / 4)
        data = torch.Generator().manual_seed(1)
        sha = hashlib.sha256()
        for p in model.parameters():
            sha.update(f"float32{list(p.shape)}".encode() + p.detach().numpy().tobytes())
        expected = []
        for step in range(4):
            losses = []
            for _ in range(3):
                loss = model(torch.randn(5, 6, generator=data)).pow(2).mean() / 3
                loss.backward()
                losses.append(loss.item())
            lr = opt.param_groups[0]["lr"]
            pre = float(torch.nn.utils.clip_grad_norm_(model.parameters(), 0.05 if step % 2 else 100.0))
            expected.append((step, math.fsum(losses), losses, lr, pre, grad_norm(model.parameters())))
            opt.step()
            sched.step()
            opt.zero_grad()
        evs = self.events()
        self.assertEqual([e["ev"] for e in evs[:3]], ["run", "batch", "model"])
        self.assertEqual((evs[0]["seed"], evs[0]["world_size"], evs[0]["backend"]), (5, 1, "none"))
        self.assertEqual((evs[1]["input_shape"], evs[1]["input_dtype"], evs[1]["module"]), ([5, 6], "float32", "Sequential"))
        self.assertEqual(evs[2]["param_count"], sum(p.numel() for p in model.parameters()))
        self.assertEqual(evs[2]["param_digest"], sha.hexdigest()[:16])
        for e, (step, loss, losses, lr, pre, post) in zip(of(evs, "step"), expected):
            self.assertEqual((e["global_step"], e["loss_count"], e["losses"], e["lr"]), (step, 3, losses, lr))
            self.assertAlmostEqual(e["loss"], loss, delta=1e-15)
            self.assertEqual(e["grad_norm_preclip"], pre)
            # Per-tensor norms in float32 on PyTorch 1.13 (docs/probe.md): clip_grad_norm_'s precision.
            self.assertAlmostEqual(e["grad_norm"], post, delta=1e-6 * post)
            self.assertAlmostEqual(e["grad_norm_sq"], post * post, delta=2e-6 * post * post)
        self.assertEqual(len(of(evs, "step")), 4)
        self.assertLess(of(evs, "step")[1]["grad_norm"], of(evs, "step")[1]["grad_norm_preclip"], "clipped")
        self.assertEqual([e["global_step"] for e in of(evs, "heartbeat")], [0, 1, 2, 3])

    def test_numerics_are_the_same_with_and_without_the_probe(self):
        def train():
            model = self.model()
            opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
            data = torch.Generator().manual_seed(2)
            for _ in range(5):
                model(torch.randn(4, 6, generator=data)).pow(2).mean().backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 0.1)
                opt.step()
                opt.zero_grad()
            return [p.detach().clone() for p in model.parameters()], torch.rand(3)

        probed, rng_probed = train()
        self.assertEqual(len(of(self.events(), "step")), 5)
        self.patches.restore()
        plain, rng_plain = train()
        for a, b in zip(probed, plain):
            self.assertTrue(torch.equal(a, b))
        self.assertTrue(torch.equal(rng_probed, rng_plain), "the probe draws no random numbers")

    def test_scaled_losses_are_unscaled_and_a_skipped_step_counts(self):
        instrument_scaler_class(self.probe, self.patches, FakeScaler)
        model = self.model()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        scaler = FakeScaler(1024.0, backoff_factor=2.0 ** -120)
        data = torch.Generator().manual_seed(3)
        seen = []
        for step in range(3):
            if step == 1:
                scaler._scale = 3e38  # times the loss's 100 below: inf gradients in float32
            loss = model(torch.randn(4, 6, generator=data)).pow(2).mean() * 100
            scaler.scale(loss).backward()
            before = [p.detach().clone() for p in model.parameters()]
            scale = scaler.get_scale()
            scaler.step(opt)
            seen.append((loss.item(), scale, grad_norm(model.parameters()),
                         all(torch.equal(a, p) for a, p in zip(before, model.parameters()))))
            scaler.update()
            opt.zero_grad()
        steps = of(self.events(), "step")
        self.assertEqual([s["global_step"] for s in steps], [0, 1, 2])
        self.assertEqual([s.get("skipped", False) for s in steps], [False, True, False])
        self.assertEqual([s["loss"] for s in steps], [v[0] for v in seen], "unscaled")
        self.assertEqual([s["loss_scale"] for s in steps], [v[1] for v in seen])
        self.assertEqual([v[3] for v in seen], [False, True, False], "the skipped step left the weights")
        self.assertEqual(steps[1]["param_digest"], steps[0]["param_digest"], "digested after a skipped step too")
        self.assertNotIn("grad_norm", steps[1])
        for s, v in ((steps[0], seen[0]), (steps[2], seen[2])):
            self.assertAlmostEqual(s["grad_norm"], v[2], delta=1e-6 * v[2])
        self.assertEqual(scaler.get_scale(), 3e38 * 2.0 ** -120)

    def test_disabled_real_grad_scaler_passes_through(self):
        model = self.model()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        with self.assertWarns(UserWarning):  # "CUDA is not available. Disabling."
            scaler = torch.cuda.amp.GradScaler()
        loss = model(torch.ones(2, 6)).sum()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        (step,) = of(self.events(), "step")
        self.assertEqual((step["loss"], step["global_step"]), (loss.item(), 0))
        self.assertNotIn("skipped", step)

    def scaled_steps(self, opt, model, unscale_first=False):
        """Four steps of `model` under float16 autocast and a real CPU GradScaler, the third
        with an inf in its input (inf/NaN gradients: skipped). What the loop saw: the loss given
        to scale(), the scale, the applied gradients' norm (the gradients are unscaled in place
        by the time step() returns, fused or not) and whether the weights stayed."""
        scaler = torch.amp.GradScaler("cpu", init_scale=2.0 ** 12)
        data = torch.Generator().manual_seed(3)
        seen = []
        for step in range(4):
            x = torch.randn(4, 6, generator=data)
            if step == 2:
                x[0, 0] = float("inf")
            with torch.autocast("cpu", dtype=torch.float16):
                loss = model(x).float().pow(2).mean()
            scaler.scale(loss).backward()
            if unscale_first:
                scaler.unscale_(opt)
            before = [p.detach().clone() for p in model.parameters()]
            scale = scaler.get_scale()
            scaler.step(opt)
            seen.append((loss.item(), scale, grad_norm(model.parameters()),
                         all(torch.equal(a, p) for a, p in zip(before, model.parameters()))))
            scaler.update()
            opt.zero_grad()
        self.assertEqual([v[3] for v in seen], [False, False, True, False], "the third step skipped")
        steps = of(self.events(), "step")
        self.assertEqual([s["global_step"] for s in steps], [0, 1, 2, 3])
        self.assertEqual([s.get("skipped", False) for s in steps], [False, False, True, False])
        # The inf saturates in the model's tanh: a finite loss, inf/NaN gradients.
        self.assertEqual([s["loss"] for s in steps], [v[0] for v in seen],
                         "the loss scale() was given, not the scaled one")
        self.assertEqual([s["loss_scale"] for s in steps], [v[1] for v in seen])
        self.assertEqual(seen[3][1], seen[2][1] / 2, "the scale backed off after the skip")
        self.assertNotIn("grad_norm", steps[2])
        for s, v in zip(steps[:2] + steps[3:], seen[:2] + seen[3:]):
            self.assertAlmostEqual(s["grad_norm"], v[2], delta=1e-6 * v[2], msg="unscaled")
            self.assertLess(s["grad_norm"], 100, "not the scaled norm")
        return steps

    @unittest.skipUnless(CPU_SCALER, NO_CPU_SCALER)
    def test_a_real_cpu_grad_scaler_unscales_loss_and_norm_and_counts_its_skip(self):
        model = self.model()
        self.scaled_steps(torch.optim.AdamW(model.parameters(), lr=0.01), model)

    @unittest.skipUnless(CPU_SCALER and FUSED_ON_CPU, NO_CPU_SCALER + "; fused on the CPU: 2.4+")
    def test_a_fused_optimizer_under_a_grad_scaler_reports_unscaled_norms_and_its_skip(self):
        # The scaler leaves the unscaling and the skip to the fused kernel (grad_scale,
        # found_inf): step() runs on scaled gradients and on the inf step as well.
        model = self.model()
        self.scaled_steps(torch.optim.AdamW(model.parameters(), lr=0.01, fused=True), model)
        self.restart()
        model = self.model()  # unscale_ before step (to clip): no grad_scale handed over
        self.scaled_steps(torch.optim.Adam(model.parameters(), lr=0.01, fused=True), model, unscale_first=True)

    @unittest.skipUnless(FUSED_ON_CPU, f"fused optimizers on the CPU are PyTorch 2.4+'s (torch {torch.__version__} here)")
    def test_fused_and_foreach_optimizers_count_their_steps_with_the_applied_norms(self):
        for make in (lambda p: torch.optim.AdamW(p, lr=0.01, fused=True),
                     lambda p: torch.optim.Adam(p, lr=0.01, foreach=True),
                     lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, fused=True),
                     lambda p: torch.optim.SGD(p, lr=0.1, foreach=True)):
            self.restart()
            model = self.model()
            opt = make(model.parameters())
            data = torch.Generator().manual_seed(3)
            seen = []
            for _ in range(3):
                loss = model(torch.randn(4, 6, generator=data)).pow(2).mean()
                loss.backward()
                seen.append((loss.item(), grad_norm(model.parameters())))
                opt.step()
                opt.zero_grad()
            steps = of(self.events(), "step")
            self.assertEqual([s["global_step"] for s in steps], [0, 1, 2], opt)
            for s, (loss, norm) in zip(steps, seen):
                self.assertEqual(s["loss"], loss)
                self.assertAlmostEqual(s["grad_norm"], norm, delta=1e-6 * norm)
            self.assertEqual(steps[-1]["param_digest"], self.digest(model), opt)

    def digest(self, model):
        sha = hashlib.sha256()
        for p in model.parameters():
            sha.update(f"float32{list(p.shape)}".encode() + p.detach().numpy().tobytes())
        return sha.hexdigest()[:16]

    def test_super_step_counts_once_and_a_second_optimizer_not_at_all(self):
        class Mine(torch.optim.SGD):
            def step(self, closure=None):
                return super().step(closure)

        model, other = self.model(), torch.nn.Linear(2, 2)
        torch.optim.SGD(other.parameters(), lr=0.1)  # the base class is instrumented too
        opt, opt2 = Mine(model.parameters(), lr=0.1), torch.optim.Adam(other.parameters())
        for _ in range(2):
            (model(torch.ones(1, 6)).sum() + other(torch.ones(1, 2)).sum()).backward()
            opt.step()
            opt2.step()
        self.assertEqual([s["global_step"] for s in of(self.events(), "step")], [0, 1])
        self.assertEqual(of(self.events(), "model")[0]["param_count"], sum(p.numel() for p in model.parameters()))

    def test_losses_past_the_keep_limit_are_summed_on_the_device(self):
        w = torch.nn.Parameter(torch.tensor(0.5))
        opt = torch.optim.SGD([w], lr=0.0)
        values = []
        for i in range(2 * StepTracker.KEEP_LIMIT + 5):
            loss = w * (i % 7)
            loss.backward()
            values.append(loss.item())
        self.assertLessEqual(len(self.probe.steps._losses), StepTracker.KEEP_LIMIT)
        opt.step()
        (step,) = of(self.events(), "step")
        self.assertEqual(step["loss_count"], len(values))
        self.assertAlmostEqual(step["loss"], math.fsum(values), delta=1e-12 * math.fsum(values))
        self.assertNotIn("losses", step)

    def test_the_orchestrators_parser_reads_every_line_the_probe_writes(self):
        """Through the real `bigmac-bringup parse`: skipped and non-finite steps, probe_error."""
        instrument_scaler_class(self.probe, self.patches, FakeScaler)
        w = torch.nn.Parameter(torch.tensor([0.5, 2.0]))
        opt = torch.optim.SGD([w], lr=0.1)
        scaler = FakeScaler(1e38, backoff_factor=1e-30)
        for factor in (100.0, 1.0, math.nan):  # a skipped step, a normal one, a NaN loss
            scaler.scale((w * factor).sum()).backward()
            scaler.step(opt)
            scaler.update()
            opt.zero_grad()
        (w * math.inf).sum().backward()  # no scaler: a step with a non-finite gradient norm
        opt.step()
        torch.save({}, str(self.tmp / "c.pt"))
        with contextlib.redirect_stderr(io.StringIO()):
            self.probe.failsafe.trip("save", RuntimeError("a probe failure, for its line"))
        path = self.tmp / "rank0.jsonl"
        steps = of(self.events(), "step")
        self.assertEqual([s.get("skipped", False) for s in steps], [True, False, True, False])
        self.assertTrue(math.isnan(steps[2]["loss"]))
        self.assertEqual((steps[3]["loss"], steps[3]["grad_norm"]), (math.inf, math.inf))
        (summary,) = parser_summaries([path])
        lines = len(path.read_text().splitlines())
        self.assertEqual((summary["unparseable"], summary["unknown_events"], summary["records"]),
                         (0, 1, lines - 1), summary)

    def test_program_exceptions_pass_through_unchanged(self):
        model = self.model()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        with self.assertRaisesRegex(RuntimeError, "Parent directory .*/missing does not exist"):
            torch.save({}, str(self.tmp / "missing" / "x.pt"))
        loss = model(torch.ones(1, 6)).sum()
        loss.backward()
        with self.assertRaisesRegex(RuntimeError, "Trying to backward through the graph a second time"):
            loss.backward()

        def closure():
            raise ValueError("from the program")
        with self.assertRaisesRegex(ValueError, "from the program"):
            opt.step(closure)
        opt.step()
        torch.save({}, io.BytesIO())  # an in-memory buffer is no checkpoint
        torch.save({}, str(self.tmp / "ok.pt"))
        evs = self.events()
        self.assertTrue(self.probe.failsafe.active)
        self.assertEqual([(s["global_step"], s["loss_count"]) for s in of(evs, "step")], [(0, 1)])
        self.assertEqual([(c["step"], c["path"]) for c in of(evs, "ckpt")], [(0, str(self.tmp / "ok.pt"))])

    def test_first_training_forward_logged_then_module_call_restored(self):
        model = self.model()
        with torch.no_grad():
            model(torch.ones(9, 6))  # evaluation: not the training input
        torch.nn.Tanh()(torch.ones(3))  # no parameters: not the model
        self.assertTrue(getattr(torch.nn.Module.__call__, "_bigmac_probe", False))
        model(torch.ones(2, 6, dtype=torch.float32))
        self.assertFalse(getattr(torch.nn.Module.__call__, "_bigmac_probe", False))
        (batch,) = of(self.events(), "batch")
        self.assertEqual((batch["input_shape"], batch["input_device"]), ([2, 6], "cpu"))

    def test_p2p_op_accepts_the_wrapped_and_the_original_isend(self):
        wrapped = dist.isend
        original = wrapped.__wrapped__
        # PyTorch 2.x resolves a P2POp's group when it is made: a group of one rank is enough.
        dist.init_process_group("gloo", init_method=f"file://{self.tmp}/store", rank=0, world_size=1)
        try:
            for op in (wrapped, original, dist.irecv):
                self.assertIs(dist.P2POp(op, torch.zeros(2), 0).op, op)
            # 1.13 raises RuntimeError, 2.x ValueError
            with self.assertRaisesRegex((RuntimeError, ValueError), "Invalid ``op``"):
                dist.P2POp(dist.send, torch.zeros(2), 0)
        finally:
            dist.destroy_process_group()

    def test_a_failure_in_any_hook_switches_the_probe_off_once(self):
        """Every hook this process can reach (p2p needs two ranks: tests/probe/probe_run_test.py)."""
        instrument_scaler_class(self.probe, self.patches, FakeScaler)

        def program():
            dist.init_process_group("gloo", init_method=f"file://{self.tmp}/store", rank=0, world_size=1)
            try:
                model = self.model()
                opt = torch.optim.SGD(model.parameters(), lr=0.1)
                scaler = FakeScaler(8.0)
                for _ in range(2):
                    scaler.scale(model(torch.ones(2, 6)).pow(2).mean()).backward()
                    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                    scaler.step(opt)
                    opt.step()
                    opt.zero_grad()
                torch.save({}, str(self.tmp / "c.pt"))
                torch.load(str(self.tmp / "c.pt"))
                self.probe.guard("done", self.probe.on_exit)
                return [p.detach().clone() for p in model.parameters()]
            finally:
                dist.destroy_process_group()
                Path(self.tmp, "store").unlink(missing_ok=True)

        reference = program()
        self.assertEqual(len(of(self.events(), "step")), 4)
        for hook in HOOK_NAMES:
            if hook in ("install", "p2p"):
                continue  # install: probe_run_test.py, where install() runs at start-up
            with self.subTest(hook=hook):
                self.patches.restore()
                (self.tmp / "rank0.jsonl").unlink(missing_ok=True)
                self.start(ProbeSettings(log_template=str(self.tmp / "rank{rank}.jsonl"), fault=hook))
                instrument_scaler_class(self.probe, self.patches, FakeScaler)
                err = io.StringIO()
                with contextlib.redirect_stderr(err):
                    result = program()
                for a, b in zip(result, reference):
                    self.assertTrue(torch.equal(a, b))
                self.assertFalse(self.probe.failsafe.active)
                lines = err.getvalue().splitlines()
                self.assertEqual(len(lines), 1, lines)
                self.assertRegex(lines[0], f"^bigmac-probe: switched off after an internal error in {hook}: "
                                 "InjectedFault: fault injected by BIGMAC_PROBE_FAULT=")
                errors = of(self.events(), "probe_error")
                self.assertEqual([e["where"] for e in errors], [hook] if self.events() else [])


    # ---- digests: replicas in sync, every sample once ------------------------------------------
    def test_each_step_digests_its_first_micro_batch_and_the_params_after_steps_0_1_2_4(self):
        def train():
            model = self.model()
            opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
            data = torch.Generator().manual_seed(6)
            firsts, after, losses = [], [], []
            for step in range(5):
                for mb in range(2):
                    x = torch.randn(4, 6, generator=data)
                    if mb == 0:
                        firsts.append(x.clone())
                    # The loss module holds no parameter: not the model's forward.
                    loss = torch.nn.MSELoss()(model(x), torch.zeros(4, 3)) / 2
                    loss.backward()
                    losses.append(loss.item())
                opt.step()
                opt.zero_grad()
                with torch.no_grad():
                    model(torch.ones(9, 6))  # an evaluation between steps: not the next step's input
                after.append([p.detach().clone() for p in model.parameters()])
            return firsts, after, losses, torch.rand(3)

        def sha(tensors):
            h = hashlib.sha256()
            for t in tensors:
                h.update(f"float32{list(t.shape)}".encode() + t.numpy().tobytes())
            return h.hexdigest()[:16]

        firsts, after, losses, rng = train()
        evs = self.events()
        steps = of(evs, "step")
        self.assertEqual([s["global_step"] for s in steps], [0, 1, 2, 3, 4])
        self.assertEqual(len(of(evs, "batch")), 1, "`batch` stays the model's first forward only")
        for s, x in zip(steps, firsts):
            self.assertEqual((s["input_digest"], s["input_shape"], s["input_digest_bytes"]),
                             (sha([x]), [4, 6], 4 * 6 * 4))
        self.assertEqual(len({s["input_digest"] for s in steps}), 5)
        digested = {s["global_step"]: s for s in steps if "param_digest" in s}
        self.assertEqual(sorted(digested), [0, 1, 2, 4])
        for step, s in digested.items():
            self.assertEqual((s["param_digest"], s["params_after_step"]), (sha(after[step]), True),
                             "after the update")
        self.assertNotIn("params_after_step", steps[3])
        self.assertNotEqual(of(evs, "model")[0]["param_digest"], digested[0]["param_digest"], "model: before step 0")
        self.patches.restore()
        plain = train()
        self.assertEqual((losses, rng.tolist()), (plain[2], plain[3].tolist()),
                         "the same losses, the same RNG stream")
        for a, b in zip(after[-1], plain[1][-1]):
            self.assertTrue(torch.equal(a, b))

    def test_module_call_is_wrapped_only_from_a_steps_end_to_the_next_first_forward(self):
        model = self.model()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)

        def wrapped():
            return getattr(torch.nn.Module.__call__, "_bigmac_probe", False)

        for step in range(3):
            self.assertTrue(wrapped(), f"step {step}: armed for its first forward")
            with torch.no_grad():
                model(torch.ones(2, 6))
            self.assertTrue(wrapped(), "an evaluation is not a training forward")
            model(torch.full((2, 6), float(step))).sum().backward()
            self.assertFalse(wrapped(), "the step's other forwards cost nothing")
            model(torch.ones(2, 6)).sum().backward()
            opt.step()
        self.assertEqual([len(s["input_digest"]) for s in of(self.events(), "step")], [16, 16, 16])
        # BIGMAC_PROBE_INPUT_DIGEST=0: only the model's first forward, as before; DIGEST=0: no
        # parameter digest at all.
        self.restart(input_digest=False, digest=False)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(3):
            model(torch.ones(2, 6)).sum().backward()
            self.assertFalse(wrapped())
            opt.step()
        self.assertFalse(wrapped(), "not put back after a step")
        evs = self.events()
        self.assertEqual(len(of(evs, "batch")), 1)
        self.assertNotIn("param_digest", of(evs, "model")[0])
        for s in of(evs, "step"):
            self.assertFalse({"input_digest", "input_shape", "input_digest_bytes", "param_digest"} & set(s), s)
        # Once the patches are undone, a step's end never puts the wrapper back.
        self.restart()
        self.patches.restore()
        self.probe.rearm_forward()
        self.assertFalse(wrapped())

    def test_an_unreadable_input_gets_an_error_and_the_probe_goes_on(self):
        class Sparse(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.w = torch.nn.Parameter(torch.ones(3))

            def forward(self, x):
                return (torch.sparse.mm(x, self.w.unsqueeze(1))).sum()

        model = Sparse()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        model(torch.eye(3).to_sparse()).backward()
        opt.step()
        (step,) = of(self.events(), "step")
        self.assertNotIn("input_digest", step)
        self.assertRegex(step["input_digest_error"], r"^\w+Error: ")
        self.assertEqual(step["input_shape"], [3, 3])
        self.assertTrue(self.probe.failsafe.active)



@unittest.skipUnless(hasattr(torch, "compile"), f"torch.compile is PyTorch 2.x's (torch {torch.__version__} here)")
class Compiled(unittest.TestCase):
    """torch.compile'd training loops (programs/compiled_loops.py), each run without the probe
    and then with it in this process: TorchDynamo must capture the same graphs, with the same
    graph breaks and recompiles (its own counters), the loop must compute the same numbers, and
    the probe must see every step. Backend aot_eager: Dynamo's capture, which is what the probe
    could change, is the same whatever the backend (inductor gives the same counts, only slower
    to build; bench/probe/compile_graphs.py)."""

    def setUp(self):
        import compiled_loops

        self.loops = compiled_loops
        self._tmp = tempfile.TemporaryDirectory(prefix="bigmac-probe-")
        self.tmp = Path(self._tmp.name)
        self.probe = self.patches = None

    def tearDown(self):
        if self.patches is not None:
            self.patches.restore()
            self.probe.log.close()
        if dist.is_initialized():  # the DDP ways' one-process group
            dist.destroy_process_group()
        self._tmp.cleanup()

    def steps_of(self, way):
        """The probe's `step` events of `way`, after checking Dynamo's counts and the loop's
        numbers against the same loop without the probe."""
        loops = self.loops
        loops.reset_dynamo()
        plain = loops.train(way)
        counts = loops.dynamo_counts()
        loops.reset_dynamo()
        self.probe = Probe(ProbeSettings(log_template=str(self.tmp / "rank{rank}.jsonl")), environ={})
        self.patches = PatchSet()
        instrument_torch(self.probe, self.patches, torch)
        probed = loops.train(way)
        self.assertEqual(loops.dynamo_counts(), counts, f"{way}: (graphs, breaks, recompiles) with the probe")
        self.assertGreaterEqual(counts[0], 1, f"{way}: nothing was compiled")
        self.assertEqual(probed, plain, f"{way}: the probe changed the loop's numbers")
        path = self.tmp / "rank0.jsonl"
        steps = of([json.loads(line) for line in path.read_text().splitlines()], "step")
        path.unlink()
        self.assertEqual([s["global_step"] for s in steps], list(range(len(plain))), way)
        for s, r in zip(steps, probed):
            self.assertEqual(s["loss_count"], 2, way)
            self.assertAlmostEqual(s["loss"], r["loss"], places=6, msg=way)
            self.assertAlmostEqual(s["grad_norm_preclip"], r["preclip"], places=5, msg=way)
            self.assertAlmostEqual(s["grad_norm"], min(r["preclip"], 1.0), places=5, msg=way)
        self.patches.restore()
        self.probe.log.close()
        self.patches = None
        return steps

    def assert_fully_seen(self, way, steps, buffers=True):
        for s in steps:
            self.assertEqual(s["sample_count"], 12, way)
            self.assertIn("input_digest", s, way)
            digest_step = s["global_step"] in (0, 1, 2, 4)
            self.assertEqual("buffer_digest" in s, buffers and digest_step, f"{way}: {s}")
            self.assertEqual("param_digest" in s, digest_step, way)

    def test_a_compiled_model_is_captured_as_without_the_probe_and_fully_seen(self):
        # The model called outside any compiled function: the probe's wrapper and hooks run
        # eagerly around its compiled call (in place: around the module's compiled call).
        for way in ("module", "in_place", "blocks", "ddp_of_compiled"):
            self.assert_fully_seen(way, self.steps_of(way))

    def test_a_compiled_optimizer_step_is_counted_with_its_graph_unchanged(self):
        # opt.step() traced: the probe's part runs eagerly before and after it.
        self.assert_fully_seen("optimizer", self.steps_of("optimizer"))

    def test_a_model_inside_a_compiled_function_leaves_its_steps_without_inputs(self):
        # The forward is traced, never run as Python: no input digest, and no sample set rather
        # than a partial one; losses (backward runs eagerly after its graph break), norms and
        # parameter digests as usual.
        for way in ("loss_fn", "train_step"):
            for s in self.steps_of(way):
                self.assertNotIn("sample_count", s, way)
                self.assertNotIn("input_digest", s, way)
                self.assertEqual("param_digest" in s, s["global_step"] in (0, 1, 2, 4), way)

    def test_compiled_ddp_is_captured_as_without_the_probe_and_its_buffers_left_undigested(self):
        # torch.compile(DDP(model)): Dynamo runs the wrapped module's forward without its
        # hooks, so the buffers are not digested (rather than digested before DDP's broadcast).
        self.assert_fully_seen("ddp_module", self.steps_of("ddp_module"), buffers=False)


if __name__ == "__main__":
    unittest.main()
