"""What the probe measures on tensors. Everything here reads and never writes: no in-place op,
no autograd graph (no_grad), no random numbers drawn."""
from collections.abc import Mapping

from .digests import param_digest


def dtype_name(dtype):
    return str(dtype).replace("torch.", "")


def optimizer_params(optimizer):
    """The optimizer's parameters in param_groups order, each once (tied weights count once)."""
    seen, out = set(), []
    for group in optimizer.param_groups:
        for p in group["params"]:
            if id(p) not in seen:
                seen.add(id(p))
                out.append(p)
    return out


def learning_rates(optimizer):
    """Each param group's lr, in group order (groups without one are left out)."""
    return [float(g["lr"]) for g in optimizer.param_groups if g.get("lr") is not None]


_foreach_takes_dtype = [True]  # torch._foreach_norm(..., dtype=) exists (PyTorch 2.1+) until it says no


def grad_norms(torch, grads):
    """Each gradient's 2-norm, as fast as this torch allows without losing range:
    - PyTorch 2.1+: one fused `_foreach_norm(..., dtype=float64)` call, accumulated in float64;
    - PyTorch 1.13: float32/float64 gradients in one `_foreach_norm` call in their own dtype
      (float32: relative error ~1e-7 on real gradients, as clip_grad_norm_'s own; up to ~1e-4
      on huge tensors of equal values); float16/bfloat16 ones widened to float64 one by one,
      since their squares overflow or round away. A float64 call per float32 tensor cost 4x
      the fused call on the example trainer (570 against 146 us a step)."""
    foreach = getattr(torch, "_foreach_norm", None)
    if foreach is not None and _foreach_takes_dtype[0]:
        try:
            return list(foreach(grads, 2, dtype=torch.float64))
        except TypeError:
            _foreach_takes_dtype[0] = False
    wide = (torch.float32, torch.float64)
    if foreach is not None and all(g.dtype in wide for g in grads):
        return list(foreach(grads))
    return [torch.linalg.vector_norm(g, 2, dtype=torch.float64) for g in grads]


def grad_sum_of_squares(torch, params):
    """(sum over the gradients of their squared 2-norms, number of gradients), summed in
    float64. One host synchronisation per device and dtype; a sparse gradient counts its
    stored values."""
    groups = {}
    with torch.no_grad():
        for p in params:
            g = p.grad
            if g is None:
                continue
            if g.is_sparse:
                g = g.coalesce()._values()
            groups.setdefault((g.device, g.dtype), []).append(g.detach())
        total, count = 0.0, 0
        for grads in groups.values():
            total += float(torch.stack(grad_norms(torch, grads)).double().square().sum())
            count += len(grads)
    return total, count


def param_summary(torch, params, digest):
    """param_count, and with `digest` param_digest: the first 16 hex digits of SHA-256 over
    each parameter's dtype, shape and bytes, in order. Also the parameters' device and dtype."""
    fields = {"param_count": sum(int(p.numel()) for p in params), "param_tensors": len(params)}
    if params:
        devices = {str(p.device) for p in params}
        dtypes = {dtype_name(p.dtype) for p in params}
        fields["device"] = devices.pop() if len(devices) == 1 else "mixed"
        fields["dtype"] = dtypes.pop() if len(dtypes) == 1 else "mixed"
    if digest:
        try:
            fields["param_digest"] = param_digest(torch, params)
        except Exception as exc:  # noqa: BLE001 - e.g. meta tensors: the count still stands
            fields["digest_error"] = f"{type(exc).__name__}: {exc}"
    return fields


def first_tensor(torch, value, depth=0):
    """The first tensor in a call's arguments: itself, or inside a list, tuple or mapping
    (two levels deep), in order."""
    if isinstance(value, torch.Tensor):
        return value
    if depth < 3:
        items = value.values() if isinstance(value, Mapping) else (
            value if isinstance(value, (list, tuple)) else ())
        for item in items:
            found = first_tensor(torch, item, depth + 1)
            if found is not None:
                return found
    return None


def has_trainable_param(module):
    return any(p.requires_grad for p in module.parameters())
