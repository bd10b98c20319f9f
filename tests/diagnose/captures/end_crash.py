import os
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
w = torch.ones(4)
for step in range(3):
    dist.all_reduce(w)
    print(f"all_reduce {step} gives {w.sum().item():g}", flush=True)
dist.barrier()
dist.destroy_process_group()

class Summary:
    pass

if rank == 1:
    print(Summary().final_loss)
