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
_PT = r"^pytorch$"  # the library pattern of rules written for PyTorch's own files

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

    # Frameworks' launch checks that name no variable the rules above know.
    ("launch_env", r"is not compatible with an interactive environment", r"^lightning$",
     r"connector", I),

    # PyTorch's own messages that no rule above reaches: each rule is confined to the
    # library and the files it was written for (read one by one over 1.13.1 .. 2.x), so at
    # the end of the list it can only classify what nothing else does.
    # --- Ports, connections, peers (c10d sockets and stores, elastic) ---------------------
    # libuv defers EADDRINUSE from bind to listen: "The server socket has failed to listen on
    # any local network address. port: 29500, ..., name: EADDRINUSE"; elastic's free-port probe.
    ("port_in_use", r"failed to listen on any local network address|"
     r"port: \S*\s*already in use", _PT,
     r"csrc/distributed/c10d/(TCPStore|socket)|distributed/elastic/utils/distributed", I),
    # Nothing listened where the client connected (socket.cpp), or the elastic c10d
    # rendezvous backend could not reach its store.
    ("connection_refused", r"failed to connect to any network address|"
     r"connection to the C10d store has failed", _PT,
     r"csrc/distributed/c10d/socket|distributed/elastic/rendezvous", I),
    # recv()/send() of 0 bytes on a store socket: the other end closed (rank 0 / store exited).
    ("peer_exited", r"failed to recv, got 0 bytes|failed to send, sent 0 bytes", _PT,
     r"csrc/distributed/c10d/Utils", I),
    # --- Rendezvous / init timeouts -------------------------------------------------------
    ("rendezvous_timeout", r"can't complete rendezvous: deadline reached|"
     r"timed out in _all_gather", _PT,
     r"distributed/elastic/rendezvous|distributed/rpc/api", I),
    # Communicator set-up: rank 0's ncclUniqueId never came through the store (rank 0 not
    # there yet, crashed before publishing it, or the store timed out). Both spellings
    # ("retreiving"/"retrieving") and the "Unknown exception while ..." variant.
    ("rendezvous_timeout", r"ncclUniqueId from \[0\] via c10d key-value store", _PT,
     r"csrc/distributed/c10d/ProcessGroupNCCL", I),
    # --- Collective timeouts (a rank stuck mid-training) ----------------------------------
    # Work::wait "Operation timed out!", NCCL future waits, Gloo's monitored barrier (used
    # by TORCH_DISTRIBUTED_DEBUG and users to find the hung rank mid-run).
    ("collective_timeout", r"^\s*Operation timed out|Future for .* timed out after|"
     r"timed out in monitoredBarrier|failed to pass monitoredBarrier", _PT,
     r"csrc/distributed/c10d/(Work|ProcessGroup)", I),
    # --- Collective mismatch: ranks disagree ----------------------------------------------
    ("collective_mismatch", r"rank .* is all-gathering .* while rank .* is all-gathering|"
     r"inconsistent tensor metadata .* across ranks|"
     r"non-sharded dimensions should have identical size across ranks", _PT,
     r"distributed/fsdp/_exec_order_utils|distributed/tensor/_(collective_)?utils", I),
    # --- Launch environment ----------------------------------------------------------------
    # Backend not available/registered for the device, or asked for but not built in.
    ("launch_env", r"Distributed package doesn't have \w+ built in|"
     r"Default backend not registered for device|"
     r"Cannot access device backend for process group|"
     r"Default device not found, because no backend has been registered|"
     r"Invalid backend: |Invalid device:backend pairing|"
     r"rank must be non-negative if using store", _PT,
     r"distributed/distributed_c10d\.py", I),
    # Launcher flags named in the message (hyphen and underscore spellings).
    ("launch_env", r"--master[-_](addr|port)|--node[-_]rank|--use[-_]env|"
     r"--no[-_]python' flag and the '--module|Unsupported nproc_per_node|"
     r"nnodes=.* is not in \"?MIN:MAX|min_nodes must be > 0", _PT,
     r"distributed/(launch\.py|launcher/|run\.py|elastic/rendezvous/static_tcp)", I),
    # init_method URL (tcp://, file://, env://) missing or malformed parts.
    ("launch_env", r"\b(rank|world size|port number|path)( parameter)? missing|"
     r"`rank` must be an integer|No rendezvous handler for|port must have value from 0",
     _PT, r"distributed/rendezvous\.py", I),
    # torchrun's --nnodes / --rdzv-endpoint / --rdzv-backend values.
    ("launch_env", r"(minimum|maximum) number of (rendezvous )?nodes|"
     r"(port number|hostname) of the rendezvous endpoint|"
     r"rendezvous backend .* is not registered", _PT,
     r"distributed/elastic/rendezvous/(api|dynamic_rendezvous|utils)", I),
    # The launched world does not fit the DeviceMesh the program builds.
    ("launch_env", r"Mesh should not be bigger than default world size|"
     r"DeviceMesh only support homogeneous hardware|"
     r"DeviceMesh process groups not initiali[sz]ed", _PT,
     r"distributed/device_mesh\.py", I),
    # RPC not initialised / rank disagrees with the process group; async save needs a CPU
    # backend in init_process_group.
    ("launch_env", r"RPC framework needs to be initiali[sz]ed|initiali[sz]e RPC framework|"
     r"rank argument .* doesn't match pg rank|"
     r"CPU backend must be enabled for async save", _PT,
     r"distributed/(_shard/sharded_tensor|pipeline/sync/pipe|rpc/backend_registry|"
     r"checkpoint/state_dict_saver)", I),
    # --- Devices: none usable -------------------------------------------------------------
    ("nccl_no_device", r"is not visible \((HIP|CUDA|ROCR)_VISIBLE_DEVICES|"
     r"no accelerator device is detected|no available devices were found|"
     r"No available accelerator found|"
     r"deserialize object on .*(device_count\(\) is|is_available\(\) is False)", _PT,
     r"torch/cuda/__init__|distributed/fsdp/_init_utils|torch/nn/parallel/|"
     r"torch/serialization\.py", I),
    # --- CUDA build / initialisation ------------------------------------------------------
    # (consistent with the existing cuda_setup label of "Torch not compiled with CUDA
    # enabled")
    ("cuda_setup", r"compiled without CUDA support|Are you sure you have a CUDA build|"
     r"torch\.cuda\.Stream requires CUDA support|"
     r"Cannot re-initiali[sz]e CUDA in forked subprocess|"
     r"no accelerator support is found from the current compilation|"
     r"does not match the current compilation's accelerator support", _PT,
     r"torch/cuda/(__init__|nvtx|streams)|distributed/distributed_c10d\.py", I),
    # --- Devices: tensors/modules on different or wrong devices ---------------------------
    ("device_mismatch", r"Expected tensor to have .*Device, but got tensor with|"
     r"expected device .* but got device|to have device .*, but got .* instead|"
     r"must be on the current device|Input type .* and bias type .* should be the same|"
     r"must be on the same type of device|expect input to be on device", _PT,
     r"aten/src/ATen/native|csrc/distributed/c10d/(ProcessGroupGloo|intra_node_comm)", I),
    ("device_mismatch", r"single device modules but got params on|"
     r"Inconsistent compute device and `?device_id|"
     r"CPU parameters or buffers when `?sync_module_states|both CPU and GPU params|"
     r"unexpectedly has parameters on|CPU offloading enabled has parameters on|"
     r"materiali[sz]ed on CPU when enabling CPU offloading|"
     r"tensor device is .* and expected device is", _PT, r"distributed/fsdp/", I),
    ("device_mismatch", r"expects all inputs to be on GPUs|"
     r"on the same GPU with one of the tensors|all parameters on a single device|"
     r"duplicate parameters on distinct devices", _PT,
     r"torch/nn/parallel/comm|distributed/pipeline/sync/pipe", I),
    # DTensor operands on different DeviceMeshes (as the existing _op_schema cross-mesh rule).
    ("device_mismatch", r"does not support cross-mesh operation|across different mesh|"
     r"must have the same mesh", _PT, r"distributed/tensor/", I),
    # --- Shapes -------------------------------------------------------------------------------
    # ATen shape checks where two tensors' sizes disagree (not dtype/contiguity/API checks).
    ("shape_mismatch", r"Incompatible matrix sizes|must have same number of batches|"
     r"target tensor expects \d+D input tensors|must be of size batch_size|"
     r"Number of indices .* should be equal to source\.size|is not expandable to size|"
     r"don't multiply up to the size of dim|dim \d must match mat\d dim \d|"
     r"different slice sizes|src\.size\[dim\] is not equal to length of indices|"
     r"Kernel size can't be greater than actual input size|"
     r"should contain\s+\S*\s*elements not", _PT, r"aten/src/ATen/native", I),
    ("shape_mismatch", r"has a shape mismatch: expected|"
     r"dim 0 does not divide equally across group size", _PT,
     r"distributed/pipelining/_utils|csrc/distributed/c10d/Utils", I),
    # ShardedTensor ops (torch.distributed._shard): operand sizes disagree.
    ("shape_mismatch", r"does not match appropriate weight dim|"
     r"size .* not equal to input size|expected input with shape .* but got input of size|"
     r"must match the size of sharded tensor|``dst_tensor`` have size", _PT,
     r"distributed/_shard/", I),
    # Dataset/collate: samples or tensors of different sizes meet.
    ("shape_mismatch", r"each element in list of batch should be of equal size|"
     r"Size mismatch between (tensors|datasets)", _PT,
     r"torch/utils/data/(_utils/collate|dataset)", I),
    # --- State dicts and checkpoints ----------------------------------------------------------
    ("state_dict_mismatch", r"Size mismatch between saved .* and current|"
     r"does not match source tensor size|Invalid checkpoint metadata for|"
     r"Missing optimizer state for parameter|Could not find FQN|"
     r"Could not find shard at .* for FQN|at save time was .* but at load time was|"
     r"optimizer states needed by rank 0|"
     r"optimizer state does not have same shape as its parameter|"
     r"is not in the optimizer state\. The FSDPParamInfo|"
     r"Expects state .* for parameter .* but not found|"
     r"Expect param name .* but is missing|"
     r"Expects equal (param_group size|length|number of shards)", _PT,
     r"distributed/(checkpoint/|_shard/sharded_tensor/api|tensor/_shards_wrapper|"
     r"fsdp/_optim_utils|optim/named_optimizer)", I),
    ("checkpoint_unreadable", r"Checkpoint file not found|"
     r"Expected input to be a checkpoint returned by torch\.save|"
     r"Invalid protocol version|only torch\.load from a file that is seekable|"
     r"mmap can only be used with files saved with|"
     r"safely load weights when exp\w* pick\w*_module", _PT,
     r"torch/serialization\.py|distributed/_serialization|distributed/checkpoint/", I),
    # --- DataLoader ---------------------------------------------------------------------------
    ("dataloader_worker", r"Pin memory thread exited unexpectedly", _PT,
     r"torch/utils/data/dataloader", I),
    # --- Parallel layout: splits the library cannot make --------------------------------------
    ("parallel_layout", r"sequence is shorter than intended partitions|"
     r"number of chunks must be positive|smaller than the number of chunks|"
     r"Invalid stage index|Stage index .* is out of range|"
     r"requires exactly \d+ stages per rank", _PT,
     r"distributed/(pipeline/sync/(_balance/blockpartition|pipe)|pipelining/)", I),
    ("parallel_layout", r"world size\b.*\bmust be divisible by 'group_size|"
     r"'group_size'.* must not exceed the world size", _PT,
     r"distributed/distributed_c10d\.py", I),
    ("parallel_layout", r"does not support uneven sharding|cannot be evenly sharded into|"
     r"it should be a factor of|is not divisible by its mesh dimension|"
     r"is not divisible by CP mesh world size", _PT,
     r"distributed/(fsdp/_fully_shard/|tensor/_ops/_view_ops|"
     r"tensor/experimental/_context_parallel/)", I),
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
