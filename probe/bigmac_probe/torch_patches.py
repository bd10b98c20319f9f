"""The probe's hooks into torch. Each wrapper calls the original with the program's own
arguments and returns its result untouched; the probe's part runs through Probe.guard, so an
error in it never reaches the program, and the program's own exceptions pass through as they
are. Once the probe is off every wrapper is a plain pass-through.

The exceptions are the step bound (BIGMAC_PROBE_MAX_STEPS): once it is reached, the step wrappers
end the program (Probe.refuse_step) instead of calling the original, whether the probe is still
on or not; and a spawned worker run in place (BIGMAC_PROBE_SPAWN_IN_PLACE): spawn calls the
worker itself, and init_process_group gets the launcher's rank, world size and rendezvous."""
import functools
import inspect
import sys

from .dynamo_shield import on_dynamo, run_as_is, tracing_check
from .import_hook import PostImportHook

MARK = "_bigmac_probe"  # set on every wrapper, so nothing is wrapped twice


def _marked(wrapper):
    """Every wrapper: marked as the probe's, and never compiled as a frame of its own
    (dynamo_shield: each asks `tracing()` first, so that traced it only calls the original)."""
    setattr(wrapper, MARK, True)
    return run_as_is(wrapper)


def wrap_after(probe, where, original, callback):
    """original(...), then callback(result, args, kwargs) (seed, save, load, clip)."""
    tracing = probe.tracing

    @functools.wraps(original)
    def wrapper(*args, **kwargs):
        if tracing():
            return original(*args, **kwargs)
        result = original(*args, **kwargs)
        if probe.failsafe.active:
            probe.guard(where, callback, result, args, kwargs)
        return result
    return _marked(wrapper)


def wrap_backward(probe, original):
    """torch.autograd.backward, which Tensor.backward calls too."""
    tracing = probe.tracing

    @functools.wraps(original)
    def backward(tensors, *args, **kwargs):
        if tracing():
            return original(tensors, *args, **kwargs)
        buckets = probe.ddp_buckets
        if buckets is not None and probe.failsafe.active:
            probe.guard("backward", buckets.note_backward)
        result = original(tensors, *args, **kwargs)
        if probe.failsafe.active:
            probe.guard("backward", probe.on_backward, tensors, args, kwargs)
        return result
    return _marked(backward)


def _traced_step(probe, original, optimizer, args, kwargs):
    """optimizer.step() inside a torch.compile'd function (`torch.compile(opt.step)`, the
    compiled-optimizer recipe). The probe's part runs eagerly before and after the original,
    through functions Dynamo does not trace (torch._dynamo.disable, made when the program
    imports torch._dynamo: probe.eager_step): the step's own graph is captured as without the
    probe, with one graph break before it and one after. PyTorch's optimizers break the graph
    inside step() themselves (_use_grad_for_differentiable), so such a step never compiles as
    one graph (fullgraph=True) with or without the probe."""
    eager = probe.eager_step
    if eager is None:  # torch._dynamo was imported before the probe could prepare: unobserved
        return original(optimizer, *args, **kwargs)
    eager[0](optimizer)
    result = original(optimizer, *args, **kwargs)
    eager[1](optimizer)
    return result


def wrap_optimizer_step(probe, original):
    tracing = probe.tracing

    @functools.wraps(original)
    def step(self, *args, **kwargs):
        if tracing():
            return _traced_step(probe, original, self, args, kwargs)
        closure = args[0] if args else kwargs.get("closure")
        token = (probe.guard("optimizer_step", probe.begin_step, self, callable(closure))
                 if probe.failsafe.active and not probe.ended else None)
        if probe.ended:
            probe.refuse_step()  # the step bound: SystemExit(0) instead of this step
        try:
            result = original(self, *args, **kwargs)
        except BaseException:
            probe.abandon_step(token)
            raise
        if token is not None:
            probe.guard("optimizer_step", probe.end_step, token, result)
        return result
    return _marked(step)


