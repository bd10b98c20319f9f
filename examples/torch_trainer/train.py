#!/usr/bin/python3
"""Example PyTorch trainer: a small decoder-only LM with data and pipeline parallelism.

Written the way a user writes a torchrun program: torch.distributed with the env:// rendezvous
torchrun sets up (MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE, LOCAL_RANK), DDP when the model
is not pipelined, a hand-written pipeline with dist.isend/dist.recv otherwise, PP x DP with
rank = stage * dp + dp_rank. Progress goes out as bigmac-log v1 events (configs/examples/
bigmac_log.py). Run alone (`python3 train.py`) or under torchrun:

    torchrun --standalone --nproc_per_node 2 --redirects 2 --tee 1 train.py \
        --set parallel.pp_size=2 --log-file 'rank{rank}.log'

(Debian's torchrun 1.13 under Python 3.11 needs --redirects and --tee given as 1 or 2.)

Settings: --config FILE (the TOML or YAML file bigmac-bringup writes for each gate), then
--set table.key=value. Exit status: 0 done, 1 a training error (exception on stderr), 2 bad
settings.
"""
import argparse
import contextlib
import os
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
# A user copies bigmac_log.py beside their script; this example uses the one copy in configs/.
sys.path.insert(0, os.path.join(HERE, "..", "..", "configs", "examples"))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.distributed.elastic.multiprocessing.errors import record  # noqa: E402
from torch.nn.parallel import DistributedDataParallel  # noqa: E402

import settings as settings_mod  # noqa: E402
from bigmac_log import BigmacLog  # noqa: E402
from data import MarkovText  # noqa: E402
from model import Stage, param_count, param_digest, whole_model  # noqa: E402
from pipeline import Neighbours, schedule  # noqa: E402

VERSION = "0.1.0"


def block_forever():
    """The hang fault's real hang: the thread waits on an event nobody sets."""
    threading.Event().wait()


def dtype_name(dtype):
    return str(dtype).replace("torch.", "")


