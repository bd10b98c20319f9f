"""Real public training programs (tests/programs/*, README.md there) brought up as a user would:
`bigmac-bringup adopt -- CMD` then `run-all` with the drafted configuration unchanged, each
reaching the verdict the program deserves; and with planted data-parallel faults (`lr x
world_size`, the model not wrapped in DDP, every rank reading the same samples, gradient sync
never switched on, gradients summed instead of averaged, accumulation reduced at the wrong
micro-step), the distributed ones stop at `dp`
with the check that names the fault.

Each case copies the program into a scratch folder, applies its platform patches (CUDA -> CPU,
`NN-*.patch`), runs its data generator when it has one, and runs the real binaries there.
`python3 program_test.py NAME [PLANT]` runs one program's bring-up (with that plant) and prints
what it did (no asserts).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
BIN = os.environ.get("BIGMAC_BIN_DIR", os.path.join(HERE, "..", "..", "build", "bin"))
TOOL = os.path.join(BIN, "bigmac-bringup")
PY = "/usr/bin/python3"  # Debian's, with torch 1.13 (a python3 earlier on PATH may lack it)
# The PyTorch 2.x virtualenv's python (scripts/torch2-venv), for programs marked "torch": 2
# (CTest sets it where the build was configured with BIGMAC_TORCH2_PYTHON).
TORCH2_PY = os.environ.get("BIGMAC_TORCH2_PYTHON", "")


def python_of(name):
    """The interpreter a program runs on: Debian's torch 1.13, or torch 2.x for "torch": 2."""
    if PROGRAMS[name].get("torch") != 2:
        return PY
    if not TORCH2_PY:
        raise unittest.SkipTest(f"{name} needs PyTorch 2.x: set BIGMAC_TORCH2_PYTHON to the "
                                "python scripts/torch2-venv prints")
    return TORCH2_PY


def starter_of(name):
    """The words before the program's script: its interpreter, or the launcher it is started with
    (a program's "launch": `accelerate launch ...`, accelerate being the one beside the
    interpreter)."""
    python = python_of(name)
    launch = PROGRAMS[name].get("launch")
    if not launch:
        return [python]
    return [os.path.join(os.path.dirname(python), launch[0])] + launch[1:]

