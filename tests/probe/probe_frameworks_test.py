#!/usr/bin/env python3
"""In-process tests of the probe with the frameworks programs train through
(probe/bigmac_probe/frameworks.py, docs/frameworks.md): the Hugging Face Trainer, accelerate's
Accelerator and Lightning's Trainer, real ones (the PyTorch 2.x virtualenv's pinned versions,
requirements/torch2.txt), each on a tiny model on CPU:

- the `framework` event says what each decided (batch arithmetic, accumulation, devices);
- the probe counts the framework's optimizer steps, not its micro-batches: Lightning steps
  through closures, the Trainer divides the loss for accumulation, accelerate's optimizer
  wrapper skips the inner step() between syncs;
- the step values are the framework's own (the Trainer's log_history at full precision).

    BIGMAC_TEST_PYTHON=/venv/bin/python  $BIGMAC_TEST_PYTHON probe_frameworks_test.py [-v]

On an interpreter without the frameworks (Debian's torch 1.13) every case is skipped, saying so.
"""
import importlib.util
import json
import logging
import math
import os
import sys
import tempfile
import unittest
import warnings
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "probe"))

from bigmac_probe.patch_set import PatchSet  # noqa: E402
from bigmac_probe.probe import Probe  # noqa: E402
from bigmac_probe.probe_settings import ProbeSettings  # noqa: E402
from bigmac_probe.torch_patches import instrument_torch  # noqa: E402


def _has(module):
    return importlib.util.find_spec(module) is not None


TORCH2 = int(torch.__version__.split(".")[0]) >= 2
NEEDS = "the frameworks' pinned versions are in the PyTorch 2.x virtualenv (scripts/torch2-venv)"
os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing here may download
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


