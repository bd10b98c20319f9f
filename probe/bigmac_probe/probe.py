"""The probe: turns what the hooks saw into bigmac-log v1 events (docs/probe.md, "Events").

Every `on_*`/`begin_*`/`end_*` method runs inside Failsafe.call: an exception here switches
the probe off and never reaches the program. The log is opened, and `run` written, at the
first sign of a training program (a process group, a training forward, a backward, a step, a
transfer, a save, a load); a Python process that does none of these (torchrun's own agent, a
tool) leaves no file.

The probe does two things to a program on purpose, both outside the failsafe: the step bound
(BIGMAC_PROBE_MAX_STEPS: refuse_step() raises SystemExit(0) instead of the step past the bound),
and, with BIGMAC_PROBE_SPAWN_IN_PLACE, a torch.multiprocessing.spawn worker run in this process
as the rank the launcher made it (run_in_place, in_place_init)."""
import math
import os
import sys
import time
import weakref

from . import __version__
from .dynamo_shield import run_as_is
from .digests import input_digest, is_digest_step, param_digest, sample_hashes
from .event_log import EventLog
from .failsafe import Failsafe
from .sharded import dtensor_class, sharding_of
from .stacks import StackDump
from .step_tracker import StepTracker
from .tensor_stats import (dtype_name, first_tensor, grad_norms, grad_sum_of_squares,
                           has_trainable_param, learning_rates, optimizer_params, param_summary)
from .torch_patches import MARK


# `seed_note` in `model` when the seed its parameters were made with is not known.
NO_SEED_NOTE = "no torch.manual_seed before the model's parameters were created"
NO_MODULE_NOTE = "no nn.Module parameter was created: the seed of the model's parameters is not known"
# `grad_norm_note` in `step` instead of grad_norm, when a gradient is a DTensor placed Partial.
PARTIAL_GRAD_NOTE = ("a gradient is a partial sum (a DTensor placed Partial): its norm is not the "
                     "sum of the ranks' squares, and the probe adds no collective to reduce it")


def _file_path(f):
    """The absolute path torch.save/torch.load was given: a path, or an open file with a name
    (an in-memory buffer has none and is no checkpoint: None)."""
    if isinstance(f, (str, os.PathLike)):
        path = os.fsdecode(os.fspath(f))
    elif isinstance(getattr(f, "name", None), str):
        path = f.name
    else:
        return None
    return os.path.abspath(path)


# Set by the probe in a program that calls torch.multiprocessing.spawn, before its workers
# start: each worker's `run` event says it was spawned, and by how many (docs/probe.md).
SPAWNED_ENV = "BIGMAC_PROBE_SPAWNED_NPROCS"
# The launcher's rendezvous, which a spawning program overwrites (`os.environ["MASTER_PORT"] =
# "12355"`) for workers that, run in place, join the launcher's process group instead.
RENDEZVOUS_ENV = ("MASTER_ADDR", "MASTER_PORT")


class _FinishedSpawn:
    """What spawn(join=False) returns when its one worker already ran in place: a context whose
    join() says every worker has ended."""

    def __init__(self):
        self.processes = []
        self.error_files = []

    def join(self, timeout=None):  # noqa: ARG002 - torch's ProcessContext.join signature
        return True

    def pids(self):
        return [os.getpid()]


def _env_int(environ, name, default):
    try:
        return int(environ.get(name, ""))
    except ValueError:
        return default