def instrument_optimizer_class(probe, patches, cls):
    """Wraps cls.step once per class (torch's own profiler hook does the same)."""
    if not getattr(cls.step, MARK, False):
        patches.replace(cls, "step", wrap_optimizer_step(probe, cls.step))


def wrap_optimizer_init(probe, patches, original):
    @functools.wraps(original)
    def __init__(self, *args, **kwargs):
        original(self, *args, **kwargs)
        if probe.failsafe.active:
            probe.guard("optimizer_step", instrument_optimizer_class, probe, patches, type(self))
    return _marked(__init__)


def instrument_scaler_class(probe, patches, cls):
    """GradScaler-like classes: scale(outputs) and step(optimizer, ...) (torch.cuda.amp's, and
    torch.amp's in PyTorch 2.3+; a fake in the tests)."""
    if "scale" in cls.__dict__ and not getattr(cls.scale, MARK, False):
        original_scale = cls.scale

        @functools.wraps(original_scale)
        def scale(self, outputs):
            if probe.tracing():
                return original_scale(self, outputs)
            result = original_scale(self, outputs)
            if probe.failsafe.active:
                probe.guard("scale", probe.on_scale, outputs, result)
            return result
        patches.replace(cls, "scale", _marked(scale))
    if "step" in cls.__dict__ and not getattr(cls.step, MARK, False):
        original_step = cls.step

        @functools.wraps(original_step)
        def step(self, optimizer, *args, **kwargs):
            if probe.tracing():
                return original_step(self, optimizer, *args, **kwargs)
            token = (probe.guard("scaler_step", probe.begin_scaler_step, self, optimizer)
                     if probe.failsafe.active and not probe.ended else None)
            if probe.ended:
                probe.refuse_step()
            try:
                result = original_step(self, optimizer, *args, **kwargs)
            except BaseException:
                probe.current_scaler = None
                raise
            if token is not None:
                probe.guard("scaler_step", probe.end_scaler_step, token)
            return result
        patches.replace(cls, "step", _marked(step))


def _p2p_peer(probe, peer, group, group_peer):
    """The other rank, as a global rank: `dst`/`src`, else PyTorch 2.6+'s `group_dst`/
    `group_src` (a rank of `group`) translated; None when neither is given (any source)."""
    if peer is not None or group_peer is None:
        return peer
    dist = probe.torch.distributed
    return group_peer if group is None else dist.get_global_rank(group, group_peer)


def log_p2p(probe, op, where, tensor, peer):
    """A transfer's ledger entry (ledger.py), then its `shape` event."""
    if probe.ledger is not None:
        probe.ledger.record_p2p(op, where, tensor, peer)
    probe.on_p2p(op, where, tensor, peer)


def wrap_p2p(probe, original, op, where, peer_name):
    """dist.send/recv/isend/irecv: the shape is logged before the transfer, so a transfer
    that fails or hangs still leaves its evidence. Logged once, by the outermost call: PyTorch
    2.x's send and recv are isend(...).wait() and irecv(...).wait()."""
    group_peer_name = "group_" + peer_name

    @functools.wraps(original)
    def wrapper(tensor, *args, **kwargs):
        if probe.in_p2p or probe.tracing():
            return original(tensor, *args, **kwargs)
        if probe.failsafe.active:
            peer = args[0] if args else kwargs.get(peer_name)
            group = args[1] if len(args) > 1 else kwargs.get("group")
            probe.guard("p2p", log_p2p, probe, op, where, tensor,
                        _p2p_peer(probe, peer, group, kwargs.get(group_peer_name)))
        probe.in_p2p = True
        try:
            return original(tensor, *args, **kwargs)
        finally:
            probe.in_p2p = False
    return _marked(wrapper)


