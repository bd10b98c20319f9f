#!/usr/bin/python3
"""In-process tests of how bigmac-probe follows a program's life (probe/bigmac_probe): the step
bound it ends a program at, the checkpoints it loads and writes, the workers it spawns and the
seed its model was made with; the probe put into this interpreter's real torch and taken out
again after each case.

    /usr/bin/python3 probe_lifecycle_test.py [-v] [TestClass.test_name]
"""
import contextlib
import io
import itertools
import os
import unittest
from pathlib import Path

import torch
import torch.distributed as dist
from probe_in_process import FakeScaler, InProcess

from bigmac_probe.probe import NO_MODULE_NOTE, NO_SEED_NOTE
from bigmac_probe.torch_patches import instrument_scaler_class
from probe_run_test import of



def _write_spawned_env(index, folder):
    """A torch.multiprocessing.spawn worker (module level, so the spawn start method can find
    it): writes what its environment says of the spawn."""
    Path(folder, f"worker{index}").write_text(os.environ.get("BIGMAC_PROBE_SPAWNED_NPROCS", ""))


class ItemSeeded(torch.utils.data.Dataset):
    """torchvision's FakeData's way: each item from its own seed, the RNG state restored after."""

    def __len__(self):
        return 8

    def __getitem__(self, index):
        state = torch.get_rng_state()
        torch.manual_seed(index + 12345)
        x = torch.randn(6)
        torch.set_rng_state(state)
        return x


