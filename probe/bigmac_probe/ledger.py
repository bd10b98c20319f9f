"""The collective ledger (docs/probe.md, "The collective ledger"): every collective this rank
issues through torch.distributed's Python API is written as a `coll` event *before* the call
goes in, numbered per process group in the order the program issued them. A rank that hangs
or aborts inside one has already logged which it was; comparing the ranks' last entries tells
the rank that never reached a collective from those waiting in it, and ranks that called
different collectives (or the same one with other shapes) at the same index.

Point-to-point transfers (send, recv, isend, irecv, batch_isend_irecv) are entries too, on
their channel `0->1` (sender -> receiver), numbered on both sides: a rank that waits in recv #3
from rank 0 while rank 0's last send to it was #2 names rank 0.

DistributedDataParallel's gradient all-reduces are issued from C++, one per bucket: `DdpBuckets`
gives each DDP model a communication hook that writes the bucket's entry and then does what
DDP's default does. Not seen: functional collectives traced into a graph."""
import json
import os
import sys
import weakref

# op -> index of the positional argument that is this rank's input (None: no tensor)
COLLECTIVES = {
    "all_reduce": 0,
    "broadcast": 0,
    "reduce": 0,
    "all_gather": 1,
    "all_gather_into_tensor": 1,
    "_all_gather_base": 1,
    "all_gather_object": None,
    "reduce_scatter": 1,
    "reduce_scatter_tensor": 1,
    "_reduce_scatter_base": 1,
    "all_to_all": 1,
    "all_to_all_single": 1,
    "gather": 0,
    "scatter": 0,
    "barrier": None,
    "broadcast_object_list": None,
}
INPUT_NAMES = {"all_reduce": "tensor", "broadcast": "tensor", "reduce": "tensor", "all_gather": "tensor",
               "all_gather_into_tensor": "input_tensor", "_all_gather_base": "input_tensor",
               "reduce_scatter": "input_list", "reduce_scatter_tensor": "input",
               "_reduce_scatter_base": "input", "all_to_all": "input_tensor_list",
               "all_to_all_single": "input", "gather": "tensor", "scatter": "tensor"}


# op -> index of the positional `group` argument
GROUP_POSITIONS = {"barrier": 0, "all_reduce": 2, "broadcast": 2, "all_gather": 2, "all_gather_into_tensor": 2,
                   "_all_gather_base": 2, "reduce_scatter": 3, "reduce_scatter_tensor": 3,
                   "_reduce_scatter_base": 3}


class Ledger:
    def __init__(self, probe, library_dirs):
        self.probe = probe
        self.seq = {}  # group key -> collectives issued on it so far
        self._groups = {}  # id(group object) -> (its key, the object: kept so the id stays its own)
        self._library = tuple(d.rstrip(os.sep) + os.sep for d in library_dirs)
        self._is_library = {}  # co_filename -> bool
        self.depth = 0  # inside a logged collective: the ones it makes are part of it
        self._rank = None  # this process's global rank, once a transfer needed it

    def group_key(self, group):
        """`world`, else the group's global ranks (`0,2`): the same on every member."""
        if group is None:
            return "world"
        known = self._groups.get(id(group))
        if known is not None:
            return known[0]
        dist = self.probe.torch.distributed
        key = None
        try:
            if group is dist.group.WORLD or group is dist.distributed_c10d._get_default_group():
                key = "world"
            else:
                get = getattr(dist, "get_process_group_ranks", None)
                ranks = get(group) if get is not None else dist.distributed_c10d._pg_group_ranks[group].keys()
                key = ",".join(str(r) for r in sorted(ranks))
        except Exception:  # noqa: BLE001 - a group torch cannot describe: still counted, apart
            key = f"group@{id(group):x}"
        self._groups[id(group)] = (key, group)
        return key

    def call_site(self):
        """The innermost frame of the program's own code, as the JSON of `site` and `fn`."""
        frame = sys._getframe(2)
        while frame is not None:
            code = frame.f_code
            name = code.co_filename
            prefix = self._is_library.get(name)
            if prefix is None:
                library = name.startswith("<") or name.startswith(self._library) or "bigmac_probe" in name
                prefix = False if library else ',"site":' + json.dumps(os.path.basename(name))[:-1]
                self._is_library[name] = prefix
            if prefix is not False:
                return f'{prefix}:{frame.f_lineno}","fn":{json.dumps(code.co_name)}'
            frame = frame.f_back
        return ',"site":"","fn":""'

    def record(self, op, args, kwargs):
        torch = self.probe.torch
        index = COLLECTIVES[op]
        tensor = None
        if index is not None:
            tensor = args[index] if len(args) > index else kwargs.get(INPUT_NAMES[op])
            if isinstance(tensor, (list, tuple)):
                tensor = tensor[0] if tensor else None
        group = kwargs.get("group")
        if group is None:
            # barrier(group), all_reduce(tensor, op, group), broadcast(tensor, src, group), ...
            position = GROUP_POSITIONS.get(op)
            if position is not None and len(args) > position and not isinstance(args[position], bool):
                group = args[position]
        self._write(op, self.group_key(group), tensor)

    def record_p2p(self, op, where, tensor, peer):
        """A send or receive: numbered on its channel from sender to receiver (`0->1`), so the
        sender's n-th send to a rank and that rank's n-th receive from it share an index."""
        if self._rank is None:
            self._rank = self.probe.torch.distributed.get_rank()
        other = "any" if peer is None else int(peer)
        key = f"{self._rank}->{other}" if where == "send" else f"{other}->{self._rank}"
        self._write(op, key, tensor)

    def record_bucket(self, key, bucket, tensor, site):
        """DDP's all-reduce of gradient bucket `bucket` on group `key`, for the backward called
        at `site` (the JSON of `site` and `fn`)."""
        self._write("all_reduce", key, tensor, site + f',"by":"DDP bucket {bucket}"')

    def _write(self, op, key, tensor, site=None):
        n = self.seq.get(key, 0)
        self.seq[key] = n + 1
        step = self.probe.steps.global_step if self.probe.steps is not None else 0
        if site is None:
            site = self.call_site()
        body = f',"group":{json.dumps(key)},"seq":{n},"op":"{op}"{site},"global_step":{step}'
        if isinstance(tensor, self.probe.torch.Tensor):
            shape = ",".join(str(d) for d in tensor.shape)
            body += f',"shape":[{shape}],"dtype":"{str(tensor.dtype)[6:]}"'
        self.probe.ensure_run()
        self.probe.log.write_line("coll", body)


