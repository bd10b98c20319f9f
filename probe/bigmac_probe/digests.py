"""Digests the orchestrator judges data parallelism by (docs/probe.md, "Digests"): replicas in
sync (the same parameters after the same steps) and every sample once (no two replicas fed the
same micro-batch). A digest is the first 16 hex digits of SHA-256 over a tensor's dtype, shape
and bytes, so equal tensors give equal digests on every rank without a collective.

Everything here reads and never writes: no in-place op, no autograd graph, no random numbers.
Bytes are read in place through a ctypes buffer, never through Tensor.numpy(), which marks the
tensor's storage as never resizable again: FSDP frees a gathered parameter by resizing its
storage to 0, and would fail after the probe digested it."""
import ctypes
import hashlib

INPUT_DIGEST_LIMIT = 1 << 20  # bytes of an input hashed at most (its first 1 MiB, row-major)


def _header(torch_dtype, shape):
    return f"{str(torch_dtype).replace('torch.', '')}{list(shape)}".encode()


def _host_bytes(t):
    """A contiguous host tensor's bytes, in place, as a buffer hashlib reads (the tensor must
    outlive its use)."""
    size = t.numel() * t.element_size()
    return (ctypes.c_char * size).from_address(t.data_ptr()) if size else b""


def param_digest(torch, params):
    """Of the parameters in order, each whole: the same on every replica of a model in sync.
    Copies each parameter to the host (raises on parameters that cannot be read: meta tensors)."""
    sha = hashlib.sha256()
    with torch.no_grad():
        for p in params:
            t = p.detach()
            sha.update(_header(t.dtype, t.shape))
            flat = t.contiguous().reshape(-1).cpu()
            sha.update(_host_bytes(flat))
    return sha.hexdigest()[:16]


def is_digest_step(step):
    """Steps whose parameters are digested after the update: 0, 1, 2, then the powers of two
    (4, 8, 16, ...): early enough to catch replicas that never synchronise, and a full copy of
    the parameters to the host only log2(steps) times in a long run."""
    return step <= 2 or step & (step - 1) == 0


def _first_elements(t, n):
    """The first n elements of t in row-major order, as a 1-D contiguous tensor, copying at most
    about 2n of them: a non-contiguous input (a sliced or transposed batch, as `tokens[:, :-1]`)
    is narrowed along its leading dimensions before it is made contiguous, so a large one is
    never copied whole."""
    if t.dim() == 0:
        return t.reshape(1)
    if t.is_contiguous():
        return t.view(-1)[:n]
    if t.dim() == 1:
        return t[:n].contiguous()
    row = t[0].numel()
    if row == 0:
        return t.reshape(-1)
    rows = -(-n // row)
    if rows == 1:
        return _first_elements(t[0], n)
    return t[:rows].reshape(-1)[:n]  # rows > 1: row < n, so rows * row < 2n elements copied


def input_digest(torch, tensor, limit=INPUT_DIGEST_LIMIT):
    """(digest, bytes hashed) of a forward's input: its dtype and shape, and its first `limit`
    bytes in row-major order (the whole tensor when smaller). A device tensor's part is copied
    to the host (a host synchronisation); a host tensor is read where it is."""
    with torch.no_grad():
        t = tensor.detach()
        size = t.element_size()
        n = min(t.numel(), max(limit // size, 0))
        part = _first_elements(t, n).cpu().contiguous()
        sha = hashlib.sha256(_header(t.dtype, t.shape))
        sha.update(_host_bytes(part))
    return sha.hexdigest()[:16], n * size


SAMPLE_ROW_LIMIT = 1024  # bytes of each sample hashed at most, spread over the whole row


def sample_hashes(torch, tensor, limit=SAMPLE_ROW_LIMIT):
    """One 64-bit hash per sample of a micro-batch: its rows along the first dimension, each
    hashed (SHA-256, first 64 bits) over the dtype, the shape of one row and at most `limit`
    bytes of it, elements taken at an even stride over the whole row (a shared prefix, such as
    a common prompt or padding, does not make two samples alike). The same sample read twice,
    by two ranks or at two steps, hashes alike, which is how the orchestrator sees a sample read
    twice (`sample_coverage`). A device tensor's part is copied to the host."""
    with torch.no_grad():
        t = tensor.detach()
        if t.dim() == 0:
            t = t.reshape(1)
        rows = t.shape[0]
        if rows == 0:
            return []
        flat = t.reshape(rows, -1)
        budget = max(limit // t.element_size(), 1)
        if flat.shape[1] > budget:
            flat = flat[:, ::-(-flat.shape[1] // budget)]
        raw = flat.contiguous().cpu()
        view, width = memoryview(_host_bytes(raw)), raw.shape[1] * raw.element_size()
        header = _header(t.dtype, t.shape[1:])
        return [int.from_bytes(hashlib.sha256(header + view[i * width:(i + 1) * width]).digest()[:8], "big")
                for i in range(rows)]


def sample_set(torch, tensor, limit=SAMPLE_ROW_LIMIT):
    """(count, sum) of a micro-batch's samples (sample_hashes): the sum mod 2^64 of the hashes
    adds up over the micro-batches and the ranks of a step whatever the order, so the
    orchestrator compares a data-parallel step's samples with the single process's."""
    hashes = sample_hashes(torch, tensor, limit)
    return len(hashes), sum(hashes) % (1 << 64)