class Lifecycle(InProcess):
    """The probe over a program's life: its bound, its files, its workers, its seed."""

    # ---- the step bound (BIGMAC_PROBE_MAX_STEPS) --------------------------------------------
    def test_step_bound_ends_the_program_before_step_n(self):
        self.restart(max_steps=3)
        dist.init_process_group("gloo", init_method=f"file://{self.tmp}/store", rank=0, world_size=1)
        try:
            model = self.model()
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for _ in range(3):
                model(torch.ones(2, 6)).sum().backward()
                opt.step()
            model(torch.ones(2, 6)).sum().backward()
            before = [p.detach().clone() for p in model.parameters()]
            # The bound's own SystemExit, then a program that caught it stepping on: the same
            # optimizer, another one (the fourth refusal would be os._exit: probe_run_test.py).
            other = torch.optim.SGD(torch.nn.Linear(2, 2).parameters(), lr=0.1)
            for optimizer in (opt, opt, other):
                with self.assertRaises(SystemExit) as caught:
                    optimizer.step()
                self.assertEqual(caught.exception.code, 0)
            for a, p in zip(before, model.parameters()):
                self.assertTrue(torch.equal(a, p), "step 3 did not run")
            evs = self.events()
            self.assertEqual(evs[0]["bound"], 3)
            self.assertEqual([s["global_step"] for s in of(evs, "step")], [0, 1, 2])
            self.assertEqual((evs[-1]["ev"], evs[-1]["steps"], evs[-1]["bounded"]), ("done", 3, True))
            self.assertTrue(dist.is_initialized())
            self.probe.at_exit()  # what the interpreter runs at exit
            self.assertFalse(dist.is_initialized(), "the probe ended the process group")
            self.assertEqual(len(of(self.events(), "done")), 1, "done is not written again at exit")
        finally:
            if dist.is_initialized():
                dist.destroy_process_group()
            Path(self.tmp, "store").unlink(missing_ok=True)

    def test_step_bound_stops_a_grad_scalers_step_before_it_unscales(self):
        self.restart(max_steps=1)
        instrument_scaler_class(self.probe, self.patches, FakeScaler)
        model = self.model()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        scaler = FakeScaler(64.0)
        for step in range(2):
            scaler.scale(model(torch.ones(2, 6)).pow(2).mean()).backward()
            if step == 1:
                grads = [p.grad.clone() for p in model.parameters()]
                with self.assertRaises(SystemExit) as caught:
                    scaler.step(opt)
                self.assertEqual(caught.exception.code, 0)
                for g, p in zip(grads, model.parameters()):
                    self.assertTrue(torch.equal(g, p.grad), "the scaler's step never ran")
            else:
                scaler.step(opt)
                scaler.update()
                opt.zero_grad()
        evs = self.events()
        self.assertEqual([s["global_step"] for s in of(evs, "step")], [0])
        self.assertEqual([(d["steps"], d.get("bounded")) for d in of(evs, "done")], [(1, True)])

    def test_step_bound_lets_a_gans_last_step_finish(self):
        """The discriminator's optimizer steps first, so it is the counted one: the generator's
        step and the program's own print after the discriminator's of the last step happen."""
        self.restart(max_steps=2)
        torch.manual_seed(0)
        gen, disc = torch.nn.Linear(3, 4), torch.nn.Linear(4, 1)
        opt_d = torch.optim.SGD(disc.parameters(), lr=0.1)
        opt_g = torch.optim.Adam(gen.parameters(), lr=0.1)
        happened = []
        with self.assertRaises(SystemExit):
            for i in itertools.count():
                noise = torch.randn(5, 3)
                (disc(gen(noise).detach()).mean() - disc(torch.ones(5, 4)).mean()).backward()
                opt_d.step()
                opt_d.zero_grad()
                happened.append(f"d{i}")  # the program's loss print
                before = [p.detach().clone() for p in gen.parameters()]
                (-disc(gen(noise)).mean()).backward()
                opt_g.step()
                opt_g.zero_grad()
                happened.append((f"g{i}", not all(torch.equal(a, p) for a, p in zip(before, gen.parameters()))))
        self.assertEqual(happened, ["d0", ("g0", True), "d1", ("g1", True)])
        evs = self.events()
        self.assertEqual([s["global_step"] for s in of(evs, "step")], [0, 1])
        self.assertEqual(of(evs, "model")[0]["param_count"], sum(p.numel() for p in disc.parameters()))
        self.assertEqual([(d["steps"], d["bounded"]) for d in of(evs, "done")], [(2, True)])

    # ---- torch.load ---------------------------------------------------------------------
    def test_load_events_name_the_file_and_the_step(self):
        w = torch.nn.Parameter(torch.tensor([1.0, 2.0]))
        opt = torch.optim.SGD([w], lr=0.1)
        path = self.tmp / "ck.pt"
        torch.save({"w": w.detach().clone()}, str(path))
        self.assertEqual(torch.load(str(path))["w"].tolist(), [1.0, 2.0], "the result is the program's")
        for _ in range(2):
            (w * w).sum().backward()
            opt.step()
        with open(path, "rb") as f:
            torch.load(f)
        torch.load(io.BytesIO(path.read_bytes()))  # an in-memory buffer: no file to name
        with self.assertRaises(FileNotFoundError):
            torch.load(str(self.tmp / "missing.pt"))
        with contextlib.chdir(self.tmp):
            torch.load("ck.pt", map_location="cpu")
        torch.load(f=path)
        loads = of(self.events(), "load")
        self.assertEqual([(e["path"], e["global_step"]) for e in loads],
                         [(str(path), 0), (str(path), 2), (str(path), 2), (str(path), 2)])
        self.assertTrue(self.probe.failsafe.active)

    def test_a_closure_step_is_one_micro_batch_with_its_first_loss_and_applied_gradients(self):
        torch.manual_seed(0)
        model = torch.nn.Linear(3, 1)
        opt = torch.optim.LBFGS(model.parameters(), lr=0.5, max_iter=5)
        x, y = torch.randn(8, 3), torch.randn(8, 1)
        firsts = []

        def closure():
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            return loss

        for _ in range(2):
            firsts.append(float(opt.step(closure)))  # LBFGS returns the first evaluation's loss
        steps = of(self.events(), "step")
        self.assertEqual(len(steps), 2)
        for event, first in zip(steps, firsts):
            self.assertEqual(event["loss_count"], 1, "the closure's re-evaluations are one micro-batch")
            self.assertAlmostEqual(event["loss"], first, places=6)
            self.assertGreater(event["grad_norm"], 0, "the gradients the closure made, read after step()")

    def test_a_checkpoint_renamed_into_place_is_named_where_it_lands(self):
        w = torch.nn.Parameter(torch.tensor([1.0, 2.0]))
        opt = torch.optim.SGD([w], lr=0.1)
        (w * w).sum().backward()
        opt.step()
        tmp, final = self.tmp / "checkpoint.pth.tar.tmp", self.tmp / "checkpoint.pth.tar"
        torch.save({"w": w.detach()}, str(tmp))  # as pytorch/elastic's example saves
        os.rename(str(tmp), str(final))
        os.replace(str(final), str(self.tmp / "best.pth.tar"))
        other = self.tmp / "notes.txt"
        other.write_text("x")
        os.rename(str(other), str(self.tmp / "notes2.txt"))  # not a checkpoint: nothing
        ckpts = of(self.events(), "ckpt")
        self.assertEqual([e["path"] for e in ckpts],
                         [str(tmp), str(final), str(self.tmp / "best.pth.tar")])
        self.assertEqual(ckpts[1]["renamed_from"], str(tmp))
        self.assertTrue(final.exists() is False and (self.tmp / "best.pth.tar").exists())

    def test_spawned_workers_learn_how_many_the_spawn_started(self):
        import torch.multiprocessing as mp  # noqa: PLC0415
        try:
            mp.spawn(_write_spawned_env, args=(str(self.tmp),), nprocs=2)
        finally:
            os.environ.pop("BIGMAC_PROBE_SPAWNED_NPROCS", None)
        self.assertEqual([(self.tmp / f"worker{i}").read_text() for i in range(2)], ["2", "2"])

    # ---- the seed the model was made with -------------------------------------------------
    def test_model_seed_is_the_one_in_effect_at_its_first_parameter(self):
        torch.manual_seed(7)
        data = ItemSeeded()
        self.assertEqual(data[5].shape, (6,))  # the dataset read before the model is built
        model = torch.nn.Sequential(torch.nn.Linear(6, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1))
        self.assertFalse(getattr(torch.nn.Module.register_parameter, "_bigmac_probe", False),
                         "unwrapped after the first parameter")
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for x in torch.utils.data.DataLoader(data, batch_size=4):  # and after: each item seeds
            model(x).sum().backward()
            opt.step()
            opt.zero_grad()
        evs = self.events()
        (run,), (model_ev,) = of(evs, "run"), of(evs, "model")
        self.assertEqual((run["seed"], model_ev["seed"]), (7, 7))
        self.assertNotIn("seed_note", model_ev)
        self.assertEqual(len(of(evs, "step")), 2)

    def test_a_model_built_before_any_seed_gets_a_note_and_no_seed(self):
        ItemSeeded()[0]  # the dataset's own seed, restored at once: not the program's
        model = torch.nn.Linear(6, 1)
        torch.manual_seed(3)  # too late for the model's parameters
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        model(torch.ones(2, 6)).sum().backward()
        opt.step()
        evs = self.events()
        (run,), (model_ev,) = of(evs, "run"), of(evs, "model")
        self.assertNotIn("seed", run)
        self.assertNotIn("seed", model_ev)
        self.assertEqual(model_ev["seed_note"], NO_SEED_NOTE)
        self.assertEqual(NO_SEED_NOTE, "no torch.manual_seed before the model's parameters were created")
        # Parameters no nn.Module made: the seed they were made with is not known at all.
        self.restart()
        torch.manual_seed(4)
        w = torch.nn.Parameter(torch.randn(3))
        (w * w).sum().backward()
        torch.optim.SGD([w], lr=0.1).step()
        (model_ev,) = of(self.events(), "model")
        self.assertEqual((model_ev.get("seed"), model_ev["seed_note"]), (None, NO_MODULE_NOTE))


if __name__ == "__main__":
    unittest.main()