def wrap_batch_p2p(probe, original, sends):
    @functools.wraps(original)
    def batch_isend_irecv(p2p_op_list):
        if probe.in_p2p or probe.tracing():
            return original(p2p_op_list)
        if probe.failsafe.active:
            def log_ops():
                for p in p2p_op_list:
                    where = "send" if p.op in sends else "recv"
                    log_p2p(probe, f"batch_i{where}", where, p.tensor, p.peer)
            probe.guard("p2p", log_ops)
        probe.in_p2p = True
        try:
            return original(p2p_op_list)
        finally:
            probe.in_p2p = False
    return _marked(batch_isend_irecv)


def _signature(function):
    """inspect.signature, or None for a callable it cannot read (the wrapper then binds nothing)."""
    try:
        return inspect.signature(function)
    except (TypeError, ValueError):
        return None


def wrap_init_process_group(probe, original):
    signature = _signature(original)

    @functools.wraps(original)
    def init_process_group(*args, **kwargs):
        if probe.in_place is not None and signature is not None:  # on purpose: Probe.in_place_init
            bound = probe.in_place_init(signature.bind(*args, **kwargs))
            args, kwargs = bound.args, bound.kwargs
        started = probe.guard("run", probe.begin_init, args, kwargs) if probe.failsafe.active else None
        result = original(*args, **kwargs)
        if started is not None:
            probe.guard("pg_ready", probe.end_init, started)
        return result
    return _marked(init_process_group)


def wrap_first_forward(probe, patches, module_cls):
    """nn.Module.__call__ until a step's first training forward is seen; then (or once the probe
    is off) the original is put back, so the step's other forwards cost nothing. When a step
    ends the probe puts the wrapper in again (probe.rearm_forward) for the next step's first
    forward, whose input is digested (docs/probe.md, "Digests"). `armed` says whether the
    wrapper is waiting for that forward: one reached while it waits not (a stale reference to
    it, another tool's wrapper around it) is a plain pass-through."""
    original = module_cls.__call__
    armed = True
    tracing = probe.tracing

    def __call__(self, *args, **kwargs):
        nonlocal armed
        if tracing():  # a module called inside a compiled function: its forward is not seen
            return original(self, *args, **kwargs)
        if armed and (not probe.failsafe.active or probe.guard("forward", probe.on_forward, self, args, kwargs)):
            armed = False
            if module_cls.__call__ is wrapper:
                module_cls.__call__ = original
        return original(self, *args, **kwargs)

    wrapper = _marked(functools.wraps(original)(__call__))

    def rearm():
        """Over the original this wrapper put back only: never over another tool's __call__, and
        never once the patches are undone (the probe's step hooks are gone then too)."""
        nonlocal armed
        if not patches.holds(module_cls, "__call__"):
            return
        armed = True
        if module_cls.__call__ is original:
            module_cls.__call__ = wrapper

    patches.replace(module_cls, "__call__", wrapper)
    probe.rearm_forward = rearm


def wrap_first_parameter(probe, module_cls):
    """nn.Module.register_parameter (nn.Module.__setattr__ calls it for a Parameter) until the
    first parameter is registered: the seed in effect then is the model's. Then, or once the
    probe is off, the original is put back, so building the rest of the model costs nothing."""
    original = module_cls.register_parameter

    def register_parameter(self, *args, **kwargs):
        if probe.tracing():
            return original(self, *args, **kwargs)
        result = original(self, *args, **kwargs)
        param = args[1] if len(args) > 1 else kwargs.get("param")
        if param is not None or not probe.failsafe.active:
            if param is not None and probe.failsafe.active:
                probe.guard("param", probe.on_first_parameter)
            if getattr(module_cls.register_parameter, MARK, False):
                module_cls.register_parameter = original
        return result
    return _marked(functools.wraps(original)(register_parameter))


def wrap_rng_state(probe, original, callback):
    """torch.get_rng_state/set_rng_state, while the model's seed is still to be known (until
    its first parameter); a plain pass-through after that."""
    @functools.wraps(original)
    def wrapper(*args, **kwargs):
        if probe.tracing():
            return original(*args, **kwargs)
        result = original(*args, **kwargs)
        if probe.failsafe.active and not probe.param_seen:
            probe.guard("seed", callback, result, args, kwargs)
        return result
    return _marked(wrapper)


