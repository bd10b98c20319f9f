"""The collective ledger (docs/probe.md, "The collective ledger"): every collective this rank
issues through torch.distributed's Python API is written as a `coll` event *before* the call
goes in, numbered per process group in the order the program issued them. A rank that hangs
or aborts inside one has already logged which it was; comparing the ranks' last entries tells
the rank that never reached a collective from those waiting in it, and ranks that called
different collectives (or the same one with other shapes) at the same index.

Point-to-point transfers (send, recv, isend, irecv, batch_isend_irecv) are entries too, on
their channel `0->1` (sender -> receiver), numbered on both sides: a rank that waits in recv #3
from rank 0 while rank 0's last send to it was #2 names rank 0.

Not seen here: collectives issued from C++ (DDP's gradient buckets, functional collectives
traced into a graph)."""
import json
import os
import sys

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

    def _write(self, op, key, tensor):
        n = self.seq.get(key, 0)
        self.seq[key] = n + 1
        step = self.probe.steps.global_step if self.probe.steps is not None else 0
        body = f',"group":{json.dumps(key)},"seq":{n},"op":"{op}"{self.call_site()},"global_step":{step}'
        if isinstance(tensor, self.probe.torch.Tensor):
            shape = ",".join(str(d) for d in tensor.shape)
            body += f',"shape":[{shape}],"dtype":"{str(tensor.dtype)[6:]}"'
        self.probe.ensure_run()
        self.probe.log.write_line("coll", body)
