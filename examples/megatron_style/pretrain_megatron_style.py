#!/usr/bin/python3
"""A trainer that reports the way Megatron-LM does, and nothing else.

It trains exactly like examples/torch_trainer/train.py (same model, data, DP/PP code and
settings flags) but writes no bigmac-log events: the only thing it prints is Megatron-LM's
`training_log` iteration line, on stdout, from the rank that owns the loss (the last pipeline
stage, first replica — Megatron's print_rank_last):

 [2026-11-29 12:00:07] iteration        3/      20 | consumed samples:           24 | elapsed time per iteration (ms): 41.2 | learning rate: 1.800000E-03 | global batch size:     8 | lm loss: 3.900028E+00 | loss scale: 1.0 | grad norm: 2.314 | number of skipped iterations:   0 | number of nan iterations:   0 |

Use it to see what bigmac-bringup can and cannot check from such a log
(configs/megatron-style.toml). --log-file is accepted and ignored, as Megatron has no such file.
"""
import math
import os
import sys
from datetime import datetime

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "torch_trainer"))

import train  # noqa: E402


class MegatronPrinter:
    """Receives the trainer's events; turns each `step` into one Megatron iteration line."""

    def __init__(self, train_iters):
        self.train_iters = train_iters
        self.nan_iterations = 0

    def __call__(self, ev, **fields):
        if ev != "step":
            return
        iteration = fields["global_step"] + 1  # Megatron counts finished iterations from 1
        loss = fields["loss"]
        if not math.isfinite(loss):
            self.nan_iterations += 1
        line = f" [{datetime.now().strftime('%Y-%m-%d %H:%M:%S')}]"
        line += " iteration {:8d}/{:8d} |".format(iteration, self.train_iters)
        line += " consumed samples: {:12d} |".format(iteration * fields["samples_per_step"])
        line += " elapsed time per iteration (ms): {:.1f} |".format(fields["step_ms"])
        line += " learning rate: {:.6E} |".format(fields["lr"])
        line += " global batch size: {:5d} |".format(fields["samples_per_step"])
        line += " lm loss: {:.6E} |".format(loss)
        line += " loss scale: {:.1f} |".format(1.0)
        line += " grad norm: {:.3f} |".format(fields["grad_norm"])
        line += " number of skipped iterations: {:3d} |".format(0)
        line += " number of nan iterations: {:3d} |".format(self.nan_iterations)
        print(line, flush=True)


if __name__ == "__main__":
    sys.exit(train.main(make_log=lambda path, cfg: MegatronPrinter(cfg.train.max_steps)))