def _replace_everywhere(patches, owners, name, make):
    """One wrapper for `name` in each owner that holds the same original (torch.distributed
    re-exports distributed_c10d's functions)."""
    holders = [o for o in owners if o is not None and hasattr(o, name)]
    if not holders:
        return None
    original = getattr(holders[0], name)
    if getattr(original, MARK, False):
        return original
    wrapper = make(original)
    for owner in holders:
        if getattr(owner, name) is original:
            patches.replace(owner, name, wrapper)
    return wrapper


def instrument_distributed(probe, patches, torch):
    dist = torch.distributed
    if not dist.is_available():
        return
    c10d = getattr(dist, "distributed_c10d", None)
    owners = (dist, c10d)
    _replace_everywhere(patches, owners, "init_process_group",
                        lambda f: wrap_init_process_group(probe, f))
    originals = {name: getattr(dist, name, None) for name in ("isend", "irecv")}
    wrappers = {}
    for name, op, where, peer in (("send", "send", "send", "dst"), ("recv", "recv", "recv", "src"),
                                  ("isend", "isend", "send", "dst"), ("irecv", "irecv", "recv", "src")):
        wrappers[name] = _replace_everywhere(
            patches, owners, name, lambda f, op=op, where=where, peer=peer: wrap_p2p(probe, f, op, where, peer))
    instrument_collectives(probe, patches, torch, owners)
    sends = {originals["isend"], wrappers["isend"]} - {None}
    _replace_everywhere(patches, owners, "batch_isend_irecv", lambda f: wrap_batch_p2p(probe, f, sends))
    # P2POp accepts only the module's own isend/irecv, which are now the wrappers: the
    # originals (held by code that imported them before the probe) must stay accepted too.
    check = getattr(c10d, "_check_op", None)
    if check is not None and not getattr(check, MARK, False):
        to_wrapper = {originals[n]: wrappers[n] for n in originals if originals[n] is not None}

        @functools.wraps(check)
        def _check_op(op):
            return check(to_wrapper.get(op, op))
        patches.replace(c10d, "_check_op", _marked(_check_op))


def wrap_collective(probe, ledger, original, op):
    """A collective: its `coll` ledger entry is written before it goes in (ledger.py)."""
    @functools.wraps(original)
    def wrapper(*args, **kwargs):
        # The probe's own collectives (a sharded model's norm and digests) are not the program's.
        if (ledger.depth or not probe.failsafe.active or probe.tracing()
                or "bigmac_probe" in sys._getframe(1).f_code.co_filename):
            return original(*args, **kwargs)
        probe.guard("collective", ledger.record, op, args, kwargs)
        ledger.depth += 1
        try:
            return original(*args, **kwargs)
        finally:
            ledger.depth -= 1
    return _marked(wrapper)


def wrap_register_comm_hook(buckets, original):
    """DistributedDataParallel.register_comm_hook: a hook the program registers once the probe's
    is in (DDP takes one) is run by the probe's, not refused (ledger.DdpBuckets)."""
    @functools.wraps(original)
    def register_comm_hook(self, state, hook):
        try:
            return original(self, state, hook)
        except RuntimeError:
            if buckets.later_hook(self, state, hook):
                return None
            raise
    return _marked(register_comm_hook)