class Probe:
    RNG_STATES_KEPT = 16  # saved RNG states remembered (a dataset restores its own at once)
    REFUSALS_RAISED = 3  # step() calls past the bound answered with SystemExit; then os._exit

    def __init__(self, settings, environ=None, clock=time.time, perf=time.perf_counter):
        self.settings = settings
        self.environ = os.environ if environ is None else environ
        self.log = EventLog(settings.log_template, clock)
        self.failsafe = Failsafe(self._report_failure, settings.fault)
        self.stacks = StackDump()  # the main thread's stack when the watchdog asks (stacks.py)
        self.ledger = None  # the collective ledger (ledger.py), once torch.distributed is hooked
        self.ddp_buckets = None  # DDP's gradient all-reduces into it (ledger.DdpBuckets)
        self.perf = perf
        self.steps = None  # StepTracker, once torch is imported
        self.torch = None
        self.seed = None  # the torch.manual_seed value in effect (a restored RNG state restores it)
        self._rng_states = []  # (weak reference to a get_rng_state() result, the seed then)
        self.param_seen = False  # the process's first nn.Module parameter has been registered
        self.model_seed = None  # self.seed at that moment
        self.ended = False  # the step bound ended the program: `done` is written
        self.refusals = 0  # step() calls refused since
        self.current_scaler = None  # the GradScaler whose step() is running
        self.in_p2p = False  # inside a point-to-point call: the ones it makes are not logged again
        self.model_written = False
        self.saved_paths = set()  # what torch.save wrote: a rename of one moves a checkpoint
        self.batch_written = False  # the model's first training forward is logged
        self.model_ref = None  # weak reference to the module of that forward (sharded.Sharding)
        self._sharding = (None, 0, None)  # (weak reference to the optimizer, its params, Sharding)
        self.rearm_forward = None  # puts the nn.Module.__call__ wrapper back (torch_patches)
        self.sample_hook = None  # the forward pre-hook on the module that takes the input
        self.buffer_hook = None  # the one digesting the model's buffers; False: it has none
        # Read at start-up, before the program can overwrite it: the rendezvous in place workers use.
        self.rendezvous = {k: self.environ[k] for k in RENDEZVOUS_ENV if k in self.environ}
        self.in_place = None  # {"nprocs": asked, ...} once a spawn's worker runs in this process
        self.pipelining = None  # pipeline stages and transfers (pipelining.py, docs/pipelines.md)
        self.tracing = lambda: False  # dynamo_shield.tracing_check: TorchDynamo is tracing the caller
        self.eager_step = None  # (before, after) a compiled optimizer step, untraceable (prepare_eager_step)
        self._traced_token = None  # begin_step's token between those two

    def attach(self, torch):
        """torch has been imported: the hooks are going in."""
        self.torch = torch
        self.steps = StepTracker(torch, self.perf())

    def guard(self, where, callback, *args):
        return self.failsafe.call(where, callback, *args)

    # ---- writing -----------------------------------------------------------------------
    def _write(self, ev, fields):
        self.ensure_run()
        self.log.write(ev, fields)

    def ensure_run(self, rank=None, world_size=None, backend=None):
        """Opens this rank's log and writes `run`, once. Explicit init_process_group arguments
        win over torchrun's environment (mp.spawn passes rank= and world_size=)."""
        if self.log.is_open:
            return
        if rank is None or rank < 0:
            rank = _env_int(self.environ, "RANK", 0)
        local_rank = _env_int(self.environ, "LOCAL_RANK", 0)
        if world_size is None or world_size <= 0:
            world_size = _env_int(self.environ, "WORLD_SIZE", 1)
        self.log.open(rank, local_rank)
        fields = {"world_size": world_size, "local_rank": local_rank,
                  "backend": backend if backend is not None else "none",
                  "torch_version": getattr(self.torch, "__version__", ""),
                  "python_version": "{}.{}.{}".format(*sys.version_info[:3]), "pid": os.getpid(),
                  "tool_version": __version__, "source": "probe", "argv": sys.argv[:32]}
        if self.model_seed is not None:  # known once the model's first parameter is made
            fields["seed"] = self.model_seed
        if self.settings.max_steps is not None:
            fields["bound"] = self.settings.max_steps
        fields.update(self.stacks.arm(self.log.path, self.torch))
        spawned = _env_int(self.environ, SPAWNED_ENV, 0)
        if spawned > 0:  # a worker torch.multiprocessing.spawn started (its parent said so)
            fields["spawned_nprocs"] = spawned
        if self.in_place is not None:  # a spawn's worker, run in this process instead
            fields["spawn_in_place"] = self.in_place["nprocs"]
        self.log.write("run", fields)

    def _report_failure(self, where, exc, trace):
        path = f" (traceback in {self.log.path})" if self.log.is_open else ""
        sys.stderr.write(f"bigmac-probe: switched off after an internal error in {where}: "
                         f"{type(exc).__name__}: {exc}; the program runs on unchanged{path}\n")
        sys.stderr.flush()
        if self.log.is_open:
            try:
                self.log.write("probe_error", {"where": where, "error": f"{type(exc).__name__}: {exc}",
                                               "traceback": trace[-4000:]})
            except OSError:
                pass

    # ---- a spawned worker, in place -----------------------------------------------------
    def run_in_place(self, fn, fn_args, nprocs, join):
        """spawn(fn, args, nprocs) in a process the launcher already made one rank of its world:
        fn(LOCAL_RANK, *args) here, once, as torchrun would run a per-process script; nprocs
        (the program's own count, often torch.cuda.device_count()) is recorded, not obeyed.
        Exceptions reach the program's caller directly, as spawn would re-raise them."""
        local_rank = _env_int(self.environ, "LOCAL_RANK", 0)
        self.in_place = {"nprocs": nprocs, "local_rank": local_rank}
        fn(local_rank, *fn_args)
        return None if join else _FinishedSpawn()

    def in_place_init(self, bound):
        """init_process_group's arguments (an inspect.BoundArguments) for a worker run in place:
        the launcher's rank and world size, and its rendezvous from the environment, in place of
        the ones the program worked out for the workers it meant to spawn. A program that hands
        in its own store keeps it (the launcher's rank and world size still apply)."""
        arguments = bound.arguments
        if "rank" in bound.signature.parameters:
            arguments["rank"] = _env_int(self.environ, "RANK", 0)
        if "world_size" in bound.signature.parameters:
            arguments["world_size"] = _env_int(self.environ, "WORLD_SIZE", 1)
        if arguments.get("store") is None and "init_method" in bound.signature.parameters:
            arguments["init_method"] = "env://"
            os.environ.update(self.rendezvous)
        return bound

    # ---- process group -----------------------------------------------------------------
    def begin_init(self, args, kwargs):
        def arg(index, name, default):
            return kwargs[name] if name in kwargs else (args[index] if len(args) > index else default)

        backend = arg(0, "backend", None)
        self.ensure_run(rank=arg(4, "rank", -1), world_size=arg(3, "world_size", -1),
                        backend=str(backend) if backend is not None else "default")
        return self.perf()

    def end_init(self, started):
        dist = self.torch.distributed
        self._write("pg_ready", {"init_ms": (self.perf() - started) * 1000.0,
                                 "world_size": dist.get_world_size(),
                                 "backend": str(dist.get_backend())})

    # ---- torch.compile ------------------------------------------------------------------
    def prepare_eager_step(self, dynamo):
        """The program imported torch._dynamo: the probe's part of an optimizer step that runs
        inside a compiled function, as two functions Dynamo runs eagerly instead of tracing
        (torch_patches._traced_step). They do what the step wrapper does around the original."""
        def before(optimizer):
            if self._traced_token is not None:  # the last compiled step raised: no event for it
                self.abandon_step(self._traced_token)
                self._traced_token = None
            if self.failsafe.active and not self.ended:
                self._traced_token = self.guard("optimizer_step", self.begin_step, optimizer, False)
            if self.ended:
                self.refuse_step()  # the step bound, as in the step wrapper

        def after(optimizer):  # noqa: ARG001 - the same signature as before()
            token, self._traced_token = self._traced_token, None
            if token is not None:
                self.guard("optimizer_step", self.end_step, token)

        self.eager_step = (dynamo.disable(before), dynamo.disable(after))

    def _pre_call(self, module, callback):
        """callback(args, kwargs) before each call of `module`, outside any graph TorchDynamo
        captures. A forward pre-hook, except on a module compiled in place (`module.compile()`),
        whose hooks run inside its compiled call, where Dynamo would trace them: there the
        compiled call itself is wrapped (the instance's `_compiled_call_impl`, which
        nn.Module.__call__ calls), so the hook runs eagerly and the graph is the same."""
        compiled = getattr(module, "_compiled_call_impl", None)
        if compiled is None:
            try:
                return module.register_forward_pre_hook(
                    run_as_is(lambda m, args, kwargs: callback(args, kwargs)), with_kwargs=True)
            except TypeError:  # torch < 2.0: positional arguments only
                return module.register_forward_pre_hook(run_as_is(lambda m, args: callback(args, {})))

        def call(*args, **kwargs):
            callback(args, kwargs)
            return compiled(*args, **kwargs)
        module._compiled_call_impl = run_as_is(call)
        return call

    # ---- forward, backward, clipping, scaling -------------------------------------------
    def on_forward(self, module, args, kwargs):
        """True once a step's first training forward is seen: a call with grad enabled, of a
        module holding a trainable parameter, with a tensor among its arguments. The model's
        very first is written as `batch`; each step's first has its input digested, for that
        step's `step` event (the nn.Module.__call__ wrapper is put back when a step ends)."""
        torch = self.torch
        if not torch.is_grad_enabled() or not has_trainable_param(module):
            return False
        tensor = first_tensor(torch, args)
        if tensor is None:
            tensor = first_tensor(torch, kwargs)
        if tensor is None:
            return False
        if not self.batch_written:
            if self.steps.global_step == 0:
                self.steps.last_end = self.perf()  # step 0's time starts at its first forward
            self._write("batch", {"input_shape": list(tensor.shape), "input_dtype": dtype_name(tensor.dtype),
                                  "input_device": str(tensor.device), "module": type(module).__name__,
                                  "global_step": self.steps.global_step})
            self.batch_written = True
            self.model_ref = weakref.ref(module)
        if self.ddp_buckets is not None:
            self.ddp_buckets.watch(module)
        if self.settings.digest:
            self._hook_buffers(module)
        if self.settings.input_digest:
            self.steps.note_input(self._input_fields(tensor))
            self._hook_samples(module)
        return True

    def _hook_samples(self, module):
        """Once: a forward pre-hook on the module that takes the training input, so that every
        micro-batch of every step adds its samples to the step's sample set (`sample_count`,
        `sample_digest`); registered inside the first such call, it already sees that one. One
        hook on one module, not a wrapper around every module call."""
        if self.sample_hook is not None:
            return
        self.sample_hook = self._pre_call(module, self._samples_hook)

    def _hook_buffers(self, module):
        """Once, where the model has buffers (BatchNorm's running statistics): a forward
        pre-hook on the module DistributedDataParallel wraps (on the module itself without
        DDP), so that the first forward of each digest step writes `buffer_digest`, the buffers
        as that forward reads them: after DDP broadcast rank 0's (broadcast_buffers=True), so
        replicas whose digests differ there keep statistics of their own."""
        if self.buffer_hook is not None:
            return
        ddp = getattr(self.torch.nn.parallel, "DistributedDataParallel", None)
        # torch.compile(DDP(model)) is called as an OptimizedModule holding the DDP module.
        wrapped = getattr(module, "_orig_mod", module)
        inner = wrapped.module if ddp is not None and isinstance(wrapped, ddp) else module
        if next(inner.buffers(), None) is None:
            self.buffer_hook = False
            return
        self.buffer_hook = self._pre_call(inner, lambda args, kwargs: self._buffers_hook(inner))

    def _buffers_hook(self, module):
        if not self.tracing():  # traced (compiled after the hook went in): not seen, no graph break
            self.guard("buffers", self.note_buffers, module)

    def note_buffers(self, module):
        """The first training forward of a digest step (0, 1, 2, 4, ...): digest the buffers."""
        steps = self.steps
        if (self.ended or not self.torch.is_grad_enabled() or steps.buffers_noted()
                or not is_digest_step(steps.global_step)):
            return
        try:
            steps.note_buffers(param_digest(self.torch, module.buffers()))
        except Exception:  # noqa: BLE001 - buffers that cannot be read: no digest this step
            steps.note_buffers(None)

    def _samples_hook(self, args, kwargs):
        if not self.tracing():
            self.guard("samples", self.note_samples, args, kwargs)
        elif self.torch.is_grad_enabled():
            # A micro-batch inside a compiled function (the model called by a compiled loss
            # function): not hashed, so its step has no sample set rather than a partial one.
            # Dynamo replays this one attribute store after the graph: no break, no recompile.
            self.steps.unseen_samples()

    def note_samples(self, args, kwargs):
        """A micro-batch: a call with grad enabled of the module that takes the input."""
        torch = self.torch
        if self.ended or not torch.is_grad_enabled():
            return
        tensor = first_tensor(torch, args)
        if tensor is None:
            tensor = first_tensor(torch, kwargs)
        try:
            self.steps.note_samples(None if tensor is None else sample_hashes(torch, tensor))
        except Exception:  # noqa: BLE001 - a tensor the hash cannot read: no set this step
            self.steps.note_samples(None)

    def _input_fields(self, tensor):
        """`input_shape`, `input_digest` and `input_digest_bytes` of a step's first training
        input. A tensor that cannot be read (a sparse or meta one) gets `input_digest_error`
        instead of a digest: the rest of the probe goes on."""
        fields = {"input_shape": list(tensor.shape)}
        try:
            fields["input_digest"], fields["input_digest_bytes"] = input_digest(self.torch, tensor)
        except Exception as exc:  # noqa: BLE001 - one tensor the digest cannot read
            fields["input_digest_error"] = f"{type(exc).__name__}: {exc}"
        return fields

    def on_backward(self, tensors, args, kwargs):
        """A loss is a one-element tensor backward() ran on without an explicit gradient (a
        pipeline stage's out.backward(grad) is not one)."""
        grads = args[0] if args else kwargs.get("grad_tensors")
        torch = self.torch
        if isinstance(tensors, torch.Tensor):
            tensors, grads = [tensors], [grads]
        elif grads is None or isinstance(grads, torch.Tensor):
            grads = [grads] * len(tensors)
        self.ensure_run()
        for tensor, grad in zip(tensors, grads):
            if grad is None and isinstance(tensor, torch.Tensor) and tensor.numel() == 1:
                self.steps.note_loss(tensor)

    def on_clip(self, total_norm):
        """clip_grad_norm_'s total norm. Over DTensor parameters (FSDP2) it is a DTensor,
        Replicate once reduced: its local value is the whole norm. A Partial one is left out,
        since reading it would be a collective the program did not make."""
        dtensor = dtensor_class()
        if dtensor is not None and isinstance(total_norm, dtensor):
            if not all(pl.is_replicate() for pl in total_norm.placements):
                return
            total_norm = total_norm.to_local()
        self.steps.note_clip(total_norm)

    def on_scale(self, outputs, result):
        torch = self.torch
        if isinstance(outputs, torch.Tensor):
            pairs = [(result, outputs)]
        elif isinstance(outputs, (list, tuple)) and isinstance(result, (list, tuple)):
            pairs = zip(result, outputs)
        else:
            return
        for scaled, original in pairs:
            if (isinstance(scaled, torch.Tensor) and isinstance(original, torch.Tensor)
                    and scaled is not original and original.numel() == 1):
                self.steps.note_scaled(scaled, original)

    # ---- optimizer steps ---------------------------------------------------------------
    def begin_step(self, optimizer, closure=False):
        """Before the primary optimizer's step(): the values it is about to apply. A token for
        end_step, or None when this step() is not one the probe counts. With a closure (LBFGS)
        the gradients are made inside step(): they are read after it (end_step)."""
        if self.steps.in_step or not self.steps.is_primary(optimizer):
            return None
        if self._bound_reached():
            return None
        self.steps.in_step = True
        params = optimizer_params(optimizer)
        sharding = self._sharding_of(optimizer, params)
        model = self._model_fields(params, sharding)  # its collectives before any write
        sq, grads = self._grad_sum_of_squares(params, sharding)
        if model is not None:
            self._write_model(model)
        token = {"lrs": learning_rates(optimizer), "sq": sq, "grads": grads, "params": params,
                 "sharding": sharding, "closure": closure, "losses_before": self.steps.pending_losses()}
        scaler = self.current_scaler
        if scaler is not None and hasattr(scaler, "get_scale"):
            token["loss_scale"] = float(scaler.get_scale())
        if scaler is not None:
            self._scaled_in_step(optimizer, token)
        return token

    def _scaled_in_step(self, optimizer, token):
        """A GradScaler stepping an optimizer that unscales inside its own step (fused AdamW,
        Adam, SGD: `_step_supports_amp_scaling`) does not unscale the gradients first: it hands
        the optimizer `grad_scale` (None once the program called unscale_) and `found_inf`
        (torch.amp.GradScaler.step). The norm applied is the gradients' over that scale, and a
        step with inf/NaN gradients is skipped inside the optimizer, as the scaler would have."""
        grad_scale = getattr(optimizer, "grad_scale", None)
        if grad_scale is not None and token["sq"] is not None:
            token["sq"] /= float(grad_scale) ** 2
        found_inf = getattr(optimizer, "found_inf", None)
        if found_inf is not None and float(found_inf) > 0:
            token["skipped"] = True

    def end_step(self, token, result=None):
        self.steps.in_step = False
        if token.get("closure"):
            # The closure ran forward and backward, maybe many times (LBFGS evaluates it up to
            # max_iter times): one micro-batch, whose loss is the first evaluation's, which is
            # what step() returns; the gradients are the last evaluation's.
            token["sq"], token["grads"] = self._grad_sum_of_squares(token["params"], token["sharding"])
            self.steps.keep_first_losses(token["losses_before"] + 1)
        digest = self._params_digest(token["params"], token["sharding"])  # collectives first
        fields = self._step_fields(token)
        if token.get("skipped"):
            fields["skipped"] = True
        elif token["sq"] is None:
            fields["grad_norm_note"] = PARTIAL_GRAD_NOTE
        else:
            fields["grad_norm"] = math.sqrt(token["sq"])
            fields["grad_norm_sq"] = token["sq"]
            fields["grad_count"] = token["grads"]
        fields.update(digest)
        if self.pipelining is not None:  # a hand-written pipeline's stage, from its transfers
            self.pipelining.on_step_end(fields, token["params"])
        self._finish_step(fields)

    def abandon_step(self, token):
        """The program's step() raised: no event; the exception goes on unchanged."""
        if token is not None:
            self.steps.in_step = False

    def begin_scaler_step(self, scaler, optimizer):
        if not getattr(type(optimizer).step, MARK, False):
            return None  # an optimizer the probe cannot see stepping: skips cannot be told
        if not self.steps.is_primary(optimizer) or self._bound_reached():
            return None
        self.current_scaler = scaler
        return {"scaler": scaler, "optimizer": optimizer, "before": self.steps.global_step}

    def end_scaler_step(self, token):
        """The scaler did not call optimizer.step(): inf/NaN gradients, a skipped step."""
        self.current_scaler = None
        if self.steps.global_step != token["before"]:
            return
        optimizer = token["optimizer"]
        params = optimizer_params(optimizer)
        sharding = self._sharding_of(optimizer, params)
        model = self._model_fields(params, sharding)
        digest = self._params_digest(params, sharding)
        if model is not None:
            self._write_model(model)
        fields = self._step_fields({"lrs": learning_rates(optimizer)})
        fields["skipped"] = True
        if hasattr(token["scaler"], "get_scale"):
            fields["loss_scale"] = float(token["scaler"].get_scale())
        fields.update(digest)
        self._finish_step(fields)

    # ---- the whole model, sharded or not ---------------------------------------------------
    def _sharding_of(self, optimizer, params):
        """The optimizer's parameters' sharding (sharded.Sharding), None when none is sharded;
        made once per optimizer and parameter count."""
        ref, count, sharding = self._sharding
        if ref is None or ref() is not optimizer or count != len(params):
            model = self.model_ref() if self.model_ref is not None else None
            sharding = sharding_of(self.torch, params, model)
            self._sharding = (weakref.ref(optimizer), len(params), sharding)
        return sharding

    def _grad_sum_of_squares(self, params, sharding):
        if sharding is None:
            return grad_sum_of_squares(self.torch, params)
        return sharding.grad_sum_of_squares(params, lambda grads: grad_norms(self.torch, grads))

    def _model_fields(self, params, sharding):
        """`model`'s fields at the first step, from the parameters as they are before it changes
        them (the whole model's under sharding); None once written."""
        if self.model_written:
            return None
        if sharding is None:
            return param_summary(self.torch, params, self.settings.digest)
        fields = param_summary(self.torch, [], False)
        fields.update(sharding.summary())
        if self.settings.digest:
            fields.update(self._digest_or_error(lambda: sharding.digest(params), "digest_error"))
        return fields

    def _write_model(self, fields):
        if not self.param_seen:
            fields["seed_note"] = NO_MODULE_NOTE
        elif self.model_seed is None:
            fields["seed_note"] = NO_SEED_NOTE
        else:
            fields["seed"] = self.model_seed
        self._write("model", fields)
        self.model_written = True

    def _params_digest(self, params, sharding):
        """`param_digest` of the optimizer's parameters after the step (the update applied), at
        steps 0, 1, 2, 4, 8, ...: replicas in sync have equal ones (docs/probe.md, "Digests").
        Sharded ones are gathered whole first, on every rank alike."""
        if not self.settings.digest or not is_digest_step(self.steps.global_step):
            return {}
        digest = param_digest if sharding is None else (lambda torch, ps: sharding.digest(ps))
        fields = self._digest_or_error(lambda: digest(self.torch, params), "param_digest_error")
        if "param_digest" in fields:
            fields["params_after_step"] = True
        return fields

    @staticmethod
    def _digest_or_error(digest, error_key):
        try:
            return {"param_digest": digest()}
        except Exception as exc:  # noqa: BLE001 - e.g. meta tensors: the step still stands
            return {error_key: f"{type(exc).__name__}: {exc}"}

    def _step_fields(self, token):
        losses, count, total, preclip = self.steps.take()
        compiling = self.eager_step is not None  # the program imported torch._dynamo
        fields = {"global_step": self.steps.global_step, **self.steps.take_input(),
                  **self.steps.take_samples(count if compiling else None), **self.steps.take_buffers()}
        if count:
            fields["loss"] = total
        fields["loss_count"] = count
        if 1 < len(losses) <= StepTracker.LOSS_LIST_LIMIT:
            fields["losses"] = losses
        lrs = token["lrs"]
        if lrs:
            fields["lr"] = lrs[0]
            if len(lrs) > 1:
                fields["lrs"] = lrs
        if preclip is not None:
            fields["grad_norm_preclip"] = preclip
        if "loss_scale" in token:
            fields["loss_scale"] = token["loss_scale"]
        return fields

    # ---- the step bound ------------------------------------------------------------------
    def _bound_reached(self):
        """Whether the counted optimizer is about to begin step number max_steps, the program
        having done everything it does after step max_steps-1 (its prints, a second optimizer,
        an evaluation). Then `done` is written here, and the wrapper ends the program instead
        of running the step (refuse_step)."""
        bound = self.settings.max_steps
        if bound is None or self.steps.global_step < bound:
            return False
        self._write("done", {"steps": self.steps.global_step, "bounded": True})
        self.ended = True
        return True

    def refuse_step(self):
        """Instead of any step() once the bound ended the program: SystemExit(0), so the
        interpreter ends normally (exit status 0, `finally:` blocks and atexit handlers run).
        A program that catches it and steps on is answered the same, REFUSALS_RAISED times in
        all; the next step() flushes the program's output and ends the process with
        os._exit(0), since a loop that swallows SystemExit would otherwise never end. Runs
        outside the failsafe: ending the program is the point."""
        self.refusals += 1
        if self.refusals > self.REFUSALS_RAISED:
            for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
                try:
                    stream.flush()
                except Exception:  # noqa: BLE001 - a closed or missing stream: nothing to flush
                    pass
            os._exit(0)
        raise SystemExit(0)

    def end_process_group(self):
        """At exit, after the bound ended the program: its own destroy_process_group() (after
        its loop) never ran, and a backend may warn or wait at exit without it (NCCL). Never
        an error: the program is over."""
        if not self.ended or self.torch is None:
            return
        try:
            dist = self.torch.distributed
            if dist.is_available() and dist.is_initialized():
                dist.destroy_process_group()
        except Exception:  # noqa: BLE001 - nothing may escape at exit either
            pass

    def _finish_step(self, fields):
        now = self.perf()
        fields["step_ms"] = (now - self.steps.last_end) * 1000.0
        self._write("step", fields)
        self._write("heartbeat", {"global_step": self.steps.global_step})
        self.steps.finish(now)
        if self.settings.input_digest and self.rearm_forward is not None:
            self.rearm_forward()  # the next step's first training forward is digested

    # ---- transfers, checkpoints, seeds, the end ------------------------------------------
    def on_p2p(self, op, where, tensor, peer):
        if self.pipelining is not None:
            self.pipelining.on_transfer(where, peer)
        if not self.settings.shapes or not isinstance(tensor, self.torch.Tensor):
            return
        peer = -1 if peer is None else int(peer)
        self._write("shape", {"global_step": self.steps.global_step,
                              "mb": self.steps.transfer_index(where, peer), "where": where,
                              "name": "p2p", "op": op, "peer": peer, "shape": list(tensor.shape),
                              "dtype": dtype_name(tensor.dtype), "device": str(tensor.device)})

    def on_save(self, f):
        path = _file_path(f)
        if path is not None:
            self.saved_paths.add(path)
            self._write("ckpt", {"step": self.steps.global_step - 1, "path": path})

    def on_rename(self, src, dst):
        """os.rename/os.replace of a file torch.save wrote (a checkpoint written to `X.tmp`
        and renamed into place): the checkpoint is at `dst` now."""
        try:
            source, target = os.path.abspath(os.fsdecode(src)), os.path.abspath(os.fsdecode(dst))
        except TypeError:
            return  # a descriptor-relative or other form: not a path the probe recorded
        if source in self.saved_paths:
            self.saved_paths.add(target)
            self._write("ckpt", {"step": self.steps.global_step - 1, "path": target,
                                 "renamed_from": source})

    def on_load(self, f):
        """torch.load returned: the orchestrator sees a program resume a checkpoint (an earlier
        run's `ckpt` path). `global_step` is the steps counted so far, the next step's number."""
        path = _file_path(f)
        if path is not None:
            self._write("load", {"path": path, "global_step": self.steps.global_step})

    # The seed the model was initialised with is the one in effect when its first parameter is
    # created, not the last torch.manual_seed: a dataset may seed itself per item and restore
    # the RNG state afterwards (torchvision's FakeData), before or after the model is built.
    def on_seed(self, seed):
        self.seed = int(seed)

    def on_get_rng_state(self, state):
        """A state saved to be restored later (FakeData around its per-item seed, fork_rng):
        restoring it restores the seed in effect now."""
        kept = [(ref, seed) for ref, seed in self._rng_states if ref() is not None]
        kept.append((weakref.ref(state), self.seed))
        self._rng_states = kept[-self.RNG_STATES_KEPT:]

    def on_set_rng_state(self, state):
        """A state of unknown origin (a checkpoint's) leaves the seed as it was."""
        for ref, seed in reversed(self._rng_states):
            if ref() is state:
                self.seed = seed
                return

    def on_first_parameter(self):
        self.param_seen = True
        self.model_seed = self.seed
        self._rng_states = []

    def on_exit(self):
        # The interpreter sets sys.last_value for an exception nobody caught (whatever
        # sys.excepthook is); SystemExit is not one. After the bound, `done` is written.
        crashed = getattr(sys, "last_value", None) is not None
        if self.log.is_open and not crashed and not self.ended:
            self.log.write("done", {"steps": self.steps.global_step})
        self.log.close()

    def at_exit(self):
        """The probe's atexit handler. Registered at start-up, before the program's own, so it
        runs after them."""
        self.guard("done", self.on_exit)
        self.end_process_group()
