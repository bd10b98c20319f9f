"""Per-process step bookkeeping: which optimizer's steps count, the step number, and what the
program did since the last step (losses backward() ran on, the clip norm, transfers)."""
import weakref


class StepTracker:
    """global_step counts attempted optimizer steps of one optimizer, the *primary*: the first
    one whose step() runs (or that a GradScaler steps). A step a GradScaler skips still counts,
    as trainers' own counters do, and is marked skipped. A new optimizer becomes primary once
    the old one is garbage."""

    LOSS_LIST_LIMIT = 64  # a step's `losses` list is written only up to this many values

    def __init__(self, now):
        self.global_step = 0
        self.in_step = False  # inside the primary's step(): a nested step() (super()) is not one
        self.last_end = now  # when the previous step ended (or tracking began)
        self._primary = None
        self._losses = []  # detached scalar tensors, in backward() order
        self._scaled = []  # (weak reference to a GradScaler output, the tensor it scaled)
        self._preclip = None
        self._transfers = {}

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
        for ref, original in self._scaled:
            if ref() is tensor:
                self._losses.append(original)
                return
        self._losses.append(tensor.detach().clone())

    def note_clip(self, total_norm):
        self._preclip = total_norm

    def transfer_index(self, where, peer):
        """0 for the first transfer this step in this direction with this peer, then 1, ..."""
        key = (where, peer)
        index = self._transfers.get(key, 0)
        self._transfers[key] = index + 1
        return index

    def take(self, torch):
        """(loss values as floats, pre-clip norm or None) of the step now ending; forgets them."""
        values = []
        if self._losses:
            devices = {t.device for t in self._losses}
            if len(devices) == 1:  # one host synchronisation for all of them
                values = torch.stack([t.reshape(()) for t in self._losses]).double().tolist()
            else:
                values = [float(t) for t in self._losses]
        preclip = float(self._preclip) if self._preclip is not None else None
        self._losses, self._scaled, self._preclip, self._transfers = [], [], None, {}
        return values, preclip

    def finish(self, now):
        self.global_step += 1
        self.last_end = now