def _first_value(fut):
    return fut.value()[0]


def _keeps_its_own_reduce(ddp):
    """Whether a DDP model keeps its own gradient all-reduce (unlogged): the probe's hook must do
    exactly what DDP would, so it stays out wherever that is not the plain average."""
    return (getattr(ddp, "_use_python_reducer", False)  # compiled autograd's Python reducer
            # the program's own communication hook (its Python collectives are logged anyway)
            or bool(getattr(ddp, "_comm_hooks", None)) or getattr(ddp, "mixed_precision", None) is not None
            # Join(divide_by_initial_world_size=False) divides by the ranks not yet joined
            or not getattr(ddp, "_divide_by_initial_world_size", True)
            or any(getattr(m, "sparse", False) is True for m in ddp.module.modules())  # sparse gradients
            or getattr(ddp, "reducer", None) is None)


class DdpBuckets:
    """DistributedDataParallel's gradient all-reduces in the ledger. At a DDP model's first
    training forward the probe registers a communication hook on its reducer that writes the
    bucket's `coll` entry (`by`: "DDP bucket N"; the call site is the program's line that called
    backward) and then does what DDP's default does: scale the bucket by 1/world (DDP multiplies
    by that factor too, so the result is the same to the bit) and all-reduce it, async. Not for
    a model that already has a hook (the program's own; its Python collectives are logged
    anyway), nor where DDP would divide otherwise (_keeps_its_own_reduce). A hook the program
    registers after the probe's is run by it instead of the average: DDP takes only one."""

    def __init__(self, probe, ledger):
        self.probe = probe
        self.ledger = ledger
        self._seen = weakref.WeakSet()  # DDP models looked at
        self._hooked = weakref.WeakKeyDictionary()  # DDP model -> [the program's later hook, its state]
        self.backward_site = ',"site":"","fn":""'  # the program's line that called backward

    def watch(self, module):
        """A step's first training forward, of `module`: a DDP model gets the hook once."""
        ddp_class = getattr(self.probe.torch.nn.parallel, "DistributedDataParallel", None)
        ddp = getattr(module, "_orig_mod", module)  # torch.compile(DDP(model))
        if ddp_class is None or not isinstance(ddp, ddp_class) or ddp in self._seen:
            return
        self._seen.add(ddp)
        if _keeps_its_own_reduce(ddp):
            return
        dist = self.probe.torch.distributed
        key = self.ledger.group_key(ddp.process_group)
        scale = 1.0 / ddp.process_group.size()
        later = [None, None]
        probe, ledger = self.probe, self.ledger
        # The hook holds neither the model nor its group (the reducer holds the hook): a group
        # kept alive by it past the program's own teardown aborts the process at exit.
        model = weakref.ref(ddp)

        def bigmac_ddp_bucket(state, bucket):
            if later[0] is not None:
                return later[0](later[1], bucket)
            tensor = bucket.buffer()
            if probe.failsafe.active and not probe.tracing():
                probe.guard("collective", ledger.record_bucket, key, bucket.index(), tensor, self.backward_site)
            tensor.mul_(scale)
            work = dist.all_reduce(tensor, group=model().process_group, async_op=True)
            return work.get_future().then(_first_value)

        try:
            dist._register_comm_hook(ddp.reducer, None, bigmac_ddp_bucket)
        except RuntimeError:  # a hook is already registered (the program's, or a built-in one)
            return
        self._hooked[ddp] = later

    def later_hook(self, ddp, state, hook):
        """DDP.register_comm_hook after the probe's: True when the probe's hook takes it over."""
        later = self._hooked.get(ddp)
        if later is None or later[0] is not None:
            return False
        later[0], later[1] = hook, state
        return True

    def note_backward(self):
        """Where the program called backward: the site of the buckets that backward reduces (on
        a GPU they run on autograd's device thread, which holds no frame of the program)."""
        if self._hooked:
            self.backward_site = self.ledger.call_site()
