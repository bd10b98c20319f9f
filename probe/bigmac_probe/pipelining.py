"""torch.distributed.pipelining seen from inside: the stages a rank runs, the schedule's actions,
the tensors at each stage boundary and where the loss is computed, written as `layout`, `mb`,
`shape` and `loss` events (docs/pipelines.md) for a program that logs none of them. A
hand-written pipeline (dist.send/recv between ranks) gets its `layout` and `loss` events from its
transfers instead: the rank's neighbours in the chain, its layers where parameter names give them.

The hooks go in when the program imports torch.distributed.pipelining (PyTorch 2.x); a program
that never does costs nothing. Like every probe hook they only read: each wrapper calls the
original with the program's arguments and returns its result; the probe's part runs inside
Probe.guard. One thing is written back, on purpose and documented: a schedule that scales the
gradients by its micro-batch count (`scale_grads=True`, the default) has each micro-batch's loss
counted as loss / M, so the step's `loss` is the objective whose gradient the step applies, as
for `(loss / accum).backward()`.
"""
import functools
import gc
import re
import weakref

from .import_hook import PostImportHook
from .tensor_stats import dtype_name
from .torch_patches import MARK

MODULE = "torch.distributed.pipelining"
# The first path component of a parameter name that is a number: `layers.4.attn.weight`
# (prefix "layers", layer 4), `0.ln1.weight` (an nn.Sequential of layers: prefix "", layer 0).
_LAYER = re.compile(r"^(?:(.*?)\.)?(\d+)(?:\.|$)")
# Module lists whose children are the layers (an empty one: a stage cut to hold none).
_LAYER_LISTS = ("ModuleList", "ModuleDict", "Sequential")
# Schedule classes by what the tool calls them (parallel.schedule); others keep their own name.
_SCHEDULE_NAMES = {"ScheduleGPipe": "gpipe", "Schedule1F1B": "1f1b"}


def _marked(wrapper):
    setattr(wrapper, MARK, True)
    return wrapper


def _first_tensor(torch, value):
    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, (list, tuple)):
        for item in value:
            found = _first_tensor(torch, item)
            if found is not None:
                return found
    if isinstance(value, dict):
        for item in value.values():
            found = _first_tensor(torch, item)
            if found is not None:
                return found
    return None


def _layer_of(name):
    """(container prefix, layer index) of a parameter name, or None."""
    match = _LAYER.match(name)
    return (match.group(1) or "", int(match.group(2))) if match else None


def _outer_positions(container, indices):
    """Where the stage's layer modules sit in another container of numbered modules (the whole
    model's ModuleList, still alive when the stage is made): {local index: global index} and that
    container's length, or (None, 0) when the layers are in no other container, or in several."""
    own = container._modules
    outer, mapping = None, {}
    for index in indices:
        module = own.get(str(index))
        if module is None:
            return None, 0
        homes = [d for d in gc.get_referrers(module)
                 if isinstance(d, dict) and d is not own and any(
                     v is module and isinstance(k, str) and k.isdigit() for k, v in d.items())]
        if len(homes) != 1 or (outer is not None and homes[0] is not outer):
            return None, 0
        outer = homes[0]
        mapping[index] = next(int(k) for k, v in outer.items() if v is module)
    return (mapping, len(outer)) if outer is not None else (None, 0)


