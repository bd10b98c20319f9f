"""Parameters a rank holds only a shard of: DTensors (FSDP2's fully_shard, tensor parallelism)
and FSDP1's flat parameters (FullyShardedDataParallel). The probe reports the whole model on
every rank, as it does under DDP (docs/probe.md, "Sharded parameters"), so the orchestrator's
checks (replicas in sync, loss and grad_norm against the single process) read them unchanged:

- param_count, param_tensors: from the global shapes (a DTensor's numel is its global one;
  a flat parameter's original parameters are in its `_numels`);
- grad_norm: each rank's sum of squares over its local shards, all-reduced (SUM) over the
  process groups the parameters are sharded over, one float64 vector per group per step;
- param_digest: of the full parameters, in the model's order: DTensor.full_tensor() (an
  all-gather per parameter) or FSDP1's summon_full_params (one per FSDP unit), at the digest
  steps only (0, 1, 2, 4, 8, ...).

These are the only collectives the probe adds. Every rank makes them at the same point of the
same step (the counted optimizer's step), in an order derived from the parameters' sharding,
which every rank of a group shares, and before it writes anything of that step: a log that
fails on one rank cannot leave the others waiting. Nothing here imports torch.distributed's
modules: a program that never imported them has nothing sharded.

A Sharding holds the model, its meshes and its FSDP modules by weak reference only, and
resolves the process groups when it reduces: kept alive by the probe past the program's own
destroy_process_group(), a Gloo group is destroyed at interpreter exit, where PyTorch 2.11
aborts the process ("terminate called without an active exception") once FSDP1 used it."""
import math
import sys
import weakref

from .digests import param_digest


def _loaded(*names):
    for name in names:
        module = sys.modules.get(name)
        if module is not None:
            return module
    return None


def dtensor_class():
    """torch.distributed.tensor.DTensor (PyTorch 2.4+; torch.distributed._tensor before), when
    the program imported it."""
    module = _loaded("torch.distributed.tensor", "torch.distributed._tensor")
    return getattr(module, "DTensor", None)


def _fsdp1_class():
    module = _loaded("torch.distributed.fsdp")
    return getattr(module, "FullyShardedDataParallel", None)


def _device_of(torch, device_type):
    """Where a collective over a group of this device type runs (NCCL needs the current GPU)."""
    if device_type == "cpu":
        return torch.device("cpu")
    backend = getattr(torch, device_type, None)
    index = backend.current_device() if hasattr(backend, "current_device") else 0
    return torch.device(device_type, index)


def _group_key(group):
    """A process group's name (PyTorch 2.x names every group): two meshes over the same ranks
    (one per fully_shard call) share their group, and so its one all-reduce."""
    return getattr(group, "group_name", None) or id(group)


def _mesh_group(mesh, dim):
    """A mesh dimension's process group, looked up when used (the mesh held weakly)."""
    ref = weakref.ref(mesh)
    return lambda: ref().get_group(dim)


def _module_group(module):
    ref = weakref.ref(module)
    return lambda: ref().process_group