class Trainer:
    def __init__(self, cfg, log, log_path):
        self.cfg, self.log, self.log_path = cfg, log, log_path
        self.rank = int(os.environ.get("RANK", "0"))
        self.world = int(os.environ.get("WORLD_SIZE", "1"))
        self.local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        pp, t, m = cfg.parallel.pp_size, cfg.train, cfg.model
        if cfg.parallel.tp_size != 1:
            raise settings_mod.SettingsError("parallel.tp_size: this trainer has no tensor parallelism")
        if self.world % pp:
            raise settings_mod.SettingsError(
                f"world size {self.world} is not a multiple of parallel.pp_size {pp}")
        if cfg.parallel.micro_batches not in (0, t.gradient_accumulation_steps):
            raise settings_mod.SettingsError(
                "parallel.micro_batches must equal train.gradient_accumulation_steps (or be 0)")
        self.pp, self.dp = pp, self.world // pp
        self.stage, self.dp_rank = divmod(self.rank, self.dp)
        self.micro, self.accum, self.seq = t.micro_batch_size, t.gradient_accumulation_steps, t.seq_length
        self.samples_per_step = self.micro * self.accum * self.dp
        points = m.split_points if m.split_points != "auto" else settings_mod.even_split(m.num_layers, pp)
        if len(points) != pp - 1:
            raise settings_mod.SettingsError(
                f"model.split_points {points}: {pp - 1} needed for parallel.pp_size {pp}")
        if cfg.faults.split_out_of_range and points:
            points = points[:-1] + [m.num_layers + 1]  # the bug: a cut past the last layer
        bounds = [0] + list(points) + [m.num_layers]
        self.first_layer, self.end_layer = bounds[self.stage], bounds[self.stage + 1]
        self.crash = settings_mod.parse_rank_and_step(cfg.faults.crash_rank, "crash_rank")
        self.hang = settings_mod.parse_rank_and_step(cfg.faults.hang_rank, "hang_rank")
        want_cuda = cfg.launch.devices == "cuda" or (
            cfg.launch.devices == "auto" and torch.cuda.is_available())
        self.device = torch.device(f"cuda:{self.local_rank}" if want_cuda else "cpu")
        self.backend = cfg.launch.backend
        if self.backend == "auto":
            self.backend = "nccl" if want_cuda else "gloo"
        self.dtype = getattr(torch, t.dtype)
        self.data = MarkovText(m.vocab, t.seq_length, t.seed)

    # ---- setup -------------------------------------------------------------------------
    def init_distributed(self):
        if self.hang and self.hang == (self.rank, -1):
            block_forever()
        self.dp_group = self.pp_group = self.tie_group = None
        if self.world == 1:
            return
        start = time.time()
        dist.init_process_group(self.backend, init_method="env://")
        # Every rank creates every group, in the same order (new_group is collective).
        for s in range(self.pp):
            g = dist.new_group([s * self.dp + d for d in range(self.dp)])
            if s == self.stage:
                self.dp_group = g
        for d in range(self.dp):
            g = dist.new_group([s * self.dp + d for s in range(self.pp)])
            if d == self.dp_rank:
                self.pp_group = g
            if self.pp > 1 and self.cfg.model.tie_embeddings:
                g = g if self.pp == 2 else dist.new_group([d, (self.pp - 1) * self.dp + d])
                if d == self.dp_rank and self.stage in (0, self.pp - 1):
                    self.tie_group = g
        self.log("pg_ready", init_ms=(time.time() - start) * 1000.0, world_size=self.world,
                 backend=self.backend)

    def build(self):
        cfg, m = self.cfg, self.cfg.model
        torch.manual_seed(cfg.train.seed)
        full = whole_model(m, self.seq, cfg.train.seed)  # only for the whole model's count and digest
        self.log("batch", micro_batch_size=self.micro, grad_accum=self.accum, dp=self.dp,
                 samples_per_step=self.samples_per_step, seq_length=self.seq,
                 input_shape=[self.micro, self.seq], input_dtype="int64")
        self.log("model", param_count=param_count(full), param_digest=param_digest(full))
        del full
        self.model = Stage(m, self.seq, cfg.train.seed, self.first_layer, self.end_layer,
                           self.stage == 0, self.stage == self.pp - 1).to(self.device, self.dtype)
        ids = self.model.layer_ids
        self.log("layout", stage=self.stage, num_stages=self.pp,
                 first_layer=ids[0] if ids else -1, last_layer=ids[-1] if ids else -1,
                 dp_rank=self.dp_rank, dp_size=self.dp, param_count=param_count(self.model),
                 tied=self.model.tied_names,
                 tied_duplicate_count=self.model.tied_copy.numel() if self.model.tied_copy is not None else 0)
        self.params = list(self.model.parameters())
        self.ddp = None
        # DDP averages gradients over the replicas when the backward of the forward that ran
        # outside no_sync() is the last one. That holds for plain accumulation (one stage,
        # 1f1b: F0 B0 F1 B1 ...). With GPipe's order (B0 runs after the last forward) or a
        # pipeline (1F1B interleaves backwards of different forwards) the reducer would
        # all-reduce a partial sum, so there every forward runs under no_sync() or without DDP
        # and the trainer all-reduces the gradients itself after the schedule.
        self.ddp_reduces = False
        if self.pp == 1 and self.world > 1:
            self.ddp = DistributedDataParallel(self.model, broadcast_buffers=False)
            self.ddp_reduces = self.cfg.parallel.schedule == "1f1b"
        self.optimizer = torch.optim.AdamW(self.params, lr=cfg.train.lr,
                                           weight_decay=cfg.train.weight_decay)
        self.links = Neighbours(self.rank, self.dp, self.stage, self.pp)
        if self.cfg.trace.shapes:
            self.model.tracer = self.trace

    # ---- one step ----------------------------------------------------------------------
    def lr_at(self, step):
        t = self.cfg.train
        lr = t.lr * (min(1.0, (step + 1) / t.warmup_steps) if t.warmup_steps > 0 else 1.0)
        if self.cfg.faults.lr_scale_by_world:
            lr *= self.world  # the "linear scaling rule" applied to a batch that did not grow
        return lr

    def micro_batch(self, step, mb):
        """Samples step*G + dp_rank*micro*accum + mb*micro ...: the same sample numbers in the
        same order for every layout with the same samples per step G."""
        first = step * self.samples_per_step + (self.dp_rank * self.accum + mb) * self.micro
        tokens = self.data.batch(first, self.micro)
        if self.crash == (self.rank, step):
            tokens[0, 1] = self.cfg.model.vocab  # a token id the vocabulary does not have
        return tokens.to(self.device)

    def trace(self, where, name, tensor):
        self.log("shape", global_step=self.step, stage=self.stage, mb=self.mb, where=where,
                 name=name, shape=list(tensor.shape), dtype=dtype_name(tensor.dtype),
                 device=str(tensor.device))

    def forward(self, step, mb, keep):
        self.mb = mb
        boundary = (self.micro, self.seq, self.cfg.model.hidden)
        tokens = self.micro_batch(step, mb) if self.model.is_first or self.model.is_last else None
        if self.model.is_first:
            inp = tokens[:, :-1]
        else:
            inp = self.links.recv(boundary, self.dtype, self.device, False, mb).requires_grad_()
            if self.model.tracer:
                self.trace("recv", "hidden_states", inp)
        # Gradient accumulation under DDP: only the last micro-batch's backward all-reduces.
        accumulate_only = self.ddp is not None and (not self.ddp_reduces or mb + 1 < self.accum)
        with self.ddp.no_sync() if accumulate_only else contextlib.nullcontext():
            out = (self.ddp or self.model)(inp)
        if self.model.is_last:
            labels = tokens[:, 1:]
            if self.model.tracer:
                self.trace("exit", "logits", out)
                self.trace("labels", "labels", labels)
            loss = F.cross_entropy(out.reshape(-1, out.shape[-1]).float(), labels.reshape(-1))
            if step == self.cfg.faults.nan_at_step:
                # log(0) in the loss, as an unguarded log of a probability gives: -inf, and
                # -inf - -inf is NaN, in the value and in every gradient behind it.
                loss = loss * torch.log(torch.zeros((), device=self.device))
                loss = loss - loss
            self.log("loss", global_step=step, stage=self.stage, mb=mb, value=loss.item())
            self.step_loss += loss.item() / self.accum
            keep[mb] = (inp, loss)
        else:
            self.links.send(out, True, mb)
            if self.model.tracer:
                self.trace("send", "hidden_states", out)
            keep[mb] = (inp, out)

    def backward(self, mb, keep):
        inp, out = keep.pop(mb)
        if self.model.is_last:
            (out / self.accum).backward()  # mean over this replica's micro-batches
        else:
            grad = self.links.recv(out.shape, out.dtype, self.device, True, mb)
            out.backward(grad)
        if not self.model.is_first:
            self.links.send(inp.grad, False, mb)

    def reduce_gradients(self):
        """Average over the stage's replicas unless DDP did; sum the two tied weight copies."""
        if self.dp > 1 and not self.ddp_reduces:
            for p in self.params:
                dist.all_reduce(p.grad, group=self.dp_group)
                p.grad.div_(self.dp)
        if self.tie_group is not None:
            tied = self.model.tied_copy if self.model.is_last else self.model.embed.weight
            dist.all_reduce(tied.grad, group=self.tie_group)

    def clip_gradients(self):
        """Global 2-norm over the whole model (the tied copy counted once), then clip."""
        local = [p.grad for p in self.params if p is not self.model.tied_copy]
        total = torch.zeros((), dtype=torch.float64, device=self.device)
        for g in local:
            total += g.double().pow(2).sum()
        if self.pp > 1:
            dist.all_reduce(total, group=self.pp_group)
        norm = total.sqrt().item()
        clip = self.cfg.train.grad_clip
        if clip > 0 and norm + 1e-6 > clip:
            for p in self.params:
                p.grad.mul_(clip / (norm + 1e-6))
        return norm

    def train_step(self, step):
        self.step = step
        if self.hang == (self.rank, step):
            block_forever()
        if self.crash == (self.rank, step) and not (self.model.is_first or self.model.is_last):
            raise RuntimeError(f"rank {self.rank}: stage {self.stage} failed at step {step}")
        # Begun: a rank hung before this line is told from the ranks that wait for it inside.
        self.log("heartbeat", global_step=step, phase="start")
        start = time.time()
        lr = self.lr_at(step)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        self.optimizer.zero_grad(set_to_none=False)
        keep = {}
        self.step_loss = 0.0
        for phase, mb in schedule(self.cfg.parallel.schedule, self.stage, self.pp, self.accum):
            t0 = time.time()
            if phase == "F":
                self.forward(step, mb, keep)
            else:
                self.backward(mb, keep)
            self.log("mb", global_step=step, stage=self.stage, mb=mb, phase=phase, start=t0,
                     end=time.time())
        self.links.wait_sends()
        self.reduce_gradients()
        grad_norm = self.clip_gradients()
        self.optimizer.step()
        if self.model.is_last:
            loss = torch.tensor(self.step_loss, dtype=torch.float64)
            if self.dp > 1:
                dist.all_reduce(loss, group=self.dp_group)
                loss /= self.dp
            if self.dp_rank == 0:
                self.log("step", global_step=step, loss=loss.item(), grad_norm=grad_norm, lr=lr,
                         samples_per_step=self.samples_per_step,
                         step_ms=(time.time() - start) * 1000.0)
        self.log("heartbeat", global_step=step)

    # ---- checkpoints and the end ---------------------------------------------------------
    def checkpoint_dir(self):
        if self.cfg.train.checkpoint_dir:
            return self.cfg.train.checkpoint_dir
        if self.log_path and self.log_path != "-":
            return os.path.dirname(os.path.abspath(self.log_path))
        return None  # logging to stdout and no directory configured: nowhere to put it

    def maybe_checkpoint(self, step, last):
        every = self.cfg.train.checkpoint_every
        if not (last or (every > 0 and (step + 1) % every == 0)):
            return
        folder = self.checkpoint_dir()
        if folder is None:
            return
        path = os.path.join(folder, f"ckpt-step{step:06d}.pt")
        if self.cfg.faults.all_ranks_checkpoint:
            # The bug: every rank saves what it holds, to the same file.
            self.save({"step": step, "model": self.model.state_dict()}, path)
            return
        # One writer: rank 0 gathers every stage's weights from the stage's first replica.
        mine = self.model.state_dict() if self.dp_rank == 0 else None
        parts = [mine]
        if self.world > 1:
            parts = [None] * self.world if self.rank == 0 else None
            dist.gather_object(mine, parts, dst=0)
        if self.rank == 0:
            merged = {}
            for part in parts:
                merged.update({k: v.cpu() for k, v in (part or {}).items()})
            self.save({"step": step, "model": merged}, path)

    def save(self, state, path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.tmp{os.getpid()}"
        torch.save(state, tmp)
        os.replace(tmp, path)
        self.log("ckpt", step=state["step"], path=path)

    def run(self):
        torch.set_num_threads(max(1, self.cfg.launch.threads_per_rank))
        self.log("run", world_size=self.world, local_rank=self.local_rank, device=str(self.device),
                 backend=self.backend if self.world > 1 else "none", dtype=self.cfg.train.dtype,
                 seed=self.cfg.train.seed, torch_version=torch.__version__, pid=os.getpid(),
                 tool_version=VERSION)
        self.init_distributed()
        self.build()
        steps = self.cfg.train.max_steps
        for step in range(steps):
            self.train_step(step)
            self.maybe_checkpoint(step, step + 1 == steps)
        self.log("digest", param_digest=param_digest(self.model), global_step=steps - 1)
        self.log("done", steps=steps)
        if self.world > 1:
            dist.destroy_process_group()


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", help="gate config file (TOML, or YAML by .yaml/.yml)")
    parser.add_argument("--set", action="append", default=[], metavar="TABLE.KEY=VALUE",
                        help="override one setting (repeatable)")
    parser.add_argument("--log-file", default="-",
                        help="bigmac-log file; {rank} becomes $RANK; - for stdout")
    return parser.parse_args(argv)


# @record writes the exception to torchrun's error file, so torchrun's failure summary names
# the rank that failed first (and its traceback) as the root cause.
@record
def main(argv=None, make_log=lambda path, cfg: BigmacLog(path)):
    """`make_log(path, cfg)` returns the callable that receives every event (ev, **fields)."""
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        cfg = settings_mod.load(args.config, args.set)
        log = make_log(args.log_file, cfg)
        trainer = Trainer(cfg, log, args.log_file.replace("{rank}", os.environ.get("RANK", "0")))
    except (settings_mod.SettingsError, OSError) as err:
        print(f"train.py: error: {err}", file=sys.stderr)
        return 2
    trainer.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