# How a user runs each program on one device (small sizes, its own flags), and what a right
# bring-up says of it: the status of every gate and, for a gate that must fail, the check.
PROGRAMS = {
    "llama2c": {
        "data": ["make_data.py"],
        "command": ["train.py", "--compile=False", "--device=cpu", "--dtype=float32",
                    "--vocab_source=custom", "--vocab_size=512", "--dim=64", "--n_layers=2",
                    "--n_heads=4", "--n_kv_heads=4", "--max_seq_len=64", "--batch_size=8",
                    "--gradient_accumulation_steps=2", "--max_iters=10", "--eval_interval=5",
                    "--eval_iters=2", "--warmup_iters=2"],
        "distributed": True,
    },
    # llama2c with the fix its dp verdict proposes (each rank reads its own share of the chunks):
    # the same folder, command and data, one more patch.
    "llama2c_sharded": {"folder": "llama2c", "patch": "fixed-sharded.patch"},
    "rasbt_ddp_torchrun": {"command": ["DDP-script-torchrun.py"], "distributed": True},
    # The same script as the book runs it: torch.multiprocessing.spawn starts the workers.
    "rasbt_ddp_spawn": {"command": ["DDP-script.py"], "distributed": True,
                        "adopt_says": "missing: no flag hands over train.micro_batch_size"},
    "vicreg": {
        "data": ["fake_image_folder.py", "data"],
        "command": ["main_vicreg.py", "--data-dir", "data", "--exp-dir", "exp", "--arch",
                    "resnet34", "--mlp", "64", "--epochs", "1", "--batch-size", "2",
                    "--num-workers", "0", "--device", "cpu", "--log-freq-time", "0"],
        "distributed": True,
    },
    "dcgan": {
        "command": ["main.py", "--dataset", "fake", "--batchSize", "8", "--imageSize", "64",
                    "--nz", "16", "--ngf", "8", "--ndf", "8", "--workers", "0", "--niter", "2",
                    "--manualSeed", "1", "--outf", "out"],
    },
    "vae": {
        "data": ["fake_digits.py", "../data"],
        "command": ["main.py", "--batch-size", "16", "--epochs", "1", "--log-interval", "1"],
    },
    "siamese_network": {
        "data": ["fake_digits.py", "../data"],
        "command": ["main.py", "--batch-size", "16", "--test-batch-size", "64", "--epochs", "1",
                    "--log-interval", "1"],
    },
    "time_sequence_prediction": {"data": ["make_data.py"], "command": ["train.py", "--steps", "15"]},
    "regression": {"command": ["main.py"]},
    # Lightning's own example LightningModule (docs/frameworks.md): no flags at all; the user's
    # environment sets a Trainer default (PL_TRAINER_ACCUMULATE_GRAD_BATCHES), as Lightning
    # allows for every Trainer argument the program leaves at its default.
    "lightning_transformer": {"data": ["make_data.py"], "command": ["transformer.py"],
                              "torch": 2, "distributed": True,
                              "env": {"PL_TRAINER_ACCUMULATE_GRAD_BATCHES": "2"}},
    # transformers' run_clm.py: the Hugging Face Trainer fine-tuning a GPT-2 built from a small
    # config (dropout off: with it the masks, drawn per process, differ by layout and no two
    # layouts compute the same loss from the same samples), a local tokenizer and text
    # (make_data.py), on CPU (--use_cpu); nothing may download.
    "hf_run_clm": {
        "data": ["make_data.py"],
        "command": ["run_clm.py", "--model_type", "gpt2", "--config_overrides",
                    "n_embd=32,n_layer=2,n_head=2,n_positions=64,vocab_size=256,resid_pdrop=0,"
                    "embd_pdrop=0,attn_pdrop=0",
                    "--tokenizer_name", "tokenizer", "--train_file", "data/train.txt", "--do_train",
                    "--block_size", "32", "--per_device_train_batch_size", "4",
                    "--gradient_accumulation_steps", "2", "--max_steps", "10", "--learning_rate",
                    "1e-3", "--seed", "42", "--output_dir", "out", "--report_to", "none",
                    "--save_strategy", "no", "--logging_steps", "1", "--use_cpu"],
        "torch": 2, "distributed": True,
        "env": {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"},
    },
    # accelerate's gradient accumulation example: a BERT classifier (a tiny config) on local
    # sentence pairs; only its accumulation is a flag (the batch size of 16 is in the code), and
    # on this CPU-only host `--cpu` makes its Accelerator join the launcher's processes.
    "accelerate_grad_accum": {
        "data": ["make_data.py"],
        "command": ["gradient_accumulation.py", "--gradient_accumulation_steps", "2", "--cpu"],
        "torch": 2, "distributed": True,
        "env": {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"},
    },
    # The same with the fix its dp verdict proposes: the scheduler stepped once per optimizer step.
    "accelerate_grad_accum_fixed": {"folder": "accelerate_grad_accum",
                                    "patch": "fixed-scheduler-steps.patch"},
    # The fixed program adopted as its README starts it, through `accelerate launch` (one
    # process; each gate then runs accelerate launch with its own layout).
    "accelerate_launch": {"folder": "accelerate_grad_accum", "patch": "fixed-scheduler-steps.patch",
                          "launch": ["accelerate", "launch", "--num_processes", "1",
                                     "--mixed_precision", "no"]},
    # pytorch/examples' FSDP2 example: a small Transformer built on the meta device, each block
    # and the whole model fully_shard()ed, 10 steps of random tokens, rank 0 saving a full
    # checkpoint under checkpoints/ that the next run resumes from; no flags, no logging. As
    # published its blocks keep torch.empty's memory (README.md), so its verdict is whatever the
    # allocator held: it is brought up with that fixed (fixed-init.patch), then with the fixes
    # the verdicts propose (fixed-data-parallel.patch).
    "fsdp2_init": {"folder": "fsdp2", "patch": "fixed-init.patch", "command": ["example.py"],
                   "torch": 2, "distributed": True},
    "fsdp2_fixed": {"folder": "fsdp2", "patch": "fixed-data-parallel.patch",
                    "command": ["example.py", "--batch-size", "16", "--checkpoint-dir", "checkpoints"],
                    "torch": 2, "distributed": True},
}
for _key in ("data", "command", "distributed"):
    PROGRAMS["llama2c_sharded"][_key] = PROGRAMS["llama2c"][_key]
for _key in ("data", "command", "distributed", "torch", "env"):
    PROGRAMS["accelerate_grad_accum_fixed"][_key] = PROGRAMS["accelerate_grad_accum"][_key]
    PROGRAMS["accelerate_launch"][_key] = PROGRAMS["accelerate_grad_accum"][_key]


def run(argv, cwd, env=None, timeout=900):
    full_env = dict(os.environ, OMP_NUM_THREADS="1", **(env or {}))
    p = subprocess.run(argv, cwd=cwd, env=full_env, capture_output=True, text=True,
                       timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def prepare(name, root, planted=None):
    """The program in root/NAME with its platform patches (a variant's own patch, the planted
    fault's)."""
    spec = PROGRAMS[name]
    src = os.path.join(HERE, spec.get("folder", name))
    dst = os.path.join(root, name)
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("SOURCE", "*.patch"))
    patches = sorted(p for p in os.listdir(src) if p[:2].isdigit() and p.endswith(".patch"))
    if "patch" in spec:
        patches.append(spec["patch"])
    if planted:
        patches.append(PLANTS[planted][0])
    for patch in patches:
        code, out, err = run(["patch", "-s", "-p1", "-i", os.path.join(src, patch)], dst)
        if code != 0:
            raise RuntimeError(f"{name}: {patch} does not apply: {out}{err}")
    if "data" in spec:
        # Our own generators: shared ones beside this file, a program's own in its folder.
        script, *args = spec["data"]
        shared = os.path.join(HERE, script)
        code, out, err = run([python_of(name), shared if os.path.exists(shared) else script] + args, dst)
        if code != 0:
            raise RuntimeError(f"{name}: {spec['data']} failed: {out}{err}")
    return dst


# An explicit band for dp's loss and grad norm, the policy a layout-dependent order gets: the
# invariants (replicas in sync, every sample once) must stop a fault under it all the same.
BAND = ["--set", 'gates.dp.loss_policy="band"', "--set", 'gates.dp.grad_norm_policy="band"']


def bring_up(name, root, planted=None, band=False):
    """adopt then run-all in the program's folder: (adopt result, run-all result, summary)."""
    spec = PROGRAMS[name]
    folder = prepare(name, root, planted)
    # A plant may need other flags to show (accumulation left after dividing by the world).
    changed = PLANTS[planted][3] if planted and len(PLANTS[planted]) > 3 else {}
    command = [changed.get(word, word) for word in spec["command"]]
    adopt = run([TOOL, "adopt", "-o", "bringup.toml", "--"] + starter_of(name) + command, folder,
                spec.get("env"))
    if adopt[0] != 0:
        return adopt, None, None
    run_dir = os.path.join(root, "run")
    result = run([TOOL, "run-all", "-c", "bringup.toml", "--ci", "--run-dir", run_dir]
                 + (BAND if band else []), folder, spec.get("env"))
    summary = None
    path = os.path.join(run_dir, "summary.json")
    if os.path.exists(path):
        with open(path) as f:
            summary = json.load(f)
    return adopt, result, summary


def said(result):
    """What a run printed, for a failed assertion: the ends of stdout and of stderr (an exit 3
    says why it could not run a gate on stderr only)."""
    return f"stdout:\n{result[1][-3000:]}\nstderr:\n{result[2][-3000:]}"


def statuses(summary):
    return {g["id"]: g["status"] for g in summary["gates"]} if summary else {}


NO_STAGES = {"pp2": "not applicable", "shapes": "not applicable"}
# What a right bring-up says of each program: the status of every gate, the check that stops
# the failing one and a phrase of its diagnosis; None for a program adopt must refuse.
EXPECTED = {
    # Inclusive --max_iters, accumulation divided by the world size, rank 0 prints, but each
    # rank shuffles the whole shard with its own seed: the ranks read the same chunks, where
    # the single process read each once.
    "llama2c": ({"single": "passed", "dp": "failed", "target": "pending", **NO_STAGES},
                "sample_coverage", "the ranks do not split the data between them"),
    # Each rank its own share, in its own order: every applicable gate passes, dp and target
    # compared as a band (the order depends on the layout, proven).
    "llama2c_sharded": ({"single": "passed", "dp": "passed", "target": "passed", **NO_STAGES},
                        None, None),
    # No flags at all: each rank runs the single process's whole step.
    "rasbt_ddp_torchrun": ({"single": "passed", "dp": "failed", "target": "pending", **NO_STAGES},
                           "samples_per_step", "takes neither its batch size nor its accumulation"),
    # Its workers run in place, one per rank the tool starts: the same verdict as torchrun's.
    "rasbt_ddp_spawn": ({"single": "passed", "dp": "failed", "target": "pending", **NO_STAGES},
                        "samples_per_step", "takes neither its batch size nor its accumulation"),
    # Seeds nothing before its model: no run repeats the baseline.
    "vicreg": ({"single": "passed", "dp": "failed", "target": "pending", **NO_STAGES},
               "param_digest", "no torch.manual_seed ran before the model was built"),
    # One process programs: not distributed yet.
    "dcgan": ({"single": "passed", "dp": "failed", "target": "pending", **NO_STAGES},
              "process_group_formed", "none called torch.distributed.init_process_group"),
    "vae": ({"single": "passed", "dp": "failed", "target": "pending", **NO_STAGES},
            "process_group_formed", "none called torch.distributed.init_process_group"),
    "siamese_network": ({"single": "passed", "dp": "failed", "target": "pending", **NO_STAGES},
                        "process_group_formed", "none called torch.distributed.init_process_group"),
    "time_sequence_prediction": (
        {"single": "passed", "dp": "failed", "target": "pending", **NO_STAGES},
        "process_group_formed", "none called torch.distributed.init_process_group"),
    # Parameters updated by hand, one loss printed at the end: nothing to bring up.
    "regression": None,
    # Its Trainer left at devices="auto" runs one device per process: the draft hands it each
    # gate's processes (PL_TRAINER_DEVICES), and its accumulation (PL_TRAINER_ACCUMULATE_...),
    # which dp halves; DDP's sampler deals other samples than the single process's: a band.
    "lightning_transformer": ({"single": "passed", "dp": "passed", "target": "passed", **NO_STAGES},
                              None, None),
    # Per-device batch, accumulation per process, DDP's sampler dealing the baseline's samples:
    # every gate compares exactly; the Trainer's rounded log dicts give way to the probe.
    "hf_run_clm": ({"single": "passed", "dp": "passed", "target": "passed", **NO_STAGES}, None, None),
    # accelerate steps the scheduler it prepared once per process at every optimizer step: with
    # the samples per step kept (accumulation 2 -> 1 a rank) its warmup runs twice as fast.
    "accelerate_grad_accum": ({"single": "passed", "dp": "failed", "target": "pending", **NO_STAGES},
                              "lr_vs_baseline",
                              "the logged lr at step 1 is 4e-07, the baseline's 2e-07 (× 2)"),
    # Stepped once per optimizer step, the baseline's samples and schedule: exact everywhere.
    "accelerate_grad_accum_fixed": (
        {"single": "passed", "dp": "passed", "target": "passed", **NO_STAGES}, None, None),
    # The same through accelerate launch: the draft's launcher is accelerate (checked below).
    "accelerate_launch": ({"single": "passed", "dp": "passed", "target": "passed", **NO_STAGES},
                          None, None),
    # Its 10-step loop ends in a save under checkpoints/ that its next start loads: the trials,
    # bounded at 5 steps, never see it, and dp resumes what single wrote.
    "fsdp2_init": ({"single": "passed", "dp": "failed", "target": "pending", **NO_STAGES},
                   "fresh_start", "which gate single (attempt 1), step 9 wrote"),
    # Its own checkpoint folder, batch and rows per rank, a mean loss, a seeded model sharded:
    # the whole model the same on 1 and 2 processes, the baseline's samples split between them.
    "fsdp2_fixed": ({"single": "passed", "dp": "passed", "target": "passed", **NO_STAGES}, None, None),
}
# Faults planted in copies of programs that pass dp when healthy: the patch, and the check that
# must stop dp (None: any dp check; the lr fault shows in the loss, whichever check sees it).
# A plant that must stop another gate (a pipeline's) names it in PLANT_GATES.
PLANTS = {
    "lr_world": ("planted-lr-world.patch", None, None),
    # Gradients never reduced; each rank also seeds its own init, and nothing broadcasts it:
    # the replicas start apart, before the first step.
    "not_wrapped": ("planted-not-wrapped.patch", "param_digest", "the data-parallel replicas start apart"),
    # Wrapped (equal start), but gradients never reduced: apart after the first step.
    "no_sync": ("planted-no-sync.patch", "replicas_in_sync", "the data-parallel replicas drift apart"),
    # The data seed without the rank: both ranks draw the same micro-batches.
    "same_samples": ("planted-same-samples.patch", "no_duplicate_samples",
                     "read the same micro-batch at step 0"),
    # A comm hook that sums: replicas agree, gradients are world_size x the baseline's.
    "summed": ("planted-summed.patch", None, None),
    # Gradients reduced after the first micro-step, not the last: the later micro-steps'
    # gradients stay each rank's own (4 micro-steps in one process: 2 a rank at dp 2).
    "unsynced_accum": ("planted-unsynced-accum.patch", "replicas_in_sync",
                       "the data-parallel replicas drift apart",
                       {"--gradient_accumulation_steps=2": "--gradient_accumulation_steps=4"}),
}
PLANT_GATES = {}
# Faults of one program only (their patch in its folder), beside the shared ones above.
PLANTS.update({
    # Each rank seeds with its own rank added: random_split gives each rank another training
    # set and DDP's sampler another order, so the ranks read samples another rank reads too.
    "rank_seed": ("planted-rank-seed.patch", "loss_vs_baseline",
                  "the 2 ranks do not split the data between them"),
    # The training DataLoader left out of accelerator.prepare(): every rank reads every batch.
    "unsharded_data": ("planted-unsharded-data.patch", "no_duplicate_samples",
                       "read the same micro-batch at step 0"),
    # FSDP2: each rank seeds its model with its rank; the shards gathered are no model the single
    # process built (no replicas to compare: the whole model's digest against the baseline's).
    "rank_init_seed": ("planted-rank-init-seed.patch", "param_digest", "differ from the baseline's"),
})

# Which plants each program runs (the others already stop at dp for their own reason, or are
# not distributed). rasbt_ddp_torchrun stops at dp healthy too (no batch knob): its lr plant
# shows the fault does not turn that stop into a pass.
PLANTED = {
    # Planted in the sharded copy, which passes dp healthy; the same-samples plant (the rank left
    # out of the data seed) in the original, where it makes the ranks' micro-batches identical.
    "llama2c": ("same_samples",),
    "llama2c_sharded": ("lr_world", "not_wrapped", "no_sync", "summed", "unsynced_accum"),
    "rasbt_ddp_torchrun": ("lr_world",),
    "rasbt_ddp_spawn": ("lr_world",),
    "lightning_transformer": ("rank_seed",),
    "hf_run_clm": ("lr_world",),
    "accelerate_grad_accum_fixed": ("unsharded_data",),
    "fsdp2_fixed": ("rank_init_seed",),
}


class Programs(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="bigmac-program-")

    def tearDown(self):
        shutil.rmtree(self.root, ignore_errors=True)

    def check(self, name, band=False):
        adopt, result, summary = bring_up(name, self.root, band=band)
        expected = EXPECTED[name]
        if expected is None:
            self.assertEqual(adopt[0], 2, adopt[1] + adopt[2])
            self.assertIn("without a torch.optim optimizer the probe can see", adopt[2])
            return
        self.assertEqual(adopt[0], 0, adopt[1] + adopt[2])
        if "adopt_says" in PROGRAMS[name]:
            self.assertIn(PROGRAMS[name]["adopt_says"], adopt[1])
        if "launch" in PROGRAMS[name]:  # the gates run it through its launcher, not torchrun
            with open(os.path.join(self.root, name, "bringup.toml")) as f:
                self.assertIn(f'launcher = "{PROGRAMS[name]["launch"][0]}"', f.read())
        gates, check, phrase = expected
        self.assertIsNotNone(summary, result[1][-3000:] + result[2][-3000:])
        self.assertEqual(statuses(summary), gates, result[1][-4000:])
        self.assertEqual(result[0], 0 if check is None else 1, said(result))
        if check is not None:
            failed = [g for g in summary["gates"] if g["status"] == "failed"]
            self.assertEqual(failed[0].get("failed_check"), check, json.dumps(failed[0])[:3000])
            self.assertIn(phrase, result[1], result[1][-4000:])

    def planted(self, name, plant, band=False):
        adopt, result, summary = bring_up(name, self.root, planted=plant, band=band)
        self.assertEqual(adopt[0], 0, adopt[1] + adopt[2])
        self.assertEqual(result[0], 1, said(result))
        got = statuses(summary)
        gate = PLANT_GATES.get(plant, "dp")
        order = [g["id"] for g in summary["gates"]]
        before = {g: got[g] for g in order[:order.index(gate)]}
        self.assertEqual(got[gate], "failed", result[1][-4000:])
        self.assertTrue(all(s in ("passed", "not applicable") for s in before.values()),
                        f"the gates before {gate}: {before}\n{result[1][-4000:]}")
        _, check, phrase = PLANTS[plant][:3]
        if check is not None:
            failed = next(g for g in summary["gates"] if g["id"] == gate)
            self.assertEqual(failed.get("failed_check"), check, result[1][-4000:])
            self.assertIn(phrase, result[1], result[1][-4000:])


# Cases run again under an explicit band (BAND): the ranks reading the same chunks, and
# gradients never reduced.
BANDED = {"llama2c": None, "llama2c_sharded": "no_sync"}


def _add(name):
    setattr(Programs, f"test_{name}", lambda self: self.check(name))
    for plant in PLANTED.get(name, ()):
        setattr(Programs, f"test_{name}_planted_{plant}",
                lambda self, plant=plant: self.planted(name, plant))
    if name in BANDED and BANDED[name] is None:
        setattr(Programs, f"test_{name}_band", lambda self: self.check(name, band=True))
    elif name in BANDED:
        setattr(Programs, f"test_{name}_planted_{BANDED[name]}_band",
                lambda self: self.planted(name, BANDED[name], band=True))


for _name in PROGRAMS:
    _add(_name)


if __name__ == "__main__":
    if len(sys.argv) in (2, 3) and sys.argv[1] in PROGRAMS:
        with tempfile.TemporaryDirectory(prefix="bigmac-program-") as root:
            plant = sys.argv[2] if len(sys.argv) == 3 else None
            adopt, result, summary = bring_up(sys.argv[1], root, planted=plant)
            print("adopt exit", adopt[0])
            print(adopt[1][-6000:], adopt[2][-3000:])
            if result:
                print("run-all exit", result[0])
                print(result[1][-5000:], result[2][-2000:])
                print(statuses(summary))
        sys.exit(0)
    unittest.main()
