"""The training frameworks' own arithmetic, read where they keep it (docs/frameworks.md).

The Hugging Face `Trainer`, accelerate's `Accelerator` and Lightning's `Trainer` each decide
things the probe cannot see in torch alone: the batch arithmetic (per-device batch ×
accumulation × world size), their own step counter, and for Lightning how many processes its
strategy runs with. Right after one of them is built, the probe writes one `framework` event
with what it decided, so `adopt` can name the arithmetic and draft the settings that make each
gate's layout the one the framework runs (a Lightning Trainer left at `devices="auto"` runs one
device per process whatever the launcher started: `PL_TRAINER_DEVICES` sets it).

Nothing is imported here: a hook goes in when the program imports the framework's module, and
it only reads attributes of the object the program built (no call into the framework that could
change its state). Every hook runs through the probe's failsafe (`framework`)."""
import functools
import os
import sys

from .import_hook import PostImportHook
from .torch_patches import MARK

# Lightning's Trainer takes defaults for its arguments from PL_TRAINER_<NAME> (its
# `_defaults_from_env_vars`); an argument the program passes explicitly wins over them.
LIGHTNING_ENV_PREFIX = "PL_TRAINER_"


def _version(module_name):
    """The version of the package a module belongs to, as the program imported it."""
    package = sys.modules.get(module_name.split(".")[0])
    return str(getattr(package, "__version__", ""))


def _number(value):
    """An int or float as it is; anything else (a string like "auto", a list) as its text."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return value
    return None if value is None else str(value)


def _env_world_size():
    try:
        return int(os.environ.get("WORLD_SIZE", ""))
    except ValueError:
        return None


def transformers_trainer_fields(trainer):
    """A transformers.Trainer once built: its TrainingArguments' batch arithmetic and step
    settings, and the accelerate state it made. `global_step` in its logs counts optimizer
    steps from 1 (after the first); the probe's from 0."""
    args = trainer.args
    per_device = int(args.per_device_train_batch_size)
    accum = int(args.gradient_accumulation_steps)
    world = int(args.world_size)
    # train_batch_size is per_device × the GPUs one process drives (n_gpu, DataParallel).
    per_process = int(getattr(args, "train_batch_size", per_device))
    fields = {"framework": "transformers", "object": type(trainer).__name__,
              "version": _version("transformers"),
              "per_device_train_batch_size": per_device, "gradient_accumulation_steps": accum,
              "world_size": world, "samples_per_step": per_process * accum * world,
              "max_steps": _number(args.max_steps), "num_train_epochs": _number(args.num_train_epochs),
              "logging_steps": _number(args.logging_steps), "learning_rate": _number(args.learning_rate),
              "seed": _number(args.seed), "output_dir": _number(args.output_dir),
              "step_counter": "state.global_step, 1 after the first optimizer step"}
    accelerator = getattr(trainer, "accelerator", None)
    if accelerator is not None:
        fields["distributed_type"] = str(getattr(accelerator, "distributed_type", ""))
        fields["num_processes"] = _number(getattr(accelerator, "num_processes", None))
    return fields


def accelerator_fields(accelerator):
    """An accelerate.Accelerator once built: how many processes it joined (1 with
    DistributedType.NO: a CPU process under a launcher that was not given cpu=True runs alone),
    and its own accumulation (its optimizer wrapper skips the inner step() between syncs)."""
    state = getattr(accelerator, "state", None)
    device = getattr(accelerator, "device", None)
    return {"framework": "accelerate", "object": type(accelerator).__name__,
            "version": _version("accelerate"),
            "distributed_type": str(getattr(accelerator, "distributed_type", "")),
            "num_processes": _number(getattr(accelerator, "num_processes", None)),
            "process_index": _number(getattr(accelerator, "process_index", None)),
            "gradient_accumulation_steps": _number(getattr(accelerator, "gradient_accumulation_steps", None)),
            "mixed_precision": _number(getattr(accelerator, "mixed_precision", None)),
            "device": None if device is None else str(device),
            "backend": _number(getattr(state, "backend", None)),
            "launcher_world_size": _env_world_size()}


def accelerated_scheduler_fields(accelerator, scheduler):
    """A scheduler accelerate's prepare() wrapped: unless split_batches, it steps the scheduler
    num_processes times per optimizer step (it takes the per-process batch to have grown by
    that much), so at a gate that keeps the samples per step with fewer accumulation steps its
    schedule runs num_processes times faster than the single process's."""
    inner = getattr(scheduler, "scheduler", scheduler)
    return {"framework": "accelerate", "object": type(scheduler).__name__,
            "version": _version("accelerate"), "scheduler": type(inner).__name__,
            "step_with_optimizer": _number(getattr(scheduler, "step_with_optimizer", None)),
            "split_batches": _number(getattr(scheduler, "split_batches", None)),
            "num_processes": _number(getattr(accelerator, "num_processes", None))}