def stage_layers(submod):
    """The layers a stage's module holds, read from its parameter names: a dict with
    `first_layer`, `last_layer`, `layer_source`, and `num_layers` when the whole model's count is
    known, or `layers_unknown` saying why there is no range."""
    names = [n for n, _ in submod.named_parameters()]
    by_prefix = {}
    for name in names:
        found = _layer_of(name)
        if found is not None:
            by_prefix.setdefault(found[0], set()).add(found[1])
    if not by_prefix:
        # A list of layers left empty (every layer cut away) holds none: the stage owns no layer.
        for name, module in submod.named_modules():
            if type(module).__name__ in _LAYER_LISTS and len(module._modules) == 0:
                return {"first_layer": -1, "last_layer": -1,
                        "layer_source": f"`{name or type(module).__name__}` of the stage holds no layer"}
        shown = ", ".join(names[:4]) + (", ..." if len(names) > 4 else "")
        return {"layers_unknown": f"no parameter name of the stage carries a layer index ({shown or 'no parameters'})"}
    prefix = max(by_prefix, key=lambda p: len(by_prefix[p]))
    indices = sorted(by_prefix[prefix])
    where = f"`{prefix}.N`" if prefix else "`N.` (the stage module's own numbered children)"
    out = {}
    try:
        container = submod.get_submodule(prefix) if prefix else submod
    except AttributeError:
        container = None
    mapping, count = (_outer_positions(container, indices) if container is not None
                      and hasattr(container, "_modules") else (None, 0))
    if mapping and (any(mapping[i] != i for i in indices) or count > len(container._modules)):
        indices = sorted(mapping[i] for i in indices)
        out["num_layers"] = count
        out["layer_source"] = (f"parameter names {where}, placed by the model's container of {count} "
                               "layers that held the same modules when the stage was made")
    else:
        out["layer_source"] = f"parameter names {where}"
        if mapping is None and indices[0] == 0 and not prefix:
            out["layer_source"] += " (numbered from 0 within the stage: a first stage's, or local)"
    if indices != list(range(indices[0], indices[-1] + 1)):
        out["layer_gaps"] = [i for i in range(indices[0], indices[-1] + 1) if i not in indices]
    out["first_layer"], out["last_layer"] = indices[0], indices[-1]
    return out


def _dp_of(dist, group, world):
    """(dp_rank, dp_size, note) of a stage whose pipeline group is `group`: the replicas are the
    other pipeline groups of the world. The replica index is known when the group's ranks are
    contiguous (rank // pp) or strided by the replica count (its first rank)."""
    if group is None:
        return 0, 1, ""
    ranks = sorted(dist.get_process_group_ranks(group))
    size = len(ranks)
    if size <= 0 or world % size != 0:
        return 0, 1, f"the pipeline group of {size} ranks does not divide the world of {world}"
    replicas = world // size
    if replicas == 1:
        return 0, 1, ""
    if ranks == list(range(ranks[0], ranks[0] + size)):
        return ranks[0] // size, replicas, ""
    if ranks == list(range(ranks[0], ranks[0] + size * replicas, replicas)):
        return ranks[0], replicas, ""
    return 0, replicas, f"pipeline group {ranks}: which replica it is is not known"


