"""bigmac-log v1 writer (docs/log-contract.md): copy this file beside your trainer.

    log = BigmacLog(args.log_file)          # "{rank}" in the path becomes $RANK; None/"-": stdout
    log("step", global_step=3, loss=2.31, grad_norm=0.8, lr=6e-4, samples_per_step=8, step_ms=12.5)

Values must be plain Python numbers, strings or lists (call .item() on tensors first).
"""
import json, os, sys, time


class BigmacLog:
    def __init__(self, path=None, rank=None):
        self.rank = int(os.environ.get("RANK", "0")) if rank is None else int(rank)
        if path and path != "-":
            path = path.replace("{rank}", str(self.rank))  # torchrun starts one argv for all ranks
            os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
            self.out = open(path, "w", encoding="utf-8")
        else:
            self.out = sys.stdout

    def __call__(self, ev, **fields):
        # json writes NaN/Infinity bare, as the contract allows; flushed so the watchdog sees progress.
        self.out.write(json.dumps({"ev": ev, "rank": self.rank, "t": time.time(), **fields}) + "\n")
        self.out.flush()