def instrument_collectives(probe, patches, torch, owners):
    from .ledger import COLLECTIVES, DdpBuckets, Ledger  # noqa: PLC0415 - only with torch.distributed
    from .stacks import library_dirs  # noqa: PLC0415

    ledger = probe.ledger = Ledger(probe, library_dirs(torch))
    for op in COLLECTIVES:
        _replace_everywhere(patches, owners, op, lambda f, op=op: wrap_collective(probe, ledger, f, op))
    ddp = getattr(getattr(torch.nn, "parallel", None), "DistributedDataParallel", None)
    # Off unless asked (BIGMAC_PROBE_DDP_BUCKETS=1): a Python communication hook in DDP's reducer
    # makes some programs abort at exit ("terminate called without an active exception", about
    # one run in five of tests/probe/programs/sampler_ddp.py), as torch's own Python hooks do.
    if (probe.settings.ddp_buckets and ddp is not None
            and hasattr(torch.distributed, "_register_comm_hook")):
        buckets = probe.ddp_buckets = DdpBuckets(probe, ledger)
        if not getattr(ddp.register_comm_hook, MARK, False):
            patches.replace(ddp, "register_comm_hook", wrap_register_comm_hook(buckets, ddp.register_comm_hook))


def instrument_fsdp_clip(probe, patches, fsdp_module):
    """FSDP1's own FullyShardedDataParallel.clip_grad_norm_ (torch.nn.utils' would see one
    rank's shards): its total norm, the whole model's, is the step's grad_norm_preclip."""
    cls = getattr(fsdp_module, "FullyShardedDataParallel", None)
    if cls is not None and "clip_grad_norm_" in cls.__dict__ and not getattr(cls.clip_grad_norm_, MARK, False):
        patches.replace(cls, "clip_grad_norm_", wrap_after(
            probe, "clip", cls.clip_grad_norm_, lambda result, args, kwargs: probe.on_clip(result)))


def instrument_sharded_scaler(probe, patches, scaler_module):
    """FSDP's ShardedGradScaler has a scale() of its own (its step() is GradScaler's)."""
    cls = getattr(scaler_module, "ShardedGradScaler", None)
    if isinstance(cls, type):
        instrument_scaler_class(probe, patches, cls)


def after_import(probe, patches, name, instrument):
    """instrument(probe, patches, module) once the program imports `name` (at once if it has):
    the probe never imports a torch.distributed module a program does not use."""
    hook = PostImportHook(name, lambda module: probe.guard("install", instrument, probe, patches, module))
    hook.install()
    patches.on_restore(hook.remove)


def wrap_spawn(probe, original):
    """torch.multiprocessing.spawn / start_processes(fn, args=(), nprocs=1, join=True, ...).
    With BIGMAC_PROBE_SPAWN_IN_PLACE (a launcher made this process one rank already) the worker
    runs here instead (Probe.run_in_place), once: a worker that spawns again spawns for real.
    Otherwise the workers inherit the environment, so they learn that a spawn started them, and
    by how many, before they import torch."""
    signature = _signature(original)

    @functools.wraps(original)
    def wrapper(*args, **kwargs):
        from bigmac_probe.probe import SPAWNED_ENV  # noqa: PLC0415 - no import cycle at load
        import os  # noqa: PLC0415
        try:
            bound = signature.bind(*args, **kwargs)
        except (TypeError, AttributeError):  # the original says what is wrong with the call
            return original(*args, **kwargs)
        bound.apply_defaults()
        call = bound.arguments
        try:
            nprocs = int(call["nprocs"])
        except (KeyError, TypeError, ValueError):
            nprocs = 0
        if probe.settings.spawn_in_place and probe.in_place is None:  # on purpose: no failsafe
            return probe.run_in_place(call["fn"], tuple(call.get("args", ())), nprocs, call.get("join", True))
        if nprocs > 0:
            os.environ[SPAWNED_ENV] = str(nprocs)
        return original(*args, **kwargs)
    return _marked(wrapper)