class Frameworks(unittest.TestCase):
    """A fresh probe per case, in this process's torch; the hooks go in the frameworks' classes
    when the case imports them (or at once when imported already) and come out afterwards."""

    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="bigmac-probe-fw-")
        self.tmp = Path(self._tmp.name)
        self.start()

    def start(self, **settings):
        self.probe = Probe(ProbeSettings(log_template=str(self.tmp / "rank{rank}.jsonl"), **settings),
                           environ={})
        self.patches = PatchSet()
        instrument_torch(self.probe, self.patches, torch)

    def tearDown(self):
        self.patches.restore()
        self.probe.log.close()
        self._tmp.cleanup()

    def events(self, ev=None):
        path = self.tmp / "rank0.jsonl"
        out = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
        return [e for e in out if ev is None or e["ev"] == ev]

    @unittest.skipUnless(TORCH2 and _has("lightning"), NEEDS)
    def test_lightning_steps_through_closures_count_once_with_every_micro_batchs_loss(self):
        import lightning as L  # noqa: PLC0415

        losses = []

        class Regression(L.LightningModule):
            def __init__(self):
                super().__init__()
                self.layer = torch.nn.Linear(6, 1)

            def training_step(self, batch, batch_idx):
                x, y = batch
                loss = torch.nn.functional.mse_loss(self.layer(x), y)
                losses.append(loss.item())
                return loss

            def configure_optimizers(self):
                return torch.optim.SGD(self.parameters(), lr=0.05)

        torch.manual_seed(3)
        data = torch.utils.data.TensorDataset(torch.randn(48, 6), torch.randn(48, 1))
        os.environ["PL_TRAINER_ENABLE_MODEL_SUMMARY"] = "0"  # a Trainer default from the environment
        try:
            trainer = L.Trainer(max_steps=3, accumulate_grad_batches=2, gradient_clip_val=100.0,
                                logger=False, enable_checkpointing=False, enable_progress_bar=False,
                                default_root_dir=str(self.tmp))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                trainer.fit(Regression(), torch.utils.data.DataLoader(data, batch_size=4))
        finally:
            del os.environ["PL_TRAINER_ENABLE_MODEL_SUMMARY"]
        (fw,) = self.events("framework")
        self.assertEqual((fw["framework"], fw["object"], fw["version"]), ("lightning", "Trainer", L.__version__))
        self.assertEqual((fw["devices"], fw["num_nodes"], fw["planned_world_size"]), (1, 1, 1))
        self.assertEqual((fw["strategy"], fw["accumulate_grad_batches"], fw["max_steps"]),
                         ("SingleDeviceStrategy", 2, 3))
        # What the program passed, not the defaults the environment gave.
        self.assertIn("accumulate_grad_batches", fw["given"])
        self.assertNotIn("devices", fw["given"])
        self.assertNotIn("enable_model_summary", fw["given"])
        self.assertEqual(fw["env_defaults"], ["PL_TRAINER_ENABLE_MODEL_SUMMARY"])
        steps = self.events("step")
        self.assertEqual([s["global_step"] for s in steps], [0, 1, 2])
        self.assertEqual(trainer.global_step, 3)
        for step, (first, second) in zip(steps, zip(losses[0::2], losses[1::2])):
            # Lightning divides each micro-batch's loss by the accumulation before backward().
            self.assertEqual(step["loss_count"], 2)
            self.assertAlmostEqual(step["loss"], (first + second) / 2, places=6)

    @unittest.skipUnless(TORCH2 and _has("transformers"), NEEDS)
    def test_hf_trainer_arithmetic_and_its_own_logged_values(self):
        from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments  # noqa: PLC0415
        from transformers.utils import logging as hf_logging  # noqa: PLC0415

        hf_logging.set_verbosity_error()
        torch.manual_seed(0)
        model = GPT2LMHeadModel(GPT2Config(n_embd=16, n_layer=1, n_head=2, n_positions=16, vocab_size=64))
        tokens = torch.randint(0, 64, (64, 16), generator=torch.Generator().manual_seed(1))
        data = [{"input_ids": t, "labels": t} for t in tokens]
        args = TrainingArguments(output_dir=str(self.tmp / "out"), per_device_train_batch_size=4,
                                 gradient_accumulation_steps=3, max_steps=3, logging_steps=1,
                                 learning_rate=1e-3, max_grad_norm=1e6, report_to="none",
                                 save_strategy="no", use_cpu=True, disable_tqdm=True, seed=5)
        trainer = Trainer(model=model, args=args, train_dataset=data)
        logging.disable(logging.WARNING)
        try:
            trainer.train()
        finally:
            logging.disable(logging.NOTSET)
        frameworks = {e["framework"]: e for e in self.events("framework")}
        hf = frameworks["transformers"]
        self.assertEqual((hf["per_device_train_batch_size"], hf["gradient_accumulation_steps"], hf["world_size"]),
                         (4, 3, 1))
        self.assertEqual(hf["samples_per_step"], 12)
        self.assertEqual((hf["max_steps"], hf["logging_steps"], hf["seed"]), (3, 1, 5))
        # The Trainer's own Accelerator is built too, and accumulates nothing itself.
        self.assertEqual(frameworks["accelerate"]["gradient_accumulation_steps"], 1)
        steps = self.events("step")
        logged = [h for h in trainer.state.log_history if "loss" in h]
        self.assertEqual([s["global_step"] for s in steps], [0, 1, 2])
        # Its global_step is 1 after the first optimizer step: the probe's step k is its k + 1.
        self.assertEqual([h["step"] for h in logged], [1, 2, 3])
        for step, entry in zip(steps, logged):
            self.assertEqual(step["loss_count"], 3)
            self.assertEqual(step["sample_count"], 12)
            self.assertTrue(math.isclose(step["loss"], entry["loss"], rel_tol=1e-5), (step, entry))
            self.assertTrue(math.isclose(step["grad_norm"], entry["grad_norm"], rel_tol=1e-5), (step, entry))

    @unittest.skipUnless(TORCH2 and _has("accelerate"), NEEDS)
    def test_accelerate_accumulation_steps_the_inner_optimizer_once_a_sync(self):
        from accelerate import Accelerator  # noqa: PLC0415
        from accelerate.state import AcceleratorState, GradientState, PartialState  # noqa: PLC0415

        for state in (AcceleratorState, GradientState, PartialState):
            state._reset_state()
        accelerator = Accelerator(cpu=True, gradient_accumulation_steps=2)
        torch.manual_seed(2)
        model = torch.nn.Linear(4, 1)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        data = torch.utils.data.DataLoader(torch.randn(24, 4), batch_size=4)
        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0 / (step + 1))
        model, optimizer, data, scheduler = accelerator.prepare(model, optimizer, data, scheduler)
        micro = []
        for x in data:
            with accelerator.accumulate(model):
                loss = model(x).pow(2).mean()
                micro.append(loss.item())
                accelerator.backward(loss)
                optimizer.step()  # the wrapper's: the inner SGD steps every second call
                scheduler.step()  # the wrapper's: once per inner step, num_processes times
                optimizer.zero_grad()
        fw, prepared = self.events("framework")
        self.assertEqual((fw["framework"], fw["num_processes"], fw["gradient_accumulation_steps"]),
                         ("accelerate", 1, 2))
        self.assertEqual(fw["distributed_type"], "DistributedType.NO")
        self.assertEqual((prepared["object"], prepared["scheduler"]), ("AcceleratedScheduler", "LambdaLR"))
        self.assertEqual((prepared["step_with_optimizer"], prepared["split_batches"]), (True, False))
        steps = self.events("step")
        self.assertEqual([s["global_step"] for s in steps], [0, 1, 2])
        # The lr each step applied: the scheduler stepped once per optimizer step (one process).
        self.assertEqual([s["lr"] for s in steps], [0.1, 0.1 / 2, 0.1 / 3])
        for step, (first, second) in zip(steps, zip(micro[0::2], micro[1::2])):
            # accelerator.backward divides by the accumulation: the sum is the mean.
            self.assertEqual(step["loss_count"], 2)
            self.assertAlmostEqual(step["loss"], (first + second) / 2, places=6)

    @unittest.skipUnless(TORCH2 and _has("accelerate"), NEEDS)
    def test_a_failure_in_the_framework_hook_switches_the_probe_off_and_the_program_goes_on(self):
        from accelerate import Accelerator  # noqa: PLC0415
        from accelerate.state import AcceleratorState, GradientState, PartialState  # noqa: PLC0415

        self.patches.restore()
        self.start(fault="framework")
        for state in (AcceleratorState, GradientState, PartialState):
            state._reset_state()
        accelerator = Accelerator(cpu=True)
        self.assertEqual(accelerator.num_processes, 1)
        self.assertFalse(self.probe.failsafe.active)
        self.assertEqual(self.probe.failsafe.failure[0], "framework")
        self.assertEqual(self.events("framework"), [])


if __name__ == "__main__":
    unittest.main()
