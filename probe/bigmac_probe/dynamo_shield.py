"""How the probe keeps out of the graphs torch.compile captures (docs/probe.md, "torch.compile").

TorchDynamo meets the probe's code in two ways while a compiled function runs:
- traced: a wrapper called from code Dynamo is tracing (the model called inside a compiled loss
  function, `opt.step()` inside `torch.compile(opt.step)`). Every wrapper first asks the function
  tracing_check() gives, which Dynamo folds to the constant True, and then only calls the
  original: no graph break, no guard on the probe's state, no recompile. What runs there is not
  seen, except an optimizer step (torch_patches._traced_step).
- run: a wrapper called by code that Dynamo runs eagerly in the middle of a compiled function
  (Tensor.backward, after the graph break it causes). Dynamo would compile that frame on its
  own, fold the same check to True and drop the probe's part. So once the program imports
  torch._dynamo the wrappers' code is marked to run as it is (skip_code: that frame is not
  compiled; what it calls is treated as usual, as for torch's own functions), and Probe.guard,
  through which all of the probe's work runs, runs with Dynamo off (torch._dynamo.disable), so
  no frame of the probe is ever compiled.

Nothing here imports torch._dynamo (about 2 s): Probe attaches on_dynamo to its import."""

_pending = []  # code objects to run as they are, once torch._dynamo is imported
_marked = set()  # those already handed to it
_skip_code = [None]  # torch._dynamo.eval_frame.skip_code, once imported


def tracing_check(torch):
    """torch.compiler.is_compiling (PyTorch 2.3+; torch._utils.is_compiling in 2.1 and 2.2):
    True while Dynamo traces the caller. PyTorch 1.13 has no Dynamo: never."""
    for owner in (getattr(torch, "compiler", None), getattr(torch, "_utils", None)):
        check = getattr(owner, "is_compiling", None)
        if callable(check):
            return check
    return lambda: False


def run_as_is(function):
    """Marks a function torch calls (a wrapper, a hook) so that Dynamo never compiles its frame,
    when torch._dynamo is imported (at once if it is). Every function made by one `def` shares
    its code object: each is marked once. Returns the function."""
    code = getattr(function, "__code__", None)
    if code is None or code in _marked:
        return function
    _marked.add(code)
    if _skip_code[0] is not None:
        _skip_code[0](code)
    else:
        _pending.append(code)
    return function


def on_dynamo(probe, dynamo):
    """The program imported torch._dynamo (its first torch.compile): the wrappers run as they
    are, the probe's work with Dynamo off, and a compiled optimizer step has its eager parts."""
    skip = getattr(getattr(dynamo, "eval_frame", None), "skip_code", None)
    if skip is not None and _skip_code[0] is None:
        _skip_code[0] = skip
        while _pending:
            skip(_pending.pop())
    if "guard" not in vars(probe):  # once per probe: an instance attribute over the method
        probe.guard = dynamo.disable(probe.guard)
    probe.prepare_eager_step(dynamo)