class Sharding:
    """How the counted optimizer's parameters are sharded. `groups[i]` is the tuple of keys of
    the process groups parameter i is sharded over (empty: every rank holds it whole),
    `numels[i]` its global element count; `resolve[key]()` gives the group itself. Made by
    sharding_of() for the optimizer's parameter list."""

    def __init__(self, torch, params, model):
        self.torch = torch
        self.dtensor = dtensor_class()
        self.fsdp1_root = None  # weak reference to the module summon_full_params gathers (FSDP1)
        self.groups, self.numels, self.tensors = [], [], 0
        self.resolve, self.devices = {}, {}  # group key -> the group; -> device of its collectives
        fsdp1 = self._fsdp1_params(model)
        for p in params:
            if self.dtensor is not None and isinstance(p, self.dtensor):
                mesh = p.device_mesh
                groups = []
                for dim, placement in enumerate(p.placements):
                    if placement.is_shard():
                        key = _group_key(mesh.get_group(dim))
                        self.resolve.setdefault(key, _mesh_group(mesh, dim))
                        self.devices.setdefault(key, _device_of(torch, mesh.device_type))
                        groups.append(key)
                groups, numel, count = tuple(groups), p.numel(), 1
            elif id(p) in fsdp1:
                groups, numel, count = fsdp1[id(p)]
            elif getattr(p, "_is_flat_param", False):
                raise RuntimeError("an FSDP flat parameter whose FullyShardedDataParallel module the "
                                   "probe did not see called: its shards cannot be combined")
            else:
                groups, numel, count = (), p.numel(), 1
            self.groups.append(groups)
            self.numels.append(numel)
            self.tensors += count
        # Groups in order of first appearance: the same on every rank of each.
        self.order = list(dict.fromkeys(key for groups in self.groups for key in groups))

    def _fsdp1_params(self, model):
        """{id(param): (group keys, global numel, original tensors)} for the FSDP1 parameters
        under `model`: flat parameters, and with use_orig_params the original ones (each a view
        of its rank's part of the flat parameter)."""
        fsdp = _fsdp1_class()
        if fsdp is None or model is None:
            return {}
        found = {}
        for module in fsdp.fsdp_modules(model):
            handle = getattr(module, "_handle", None)
            if handle is None:
                continue
            flat = handle.flat_param
            groups = ()
            if getattr(handle, "uses_sharded_strategy", True):
                key = _group_key(module.process_group)
                groups = (key,)
                self.resolve.setdefault(key, _module_group(module))
                self.devices.setdefault(key, getattr(module, "compute_device", None) or flat.device)
            found[id(flat)] = (groups, sum(flat._numels), len(flat._numels))
            for param, numel in zip(getattr(flat, "_params", None) or (), flat._numels):
                found[id(param)] = (groups, numel, 1)
            self.fsdp1_root = weakref.ref(model)
        return found

    def summary(self):
        """param_count and param_tensors of the whole model."""
        return {"param_count": int(sum(self.numels)), "param_tensors": self.tensors}

    def grad_sum_of_squares(self, params, norms):
        """(sum of the squared gradient norms of the whole model, gradients counted on this
        rank), or (None, count) when a gradient is a partial sum (a DTensor placed Partial),
        whose squares do not add up. `norms(tensors)` gives each local tensor's 2-norm."""
        torch, dtensor = self.torch, self.dtensor
        local, keys, count = [], [], 0
        for p, groups in zip(params, self.groups):
            g = p.grad
            if g is None:
                continue
            if dtensor is not None and isinstance(g, dtensor):
                if any(pl.is_partial() for pl in g.placements):
                    return None, count  # the same placements on every rank: none reduces
                g = g.to_local()
            if g.is_sparse:
                g = g.coalesce()._values()
            local.append(g.detach())
            keys.append(groups)
            count += 1
        sums = {groups: 0.0 for groups in self.groups}
        by_kind = {}
        for key, g in zip(keys, local):
            by_kind.setdefault((g.device, g.dtype), []).append((key, g))
        with torch.no_grad():
            for items in by_kind.values():
                squares = torch.stack(norms([g for _, g in items])).double().square().tolist()
                for (key, _), sq in zip(items, squares):
                    sums[key] += sq
        dist = torch.distributed
        for group in self.order:
            shared = [key for key in sums if group in key]
            vector = torch.tensor([sums[key] for key in shared], dtype=torch.float64,
                                  device=self.devices[group])
            dist.all_reduce(vector, op=dist.ReduceOp.SUM, group=self.resolve[group]())
            for key, value in zip(shared, vector.tolist()):
                sums[key] = value
        return math.fsum(sums.values()), count

    def digest(self, params):
        """param_digest of the full parameters: FSDP1's gathered by summon_full_params over the
        model (its parameters in the model's own order), DTensors each by full_tensor()."""
        torch = self.torch
        if self.fsdp1_root is not None:
            fsdp, root = _fsdp1_class(), self.fsdp1_root()
            with fsdp.summon_full_params(root, writeback=False, recurse=True):
                return param_digest(torch, list(root.parameters()))
        dtensor = self.dtensor
        return param_digest(torch, (p.full_tensor() if dtensor is not None and isinstance(p, dtensor)
                                    else p for p in params))


def sharding_of(torch, params, model):
    """A Sharding when any of `params` is sharded (a DTensor placed Shard on some mesh
    dimension, an FSDP1 parameter with a sharded strategy), else None: a program without them
    pays two dictionary look-ups."""
    if dtensor_class() is None and _fsdp1_class() is None:
        return None
    sharding = Sharding(torch, params, model)
    return sharding if sharding.order or sharding.fsdp1_root is not None else None
