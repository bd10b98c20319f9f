"""Pipeline schedules and the point-to-point messages between neighbouring stages."""
import torch
import torch.distributed as dist


def schedule(kind, stage, num_stages, micro_batches):
    """The order in which `stage` runs forward (F) and backward (B) passes of its micro-batches.

    gpipe: every forward, then every backward. 1f1b: stage s first runs num_stages - s - 1
    warm-up forwards, then alternates one forward and one backward, then drains the backwards,
    so at most num_stages - s activations are alive at a time. With one stage both are plain
    gradient accumulation (1f1b: F0 B0 F1 B1 ...).
    """
    m = micro_batches
    if kind == "gpipe":
        return [("F", i) for i in range(m)] + [("B", i) for i in range(m)]
    if kind != "1f1b":
        raise ValueError(f"parallel.schedule {kind!r}: expected 1f1b or gpipe")
    warmup = min(num_stages - stage - 1, m)
    ops = [("F", i) for i in range(warmup)]
    forward, backward = warmup, 0
    while forward < m:
        ops += [("F", forward), ("B", backward)]
        forward, backward = forward + 1, backward + 1
    ops += [("B", i) for i in range(backward, m)]
    return ops


class Neighbours:
    """Sends to and receives from the previous/next stage of this rank's pipeline.

    Sends are non-blocking (isend) and waited for at the end of the step: with blocking sends
    on both sides, 1F1B deadlocks (stage 0 sends activation i+1 while stage 1 sends gradient i,
    and Gloo completes a send only once the peer posts the receive). Receives block; the tag is
    the micro-batch, so a message can only land in the buffer meant for it.
    """

    def __init__(self, rank, dp, stage, num_stages):
        self.prev = rank - dp if stage > 0 else None
        self.next = rank + dp if stage + 1 < num_stages else None
        self.pending = []

    def send(self, tensor, to_next, mb):
        tensor = tensor.detach().contiguous()
        work = dist.isend(tensor, self.next if to_next else self.prev, tag=mb)
        self.pending.append((work, tensor))  # the tensor must outlive the send

    def recv(self, shape, dtype, device, from_next, mb):
        buf = torch.empty(shape, dtype=dtype, device=device)
        dist.recv(buf, self.next if from_next else self.prev, tag=mb)
        return buf

    def wait_sends(self):
        for work, _ in self.pending:
            work.wait()
        self.pending.clear()
