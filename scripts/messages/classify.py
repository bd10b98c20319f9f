#!/usr/bin/env python3
"""Which failure class a collected message belongs to (stages/diagnoses.toml `[[class]]`).

Rules are tried in order; the first whose text pattern (and, where given, library and file
pattern) matches decides. A message no rule matches stays unclassified: it is still counted,
and `diagnose` names its source when such a line is all a log has, but it never gets a cause.
Classes follow the labels of tests/diagnose/corpus (its README lists them).
"""

import re
import sys

I = re.I

# (class, text pattern, library pattern or None, file pattern or None, flags)
RULES = [
    # The orchestration of processes: launch, rendezvous, ports.
    ("native_thread_abort", r"terminate called without an active exception", None, None, 0),
    ("port_in_use", r"address already in use|EADDRINUSE|port \S* ?is (already )?in use|"
     r"bind.*in use|failed to bind", None, None, I),
    ("connection_refused", r"connection refused|ECONNREFUSED|no route to host|"
     r"network is unreachable|EHOSTUNREACH|connect .*failed", r"^(?!nccl$)",
     r"socket|store|rendezvous|tcp|Store|gloo/transport", I),
    ("connection_refused", r"connection refused|ECONNREFUSED", None, None, I),
    ("peer_exited", r"reset by peer|closed by peer|connection closed|remote process exited|"
     r"broken pipe|EPIPE|ECONNRESET|peer .*(closed|exited|disconnected)|"
     r"remote (rank|peer).*(exit|close)", None, None, I),
    ("rendezvous_timeout", r"store based barrier|waiting for (clients|workers)|"
     r"rendezvous.*(time|closed)|time ?d? ?out.*(connect|rendezvous|store|join)|"
     r"(connect|rendezvous|store|join|socket).*time ?d? ?out|timeout.*(rendezvous|store)",
     None, None, I),
    ("rendezvous_timeout", r"time ?d? ?out|timeout", None,
     r"Store|store|socket|rendezvous|elastic/rendezvous|TCPStore|Backoff", I),
    ("collective_timeout", r"watchdog|collective operation timeout|timed out in call to wait|"
     r"work.*timed? ?out|timed? ?out.*(collective|work|waiting for|operation)|ncclTimeout|"
     r"\btimeout\b", None, r"ProcessGroup|NCCLUtils|c10d|gloo|comm|Work", I),
    ("collective_mismatch", r"mismatch between collectives|collectives? .*mismatch|"
     r"op\.preamble\.length|op\.nbytes|detected mismatch|ranks? .*(different|inconsistent)|"
     r"sequence number|must have the same (size|number|dtype|shape)|"
     r"same number of (tensors|elements)|tensor size mismatch|"
     r"size of .*(does not|doesn't) match|must (be|have) (the )?same (size|shape|length)", None,
     r"c10d|ProcessGroup|gloo|distributed_c10d|_functional_collectives|comm", I),
    # NCCL's own classes.
    ("nccl_duplicate_gpu", r"duplicate GPU|same (cuda )?device .*(rank|process)", None, None, I),
    ("nccl_topology", r"topolog|\bxml\b|NCCL_TOPO|NCCL_GRAPH|graph file|ncclTopo|"
     r"search .*graph|could not find .*(channel|path|ring|tree)", r"nccl", r"src/graph|topo|xml|"
     r"src/init", I),
    ("nccl_topology", r"topolog|\bxml\b|NCCL_TOPO_FILE|NCCL_GRAPH_FILE", r"nccl", None, I),
    ("nccl_network_error", r"\bib\w*|\bNET/|\bnet\b|socket|ibv_|\bIB\b|connect|bootstrap|"
     r"interface|RoCE|GID|\bqp\b|\bcq\b|proxy|NCCL_SOCKET_IFNAME|NCCL_IB|gdr|peer|"
     r"address|recv|send|listen|accept|poll", r"nccl", r"transport/net|misc/socket|"
     r"misc/ibvwrap|misc/ibvsymbols|proxy|bootstrap|transport/coll_net|plugin/net|net\.cc|"
     r"socket", I),
    ("nccl_cuda_error", r"cuda (failure|error)|cudaError|unhandled cuda error|\bCuda\b",
     r"nccl", None, I),
    ("nccl_system_error", r"unhandled system error|system error|\berrno\b|strerror|"
     r"failed to open|No such file", r"nccl", None, I),
    ("nccl_internal_error", r"internal error", r"nccl", None, I),
    ("nccl_invalid_usage", r"invalid usage|invalid argument|invalid (type|op|root|count|"
     r"rank|comm|device)|must be|not supported|mismatch|NCCL_\w+ .*(invalid|ignored)",
     r"nccl", None, I),
    ("nccl_network_error", r"remote process exited or there was a network error",
     r"nccl", None, I),
    ("nccl_no_device", r"no CUDA-capable device|no GPU|cudaGetDeviceCount", r"nccl", None, I),
    # The CUDA runtime and its libraries.
    ("out_of_memory", r"out of memory|OutOfMemory|MemoryError|cannot allocate memory|ENOMEM|"
     r"can't allocate memory|tried to allocate|not enough memory|cudaErrorMemoryAllocation|"
     r"CUDA_ERROR_OUT_OF_MEMORY|oom[-_ ]kill|memory cgroup", None, None, I),
    ("cuda_device_assert", r"device-side assert|device side assert|CUDA_KERNEL_ASSERT|"
     r"cudaErrorAssert", None, None, I),
    ("cuda_illegal_access", r"illegal memory access|illegal address|misaligned address|"
     r"illegal instruction|unspecified launch failure|cudaErrorIllegal|cudaErrorLaunchFailure|"
     r"hardware (stack )?error|uncorrectable ECC", None, None, I),
    ("nccl_no_device", r"invalid device ordinal|no CUDA-capable device|"
     r"CUDA_VISIBLE_DEVICES|no (CUDA )?GPUs? (found|available|are available)|"
     r"cudaErrorInvalidDevice|cudaErrorNoDevice|device index|invalid device id|"
     r"requested device .*(not|invalid)", None, None, I),
    ("cuda_library_error", r"CUBLAS_STATUS|CUDNN_STATUS|cuBLAS|cuDNN|CUSOLVER|cuFFT|CURAND|"
     r"cusparse|NVRTC", None, None, I),
    ("cuda_setup", r"no kernel image|driver version is insufficient|\bdriver\b|"
     r"not compiled with CUDA|Found no NVIDIA driver|CUDA initiali[sz]ation|"
     r"forward compatibility|\bsm_\d+|compute capability|NVML|CUDA is not available|"
     r"Torch not compiled|cudaErrorInsufficientDriver|cudaErrorNoKernelImage|PTX|"
     r"system not yet initialized|CUDA-capable device.*busy|unavailable|"
     r"cudaErrorDevicesUnavailable|libcuda|libcudart", None, None, I),
    # A single process's numbers.
    ("state_dict_mismatch", r"state_dict|missing keys?\b|unexpected keys?\b|size mismatch for|"
     r"error\(s\) in loading|copying a param with shape|load_state_dict", None, None, I),
    ("checkpoint_unreadable", r"PytorchStreamReader|failed finding central directory|"
     r"zip archive|invalid load key|weights_only|Unsupported global|unpickl|"
     r"EOFError|Ran out of input|pickle data was truncated|magic number|"
     r"could not find .*(checkpoint|archive)|corrupt", None, r"serialization|inline_container|"
     r"checkpoint|_weights_only|pickle", I),
    ("non_finite", r"\bnan\b|\binf\b|non-finite|not finite|\bNaN|\bInf\b|anomaly|isfinite",
     None, None, I),
    ("loss_scale_underflow", r"loss scale .*(minimum|min)|minimum loss scale|"
     r"loss_scale.*(underflow|too small)", None, None, I),
    ("gradient_overflow", r"gradient overflow|\bOVERFLOW\b|overflow.*(skip|reduc)|"
     r"skipping step", None, None, I),
    ("mixed_precision_config", r"unscale FP16|fp16|bf16|bfloat16|half precision|"
     r"mixed.precision|autocast|GradScaler|amp\b|precision=", None, None, I),
    ("dataloader_worker", r"worker|shared memory|shm|bus error|DataLoader", None,
     r"utils/data", I),
    ("dataloader_worker", r"DataLoader worker|shared memory \(shm\)|/dev/shm", None, None, I),
    # DDP's reducer.
    ("ddp_unused_parameters", r"finished reduction in the prior iteration|"
     r"find_unused_parameters|did not receive grad|unused parameters|"
     r"not participate in (producing )?(the )?loss|parameters that were not used",
     None, None, I),
    ("ddp_reducer_error", r"marked (as )?ready twice|reentrant backward|ready twice|"
     r"static_graph|expect_autograd_hooks|rebuilt_param|bucket|reducer|"
     r"DistributedDataParallel.*(not|requires|expects|only)|DDP .*(not|requires|expects)|"
     r"_sync_params|module must have its parameters", None,
     r"reducer|nn/parallel/distributed|comm\.cpp|ddp|default_comm_hooks", I),
    # Launch environment and process-group use.
    ("launch_env", r"environment variable|\bMASTER_ADDR\b|\bMASTER_PORT\b|\bWORLD_SIZE\b|"
     r"\bLOCAL_RANK\b|\bRANK\b.*(env|set)|--local[-_]rank|default process group|"
     r"process group (has not been|is not|was not) initiali[sz]ed|not been initiali[sz]ed|"
     r"init_process_group|is not a valid rank|invalid rank|rank .*(out of range|exceeds)|"
     r"distributed environment|already initiali[sz]ed|torchrun|torch\.distributed\.launch|"
     r"use_env|world size .*(does not match|mismatch|differs|inconsistent)|"
     r"(does not match|differs from) .*world size", None,
     r"distributed|accelerate|lightning|deepspeed|fabric|transformers/(trainer|training_args)|"
     r"c10d|elastic", I),
    ("child_failed", r"ChildFailedError|failed \(exitcode|worker group|exited with|"
     r"exitcode|terminated with|died with|process .* (exited|killed)|SignalException|"
     r"received signal|got signal", None, r"elastic|multiprocessing|launcher|launch|run\.py",
     I),
    # Layout and batch arithmetic across processes.
    ("batch_accounting", r"batch.?size.*(not equal|equal to|divisible|must be|mismatch|"
     r"does not match|should be|!=)|gradient_accumulation_steps|train_batch_size|"
     r"micro_batch|global batch|samples per (step|batch)", None,
     r"deepspeed|accelerate|lightning|transformers|distributed|runtime/config", I),
    ("parallel_layout", r"(pipeline|stage|layer|pp|num_layers|partition|microbatch).*"
     r"(divisible|must be|should be|equal|exceed|greater|less|mismatch)|"
     r"pipeline.*(stage|rank)|num_stages|stage_index|split_points?|"
     r"number of stages|micro.?batch", None,
     r"pipelining|pipe|pipeline|megatron", I),
    ("shape_mismatch", r"\bshapes?\b|size of tensor|sizes? .*match|mat1 and mat2|"
     r"dimension|must match the size|batch.?size .*match|\bgot \d+D|Expected \d+D|"
     r"expected .*\b(size|sizes|dims?|shape)\b|\bndim|\bsize\b.*(mismatch|expected|got)|"
     r"cannot be multiplied|broadcast|number of (channels|features|elements)|"
     r"input.*(size|length).*(expected|must)|view size", None,
     r"aten|nn/|functional|autograd|TensorShape|torch/csrc|c10", I),
    ("device_mismatch", r"same device|different devices|on device .* but|device type|"
     r"cuda:\d+ and cpu|input type .* weight type|devices? .*(mismatch|match)|"
     r"must be on (the )?(cuda|cpu|gpu)|expected .* on (cuda|cpu)|"
     r"tensors? (is|are) on|not on the (expected|same)|CUDA tensor|CPU tensor|"
     r"must be (a )?(CUDA|CPU|dense)", None, None, I),
    ("disk_full", r"no space left on device|ENOSPC|disk quota exceeded|EDQUOT|"
     r"file too large", None, None, I),
    ("slurm_time_limit", r"DUE TO TIME LIMIT|time limit", r"slurm", None, 0),
    ("node_failure", r"NODE_FAIL|node fail|DUE TO NODE FAILURE", None, None, I),
]

