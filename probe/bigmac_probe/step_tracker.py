"""Per-process step bookkeeping: which optimizer's steps count, the step number, and what the
program did since the last step (losses backward() ran on, the clip norm, transfers, the
step's first training input)."""
import math
import weakref


class StepTracker:
    """global_step counts attempted optimizer steps of one optimizer, the *primary*: the first
    one whose step() runs (or that a GradScaler steps). A step a GradScaler skips still counts,
    as trainers' own counters do, and is marked skipped. A new optimizer becomes primary once
    the old one is garbage."""

    LOSS_LIST_LIMIT = 64  # a step's `losses` list is written only up to this many values
    KEEP_LIMIT = 1024  # past this many losses in one step they are summed on their device
    # Per-sample hashes are written for a process's first samples only (16 bytes of log each):
    # enough to see the samples of the first steps read twice, bounded whatever the run's length.
    SAMPLE_HASH_LIMIT = 4096

    def __init__(self, torch, now):
        self._torch = torch
        self.global_step = 0
        self.in_step = False  # inside the primary's step(): a nested step() (super()) is not one
        self.last_end = now  # when the previous step ended (or tracking began)
        self._primary = None
        self._losses = []  # detached scalar tensors, in backward() order
        self._folded = None  # (float64 sum, count) of losses summed to bound memory
        self._scaled = []  # (weak reference to a GradScaler output, the tensor it scaled)
        self._preclip = None
        self._transfers = {}
        self._input = None  # the fields of this step's first training input, once it is seen
        self._samples = None  # [count, sum, hashes] of this step's samples; False: unreadable
        self._sample_calls = 0  # micro-batches noted this step (note_samples calls)
        self._hashes_written = 0  # sample hashes written in `sample_hashes` so far
        self._buffers = None  # this step's buffer digest: None not yet, False unreadable

    def is_primary(self, optimizer):
        current = self._primary() if self._primary is not None else None
        if current is None:
            self._primary = weakref.ref(optimizer)
            return True
        return current is optimizer

    def note_scaled(self, scaled, original):
        """A GradScaler returned `scaled` for the loss `original`."""
        self._scaled = [(ref, t) for ref, t in self._scaled if ref() is not None]
        self._scaled.append((weakref.ref(scaled), original.detach().clone()))

    def note_loss(self, tensor):
        """backward() ran on the scalar `tensor`: keep its value, unscaled if a GradScaler
        scaled it."""
        value = None
        for ref, original in self._scaled:
            if ref() is tensor:
                value = original
                break
        self._losses.append(value if value is not None else tensor.detach().clone())
        if len(self._losses) >= self.KEEP_LIMIT:
            # backward() without a counted step (another optimizer's, an analysis): keep the
            # sum, not every tensor, so memory stays bounded without a host synchronisation.
            total = self._stack().sum()
            count = len(self._losses)
            if self._folded is not None:
                total = total + self._folded[0].to(total.device)
                count += self._folded[1]
            self._folded, self._losses = (total, count), []

    def pending_losses(self):
        """Losses noted since the last step, not yet taken."""
        return len(self._losses) + (self._folded[1] if self._folded is not None else 0)

    def keep_first_losses(self, count):
        """Keeps the first `count` losses of the step (a closure's re-evaluations are not more
        micro-batches)."""
        if self._folded is None:
            del self._losses[count:]

    def note_clip(self, total_norm):
        self._preclip = total_norm

    def note_input(self, fields):
        """The step's first training forward: its input's fields (shape, digest). Only the
        first micro-batch of a step is kept, whatever comes after it."""
        if self._input is None:
            self._input = fields

    def note_samples(self, hashes):
        """One micro-batch's sample hashes (digests.sample_hashes); None when its input could
        not be read, which leaves the step without a sample set."""
        self._sample_calls += 1
        if self._samples is False:
            return
        if hashes is None:
            self._samples = False
            return
        if self._samples is None:
            self._samples = [0, 0, []]
        self._samples[0] += len(hashes)
        self._samples[1] = (self._samples[1] + sum(hashes)) % (1 << 64)
        self._samples[2].extend(hashes[:max(self.SAMPLE_HASH_LIMIT + 1 - len(self._samples[2]), 0)])

    def unseen_samples(self):
        """A micro-batch ran where its input could not be hashed (inside a compiled function):
        the step gets no sample set. One attribute store, which TorchDynamo can replay."""
        self._samples = False

    def take_samples(self, losses=None):
        """`sample_count` and `sample_digest` of the step now ending ({} when none, or when a
        micro-batch could not be read), and `sample_hashes` (every sample's hash, 16 hex digits
        each) while this process has written fewer than SAMPLE_HASH_LIMIT of them: a step's
        list is whole or absent. Forgets the step's samples. With `losses` (the step's loss
        count, given for a program that compiles), fewer micro-batches noted than losses means
        some ran where the hook is not honoured (a compiled function traced before the hook
        went in): no set rather than a partial one."""
        samples, self._samples = self._samples, None
        calls, self._sample_calls = self._sample_calls, 0
        if not samples or (losses is not None and calls < losses):
            return {}
        fields = {"sample_count": samples[0], "sample_digest": "%016x" % samples[1]}
        if samples[0] <= self.SAMPLE_HASH_LIMIT - self._hashes_written:
            fields["sample_hashes"] = "".join("%016x" % h for h in samples[2])
            self._hashes_written += samples[0]
        return fields

    def buffers_noted(self):
        """Whether this step's buffers were digested (or found unreadable) already."""
        return self._buffers is not None

    def note_buffers(self, digest):
        """The buffers' digest as the step's first forward read them; None: unreadable."""
        if self._buffers is None:
            self._buffers = False if digest is None else digest

    def take_buffers(self):
        """`buffer_digest` of the step now ending ({} when not digested); forgets it."""
        digest, self._buffers = self._buffers, None
        return {"buffer_digest": digest} if digest else {}

    def take_input(self):
        """The fields note_input kept since the last step ({} when none); forgets them."""
        fields, self._input = self._input, None
        return fields or {}

    def transfer_index(self, where, peer):
        """0 for the first transfer this step in this direction with this peer, then 1, ..."""
        key = (where, peer)
        index = self._transfers.get(key, 0)
        self._transfers[key] = index + 1
        return index

    def _stack(self):
        """The kept losses as one float64 tensor (on the first one's device)."""
        device = self._losses[0].device
        return self._torch.stack([t.reshape(()).to(device, self._torch.float64) for t in self._losses])

    def take(self):
        """(loss values as floats, their count, their sum, pre-clip norm or None) of the step
        now ending; forgets them. Values are listed only when none were summed on the device."""
        values = self._stack().tolist() if self._losses else []  # one host synchronisation
        count, total = len(values), math.fsum(values)
        if self._folded is not None:
            count += self._folded[1]
            total += float(self._folded[0])
            values = []
        preclip = float(self._preclip) if self._preclip is not None else None
        self._losses, self._folded, self._scaled, self._preclip, self._transfers = [], None, [], None, {}
        return values, count, total, preclip

    def finish(self, now):
        self.global_step += 1
        self.last_end = now