class Pipelining:
    """What the hooks saw of this process's stages and schedules, and the events made of it."""

    def __init__(self, probe, torch):
        self.probe = probe
        self.torch = torch
        self.stages = weakref.WeakKeyDictionary()  # stage -> its layers (read when it was made)
        self.written = weakref.WeakKeyDictionary()  # stages whose `layout` is written
        self.depth = 0  # inside a schedule's step(): nested calls (eval -> step) count once
        self.step_losses = []  # (stage, mb, loss tensor) of the schedule step in progress
        self.chunk = None  # (stage, mb) of the forward in progress
        self.losses_before = 0
        self.transfers = []  # (where, peer) of step 0's point-to-point transfers, in order
        self.chain_written = False

    # ---- a hand-written pipeline (dist.send/recv) ----------------------------------------
    def on_transfer(self, where, peer):
        if not self.chain_written and self.probe.steps.global_step == 0:
            self.transfers.append((where, -1 if peer is None else int(peer)))

    def on_step_end(self, fields, params):
        """A step of a program that moves tensors point to point without
        torch.distributed.pipelining: the first writes the rank's place in the chain as its
        `layout`; each writes the losses this rank computed as `loss` events. The stage index
        is known here for the head of the chain only (no transfer received before its first
        send); the orchestrator counts the others' along the chain (prev_rank, next_rank)."""
        if len(self.written) > 0 or (not self.transfers and not self.chain_written):
            return
        if not self.chain_written:
            self.chain_written = True
            where, peer = self.transfers[0]
            prev = None if where == "send" else peer
            nxt = next((p for w, p in self.transfers if w == "send" and p != prev), None)
            self.chain = {"stage": 0 if prev is None else -1, "prev_rank": -1 if prev is None else prev,
                          "next_rank": -1 if nxt is None else nxt}
            unique = {id(p): p for p in params}
            layers = self._chain_layers(head=prev is None)
            not_inferred = ["the micro-batch passes (mb)", "weights tied across stages"]
            self.probe._write("layout", {
                **self.chain, "num_stages": 0, "first_layer": -1, "last_layer": -1, "dp_rank": 0,
                "dp_size": 1, "param_count": sum(p.numel() for p in unique.values()), "tied": [],
                "tied_duplicate_count": 0, "source": "probe",
                "stage_source": "the point-to-point transfers of the first step", **layers,
                "not_inferred": (["the layer range"] if "layers_unknown" in layers else []) + not_inferred})
        values = fields.get("losses") or ([fields["loss"]] if "loss" in fields else [])
        for mb, value in enumerate(values):
            self.probe._write("loss", {"global_step": fields["global_step"], "stage": self.chain["stage"],
                                       "mb": mb, "value": value, "prev_rank": self.chain["prev_rank"]})

    def _chain_layers(self, head):
        """The layers of a hand-written stage, from the parameter names of the module the rank's
        first training forward called (stage_layers). Names numbered from 0 on a stage after the
        first are the rank's own numbering (a slice rebuilt as its own Sequential), not the whole
        model's: they give no range rather than a guess."""
        model = self.probe.model_ref() if self.probe.model_ref is not None else None
        if model is None:
            return {"layers_unknown": "a hand-written pipeline (dist.send/recv): no training forward "
                                      "of a module was seen before its first step"}
        found = stage_layers(model)
        if "layers_unknown" in found:
            found["layers_unknown"] = (f"a hand-written pipeline (dist.send/recv) whose `{type(model).__name__}`"
                                       f" gives no layer index: {found['layers_unknown']}")
        elif not head and found["first_layer"] == 0 and "num_layers" not in found:
            return {"layers_unknown": (f"a hand-written pipeline (dist.send/recv): the parameter names of "
                                       f"`{type(model).__name__}` on a stage after the first number its "
                                       "layers from 0, the rank's own numbering, not the model's")}
        return found

    # ---- stages --------------------------------------------------------------------------
    def on_stage_made(self, stage):
        """A stage is made: its layers are read now, while the whole model that its layers were
        cut from may still be alive (a builder function's local)."""
        self.stages[stage] = stage_layers(stage.submod)

    def layout(self, stage, schedule):
        dist = self.torch.distributed
        world = dist.get_world_size() if dist.is_initialized() else 1
        dp_rank, dp_size, dp_note = _dp_of(dist, getattr(stage, "group", None), world)
        params = {id(p): p for p in stage.submod.parameters()}
        fields = {"stage": stage.stage_index, "num_stages": stage.num_stages,
                  "dp_rank": dp_rank, "dp_size": dp_size,
                  "param_count": sum(p.numel() for p in params.values()),
                  "tied": [], "tied_duplicate_count": 0, "source": "probe",
                  "schedule": _SCHEDULE_NAMES.get(type(schedule).__name__, type(schedule).__name__),
                  "schedule_class": type(schedule).__name__,
                  "n_microbatches": getattr(schedule, "_n_microbatches", 0),
                  "stages_per_rank": max(1, stage.num_stages // max(1, getattr(stage, "group_size", 1)))}
        layers = self.stages.get(stage)
        if layers is None:  # made before the probe's hooks went in
            layers = stage_layers(stage.submod)
        fields.update(layers)
        if "layers_unknown" in layers:
            fields["first_layer"], fields["last_layer"] = -1, -1
        if dp_note:
            fields["dp_unknown"] = dp_note
        # Not seen from one rank: a weight this stage shares with another (a tied embedding and
        # head live in two processes as two tensors).
        fields["not_inferred"] = ["weights tied across stages"]
        self.probe._write("layout", fields)

    # ---- a schedule's step ----------------------------------------------------------------
    def begin_schedule(self, schedule):
        self.depth += 1
        if self.depth > 1:
            return False
        stages = self._schedule_stages(schedule)
        for stage in stages:
            if stage not in self.written:
                self.written[stage] = True
                self.layout(stage, schedule)
        self.step_losses = []
        self.losses_before = self.probe.steps.pending_losses()
        return True

    def end_schedule(self, schedule):
        """The step's losses as `loss` events (one host synchronisation), and counted as the
        objective the schedule's scaled gradients follow."""
        losses, self.step_losses = self.step_losses, []
        if not losses:
            return
        values = self.torch.stack([t.detach().reshape(()).double() for _, _, t in losses]).tolist()
        step = self.probe.steps.global_step
        for (stage, mb, _), value in zip(losses, values):
            self.probe._write("loss", {"global_step": step, "stage": stage, "mb": mb, "value": value})
        m = getattr(schedule, "_n_microbatches", 1)
        steps = self.probe.steps
        counted = steps.pending_losses() - self.losses_before
        if getattr(schedule, "scale_grads", False) and m > 1 and counted == len(losses):
            steps.keep_first_losses(self.losses_before)
            for _, _, tensor in losses:
                steps.note_loss(tensor.detach() / m)

    def leave_schedule(self):
        self.depth = max(0, self.depth - 1)

    def _schedule_stages(self, schedule):
        stage = getattr(schedule, "_stage", None)
        if stage is not None:
            return [stage]
        return list(getattr(schedule, "_stages", []) or [])

    def recording(self, stage):
        """Micro-batches are recorded inside a training step of a schedule only (not an eval)."""
        return self.depth > 0 and getattr(stage, "has_backward", False) and self.torch.is_grad_enabled()

    # ---- micro-batches, boundaries, losses ---------------------------------------------------
    def write_mb(self, stage, mb, phase, start, end):
        self.probe._write("mb", {"global_step": self.probe.steps.global_step, "stage": stage.stage_index,
                                 "mb": mb, "phase": phase, "start": start, "end": end})

    def write_shape(self, stage, mb, where, name, tensor):
        self.probe._write("shape", {"global_step": self.probe.steps.global_step, "stage": stage.stage_index,
                                    "mb": mb, "where": where, "name": name, "shape": list(tensor.shape),
                                    "dtype": dtype_name(tensor.dtype), "device": str(tensor.device),
                                    "source": "pipelining"})

    def on_forward(self, stage, args, output):
        """What entered and left the stage's module for the chunk in progress: written before the
        stage checks its output against the shapes it announced, so a wrong one is on record."""
        if self.chunk is None or self.chunk[0] is not stage:
            return
        mb = self.chunk[1]
        torch = self.torch
        entered = _first_tensor(torch, args)
        if entered is not None:
            self.write_shape(stage, mb, "enter", "input" if stage.is_first else "hidden_states", entered)
        left = _first_tensor(torch, output)
        if left is not None:
            self.write_shape(stage, mb, "exit", "logits" if stage.is_last else "hidden_states", left)

    def on_loss(self, schedule, stage, target_mbs, mb):
        if (not stage.is_last or not stage.has_backward or schedule._loss_fn is None
                or not schedule._internal_losses):
            return
        loss = schedule._internal_losses[-1]
        if isinstance(loss, self.torch.Tensor) and loss.numel() == 1:
            self.step_losses.append((stage.stage_index, mb, loss.detach()))
        target = _first_tensor(self.torch, target_mbs[mb]) if target_mbs is not None else None
        if target is not None:
            self.write_shape(stage, mb, "labels", "labels", target)


def _wrap_init(probe, state, original):
    @functools.wraps(original)
    def __init__(self, *args, **kwargs):
        original(self, *args, **kwargs)
        if probe.failsafe.active:
            probe.guard("pipelining", state.on_stage_made, self)
    return _marked(__init__)


def _wrap_schedule_step(probe, state, original):
    @functools.wraps(original)
    def step(self, *args, **kwargs):
        entered = probe.failsafe.active and probe.guard("pipelining", state.begin_schedule, self)
        try:
            result = original(self, *args, **kwargs)
        finally:
            if probe.failsafe.active:
                probe.guard("pipelining", state.leave_schedule)
        if entered and probe.failsafe.active:
            probe.guard("pipelining", state.end_schedule, self)
        return result
    return _marked(step)


def _wrap_chunk(probe, state, original, phase):
    """forward_one_chunk / backward_one_chunk(chunk_id, ...): one `mb` event with its times."""
    @functools.wraps(original)
    def chunk(self, chunk_id, *args, **kwargs):
        if not probe.failsafe.active or not probe.guard("pipelining", state.recording, self):
            return original(self, chunk_id, *args, **kwargs)
        clock = probe.log.clock
        start = clock()
        outer, state.chunk = state.chunk, (self, chunk_id) if phase == "F" else state.chunk
        try:
            result = original(self, chunk_id, *args, **kwargs)
        finally:
            state.chunk = outer
        if probe.failsafe.active:
            probe.guard("pipelining", state.write_mb, self, chunk_id, phase, start, clock())
        return result
    return _marked(chunk)


def _wrap_module_forward(probe, state, original):
    @functools.wraps(original)
    def forward_maybe_with_nosync(self, *args, **kwargs):
        output = original(self, *args, **kwargs)
        if probe.failsafe.active and state.chunk is not None:
            probe.guard("pipelining", state.on_forward, self, args, output)
        return output
    return _marked(forward_maybe_with_nosync)


def _wrap_loss(probe, state, original):
    @functools.wraps(original)
    def _maybe_compute_loss(self, stage, output, target_mbs, mb_index):
        result = original(self, stage, output, target_mbs, mb_index)
        if probe.failsafe.active and state.depth > 0:
            probe.guard("pipelining", state.on_loss, self, stage, target_mbs, mb_index)
        return result
    return _marked(_maybe_compute_loss)


def _replace(patches, cls, name, make):
    original = cls.__dict__.get(name)
    if original is not None and not getattr(original, MARK, False):
        patches.replace(cls, name, make(original))


def instrument(probe, patches, torch, pipelining, state=None):
    """The hooks into torch.distributed.pipelining's stage and schedule classes."""
    import inspect  # noqa: PLC0415

    stage_module = pipelining.stage
    schedules = pipelining.schedules
    state = state or Pipelining(probe, torch)
    base = stage_module._PipelineStageBase
    for cls in (base, *(c for c in vars(stage_module).values()
                        if inspect.isclass(c) and issubclass(c, base) and c is not base)):
        _replace(patches, cls, "__init__", lambda f: _wrap_init(probe, state, f))
    _replace(patches, base, "forward_one_chunk", lambda f: _wrap_chunk(probe, state, f, "F"))
    _replace(patches, base, "backward_one_chunk", lambda f: _wrap_chunk(probe, state, f, "B"))
    _replace(patches, base, "forward_maybe_with_nosync", lambda f: _wrap_module_forward(probe, state, f))
    schedule_base = schedules._PipelineSchedule
    _replace(patches, schedule_base, "_maybe_compute_loss", lambda f: _wrap_loss(probe, state, f))
    for cls in vars(schedules).values():
        if inspect.isclass(cls) and issubclass(cls, schedule_base) and "step" in cls.__dict__:
            _replace(patches, cls, "step", lambda f: _wrap_schedule_step(probe, state, f))
    probe.pipelining = state
    return state


def instrument_pipelining(probe, patches, torch):
    """Called by instrument_torch: transfers are followed at once (a hand-written pipeline);
    the schedule hooks follow the program's import of torch.distributed.pipelining (at once when
    it is imported already)."""
    if not hasattr(torch, "distributed") or not torch.distributed.is_available():
        return
    state = Pipelining(probe, torch)
    probe.pipelining = state
    PostImportHook(MODULE, lambda module: probe.guard(
        "install", instrument, probe, patches, torch, module, state)).install()