def instrument_torch(probe, patches, torch):
    """Every hook, in one go (the caller undoes `patches` if this raises)."""
    probe.attach(torch)
    probe.tracing = tracing_check(torch)
    if hasattr(torch, "compile"):
        # Out of torch.compile's way (dynamo_shield), from the program's own import of
        # torch._dynamo: importing it here would cost every program about 2 s of start-up.
        after_import(probe, patches, "torch._dynamo", lambda probe, patches, dynamo: on_dynamo(probe, dynamo))
    after_import(probe, patches, "torch.distributed.fsdp.fully_sharded_data_parallel", instrument_fsdp_clip)
    after_import(probe, patches, "torch.distributed.fsdp.sharded_grad_scaler", instrument_sharded_scaler)
    import torch.nn.utils.clip_grad as clip_grad  # noqa: PLC0415 - torch is imported by now

    _replace_everywhere(patches, (torch.autograd,), "backward", lambda f: wrap_backward(probe, f))
    _replace_everywhere(patches, (torch,), "manual_seed", lambda f: wrap_after(
        probe, "seed", f, lambda result, args, kwargs: probe.on_seed(args[0] if args else kwargs["seed"])))
    random = getattr(torch, "random", None)
    _replace_everywhere(patches, (torch, random), "get_rng_state", lambda f: wrap_rng_state(
        probe, f, lambda result, args, kwargs: probe.on_get_rng_state(result)))
    _replace_everywhere(patches, (torch, random), "set_rng_state", lambda f: wrap_rng_state(
        probe, f, lambda result, args, kwargs: probe.on_set_rng_state(args[0] if args else kwargs.get("new_state"))))
    module = torch.nn.Module
    if not getattr(module.register_parameter, MARK, False):
        patches.replace(module, "register_parameter", wrap_first_parameter(probe, module))
    _replace_everywhere(patches, (torch,), "save", lambda f: wrap_after(
        probe, "save", f, lambda result, args, kwargs: probe.on_save(args[1] if len(args) > 1 else kwargs.get("f"))))
    # A checkpoint written to a temporary name and renamed into place: follow the rename.
    import os  # noqa: PLC0415 - the standard library's, patched where programs call it
    for name in ("rename", "replace"):
        _replace_everywhere(patches, (os,), name, lambda f: wrap_after(
            probe, "save", f, lambda result, args, kwargs: probe.on_rename(
                args[0] if args else kwargs.get("src"), args[1] if len(args) > 1 else kwargs.get("dst"))))
    _replace_everywhere(patches, (torch,), "load", lambda f: wrap_after(
        probe, "load", f, lambda result, args, kwargs: probe.on_load(args[0] if args else kwargs.get("f"))))
    _replace_everywhere(patches, (torch.nn.utils, clip_grad), "clip_grad_norm_", lambda f: wrap_after(
        probe, "clip", f, lambda result, args, kwargs: probe.on_clip(result)))
    optimizer = torch.optim.Optimizer
    if not getattr(optimizer.__init__, MARK, False):
        patches.replace(optimizer, "__init__", wrap_optimizer_init(probe, patches, optimizer.__init__))
    scalers = [getattr(getattr(torch, "amp", None), "GradScaler", None), torch.cuda.amp.GradScaler]
    for cls in scalers:
        if isinstance(cls, type):
            instrument_scaler_class(probe, patches, cls)
    if not getattr(torch.nn.Module.__call__, MARK, False):
        wrap_first_forward(probe, patches, torch.nn.Module)
    instrument_distributed(probe, patches, torch)
    multiprocessing = getattr(torch, "multiprocessing", None)
    spawn_module = getattr(multiprocessing, "spawn", None)
    # spawn(fn, args=(), nprocs=1, ...) and start_processes(fn, args=(), nprocs=1, ...)
    for name in ("spawn", "start_processes"):
        _replace_everywhere(patches, (multiprocessing, spawn_module), name, lambda f: wrap_spawn(probe, f))
    from .pipelining import instrument_pipelining  # noqa: PLC0415 - it imports this module
    instrument_pipelining(probe, patches, torch)  # torch.distributed.pipelining, once imported
    from .frameworks import instrument_frameworks  # noqa: PLC0415 - it imports this module
    instrument_frameworks(probe, patches)  # transformers, accelerate, Lightning, once imported