_COMPILED = [(k, re.compile(t, f), re.compile(lib) if lib else None,
              re.compile(w) if w else None) for k, t, lib, w, f in RULES]


def classify(library, where, text):
    """The class of message `text` (a template: `{}` holes) of `library` in file `where`."""
    body = text.replace("{}", " ")
    for klass, pattern, lib, file_pattern in _COMPILED:
        if lib is not None and not lib.search(library):
            continue
        if file_pattern is not None and not file_pattern.search(where):
            continue
        if pattern.search(body):
            return klass
    return ""


def reclassify(path):
    """Applies the rules again to a collected file, in place: only `class` lines and the
    [source] count change, so new rules need no new collection."""
    import tomllib
    with open(path, "rb") as f:
        data = tomllib.load(f)
    library = data["source"]["library"]
    classes = iter([classify(library, m["where"], m["text"]) for m in data["message"]])
    out, classified = [], 0
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    for line in lines:
        if line.startswith("class = "):
            klass = next(classes)
            classified += 1 if klass else 0
            line = f'class = "{klass}"'
        out.append(line)
    out = [f"classified = {classified}" if l.startswith("classified = ") else l for l in out]
    with open(path + ".part", "w", encoding="utf-8") as f:
        f.write("\n".join(out))
    import os
    os.replace(path + ".part", path)
    print(f"classify: {library}: {classified} of {len(data['message'])} classified -> {path}")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: scripts/messages/classify.py stages/messages/*.toml  (classify again)")
    for file in sys.argv[1:]:
        reclassify(file)