def lightning_trainer_fields(trainer, given):
    """A Lightning Trainer once built: the devices and nodes it will run (devices × num_nodes
    is the world its strategy forms, whatever the launcher started), its strategy, its
    accumulation and step bound, and which of these the program passed itself (`given`) as
    opposed to the defaults, which PL_TRAINER_* variables can set (`env_defaults`)."""
    devices = _number(getattr(trainer, "num_devices", None))
    nodes = _number(getattr(trainer, "num_nodes", None))
    strategy = getattr(trainer, "strategy", None)
    environment = getattr(strategy, "cluster_environment", None)
    fields = {"framework": "lightning", "object": type(trainer).__name__,
              "version": _version(type(trainer).__module__),
              "devices": devices, "num_nodes": nodes,
              "planned_world_size": devices * nodes if isinstance(devices, int) and isinstance(nodes, int) else None,
              "strategy": type(strategy).__name__ if strategy is not None else None,
              "cluster_environment": type(environment).__name__ if environment is not None else None,
              "accumulate_grad_batches": _number(getattr(trainer, "accumulate_grad_batches", None)),
              "max_steps": _number(getattr(trainer, "max_steps", None)),
              "max_epochs": _number(getattr(trainer, "max_epochs", None)),
              "given": sorted(given),
              "env_defaults": sorted(k for k in os.environ if k.startswith(LIGHTNING_ENV_PREFIX)),
              "launcher_world_size": _env_world_size(),
              "step_counter": "trainer.global_step: optimizer steps, from 0"}
    return fields


def _wrap_init(probe, patches, cls, describe):
    """cls.__init__, then one `framework` event from describe(self, args, kwargs) for the
    object the program built; a subclass whose __init__ calls super() writes it once."""
    original = cls.__init__
    if getattr(original, MARK, False):
        return

    @functools.wraps(original)
    def __init__(self, *args, **kwargs):
        outermost = not getattr(self, "_bigmac_framework_seen", False)
        if outermost:
            try:
                object.__setattr__(self, "_bigmac_framework_seen", True)
            except (AttributeError, TypeError):
                outermost = False  # an object that takes no attribute: not described
        original(self, *args, **kwargs)
        if outermost and probe.failsafe.active:
            probe.guard("framework", lambda: probe._write("framework", describe(self, args, kwargs)))
    setattr(__init__, MARK, True)
    patches.replace(cls, "__init__", __init__)


def _wrap_prepare_scheduler(probe, patches, cls):
    """Accelerator.prepare_scheduler (prepare() calls it for each scheduler), then one
    `framework` event for the wrapper it returns, once per wrapper."""
    original = getattr(cls, "prepare_scheduler", None)
    if original is None or getattr(original, MARK, False):
        return

    @functools.wraps(original)
    def prepare_scheduler(self, *args, **kwargs):
        result = original(self, *args, **kwargs)
        if probe.failsafe.active and not getattr(result, "_bigmac_framework_seen", False):
            def describe():
                object.__setattr__(result, "_bigmac_framework_seen", True)
                probe._write("framework", accelerated_scheduler_fields(self, result))
            probe.guard("framework", describe)
        return result
    setattr(prepare_scheduler, MARK, True)
    patches.replace(cls, "prepare_scheduler", prepare_scheduler)


def _hook(probe, patches, module, class_name, describe):
    cls = getattr(module, class_name, None)
    if isinstance(cls, type):
        _wrap_init(probe, patches, cls, describe)
        if class_name == "Accelerator":
            _wrap_prepare_scheduler(probe, patches, cls)


# The module that defines each class (a post-import hook per module: the probe never imports a
# framework the program did not).
_HOOKS = (
    ("transformers.trainer", "Trainer", lambda self, a, kw: transformers_trainer_fields(self)),
    ("accelerate.accelerator", "Accelerator", lambda self, a, kw: accelerator_fields(self)),
    ("lightning.pytorch.trainer.trainer", "Trainer",
     lambda self, a, kw: lightning_trainer_fields(self, kw.keys())),
    ("pytorch_lightning.trainer.trainer", "Trainer",
     lambda self, a, kw: lightning_trainer_fields(self, kw.keys())),
)


_pending = []  # this process's hooks still waiting for their module's import


def instrument_frameworks(probe, patches):
    """A post-import hook for each framework's module (at once for one already imported). A
    probe put in again (the tests make one per case) replaces the hooks of the one before: two
    hooks for one module would wrap its loader twice, and the older probe's class wrapper would
    stand in for the newer one's."""
    while _pending:
        _pending.pop().remove()
    for name, class_name, describe in _HOOKS:
        def on_import(module, class_name=class_name, describe=describe):
            probe.guard("framework", _hook, probe, patches, module, class_name, describe)
        hook = PostImportHook(name, on_import)
        hook.install()
        if hook in sys.meta_path:
            _pending.append(hook)
