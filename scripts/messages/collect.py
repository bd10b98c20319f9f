"""Collects the messages the distributed stack prints into stages/messages/<library>.toml.

Run by scripts/collect-messages (which documents the options); see docs/diagnosis.md, "The
message catalog". Sources are read, never built or run: Debian's source packages of PyTorch,
NVIDIA/nccl and facebookincubator/gloo at several tags, the frameworks' published wheels, the
CUDA runtime's own error strings, and the C library's errno and signal texts.
"""

import argparse
import datetime
import fnmatch
import io
import os
import re
import signal
import subprocess
import sys
import tarfile
import urllib.request
import zipfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import classify  # noqa: E402
import extract  # noqa: E402

DEBIAN = "http://deb.debian.org/debian/pool/main/p/pytorch/"
# (label, Debian orig tarball) of PyTorch; the virtualenv's torch joins as a third version.
PYTORCH_DEBIAN = [("1.13.1", "pytorch_1.13.1+dfsg.orig.tar.xz"),
                  ("2.6.0", "pytorch_2.6.0+dfsg.orig.tar.xz")]
PYTORCH_PY = ["torch/distributed/*", "torch/utils/data/*", "torch/nn/modules/module.py",
              "torch/nn/parallel/*", "torch/serialization.py", "torch/cuda/*", "torch/amp/*",
              "torch/nn/functional.py", "torch/multiprocessing/*", "torch/_utils.py",
              "torch/_weights_only_unpickler.py", "torch/autograd/*", "torch/optim/optimizer.py"]
PYTORCH_CPP = ["torch/csrc/distributed/c10d/*", "c10/cuda/*", "aten/src/ATen/cuda/*",
               "torch/csrc/cuda/*", "torch/csrc/autograd/*", "caffe2/serialize/*",
               "aten/src/ATen/native/LinearAlgebra.cpp", "aten/src/ATen/native/Embedding.cpp",
               "aten/src/ATen/native/Loss*.cpp", "aten/src/ATen/native/TensorShape.cpp",
               "aten/src/ATen/native/Convolution.cpp", "aten/src/ATen/native/ConvUtils.h",
               "aten/src/ATen/native/Normalization.cpp", "aten/src/ATen/ExpandUtils.*",
               "aten/src/ATen/TensorUtils.cpp", "aten/src/ATen/native/cuda/*Index*",
               "aten/src/ATen/native/cuda/Loss.cu", "aten/src/ATen/native/cuda/Embedding*",
               "aten/src/ATen/native/Blas.cpp", "aten/src/ATen/native/cuda/Blas.cpp",
               "aten/src/ATen/native/TensorAdvancedIndexing.cpp", "c10/core/*Allocator*",
               "c10/util/Exception.cpp", "aten/src/ATen/native/BinaryOps.cpp",
               "aten/src/ATen/TensorIterator.cpp", "c10/core/WrapDimMinimal.*",
               "aten/src/ATen/WrapDimUtils.h", "torch/csrc/utils/*"]
NCCL_TAGS = ["v2.4.8-1", "v2.7.8-1", "v2.10.3-1", "v2.12.12-1", "v2.14.3-1", "v2.16.5-1",
             "v2.18.6-1", "v2.19.4-1", "v2.21.5-1", "v2.23.4-1", "v2.26.6-1", "v2.27.7-1",
             "v2.28.9-1", "v2.30.7-1"]
GLOO_COMMITS = [("2020-03", "2020-03-31"), ("2022-10", "2022-10-31"), ("2025-05", "HEAD")]
# Wheels of the frameworks (pure Python): (library, distribution, versions).
FRAMEWORKS = [
    ("accelerate", "accelerate", ["0.20.3", "0.34.2"], ["accelerate/*"]),
    ("lightning", "pytorch_lightning", ["1.3.8", "1.6.5", "1.9.5"], ["pytorch_lightning/*", "lightning_fabric/*"]),
    ("lightning", "lightning", ["2.0.9"], ["lightning/pytorch/*", "lightning/fabric/*"]),
    ("transformers", "transformers", ["4.36.2", "4.46.3"],
     ["transformers/trainer*.py", "transformers/training_args.py", "transformers/modeling_utils.py",
      "transformers/integrations/*", "transformers/deepspeed.py", "transformers/utils/import_utils.py"]),
    ("deepspeed", "deepspeed", ["0.12.6", "0.18.2"], ["deepspeed/*"]),
]
# The same files of the virtualenv's copies, as a newer version.
VENV_PACKAGES = {"accelerate": ["accelerate/*"],
                 "lightning": ["lightning/pytorch/*", "lightning/fabric/*"],
                 "transformers": FRAMEWORKS[3][3], "torch": PYTORCH_PY}

REPOSITORIES = {
    "pytorch": "https://github.com/pytorch/pytorch (Debian source packages pytorch_1.13.1+dfsg, "
               "pytorch_2.6.0+dfsg; the Python files of the torch wheel)",
    "nccl": "https://github.com/NVIDIA/nccl",
    "gloo": "https://github.com/facebookincubator/gloo",
    "cuda": "the CUDA runtime (cudaGetErrorName/cudaGetErrorString of libcudart) and the "
            "status enumerators of cublas_api.h",
    "system": "the C library (strerror, strsignal), the Linux kernel's OOM killer (mm/oom_kill.c), "
              "the shells' job reports, libstdc++ and CPython",
    "accelerate": "https://github.com/huggingface/accelerate (PyPI wheels)",
    "lightning": "https://github.com/Lightning-AI/pytorch-lightning (PyPI wheels)",
    "transformers": "https://github.com/huggingface/transformers (PyPI wheels; the Trainer, "
                    "its arguments, model loading and integrations only)",
    "deepspeed": "https://github.com/deepspeedai/DeepSpeed (PyPI source distributions)",
}


class Collection:
    """Messages of one library over its versions, keyed by their text."""

    def __init__(self, library, versions):
        self.library = library
        self.versions = versions  # in order, oldest first
        self.messages = {}  # text -> dict

    def add(self, version, where, level, kind, parts):
        parts = [p if p is extract.HOLE else re.sub(r"[ \t]+", " ", p) for p in parts]
        parts = extract.join(parts)
        text = extract.render(parts).strip()
        if not worth_keeping(parts, level):
            return
        m = self.messages.setdefault(text, {"levels": set(), "kinds": set(), "where": {},
                                            "versions": set()})
        m["levels"].add(level)
        m["kinds"].add(kind)
        m["where"][version] = where
        m["versions"].add(version)


def worth_keeping(parts, level):
    if level == "info":
        return False
    literal = " ".join(p for p in parts if p is not extract.HOLE)
    words = re.findall(r"[A-Za-z]{2,}", literal)
    return len(words) >= 2 and sum(len(w) for w in words) >= 10


def files_matching(root, globs, exts):
    for dirpath, _, names in os.walk(root):
        for name in names:
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            if not rel.endswith(exts):
                continue
            if any(fnmatch.fnmatch(rel, g) for g in globs):
                yield path, rel


def read(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def scan_python(collection, version, root, globs):
    for path, rel in files_matching(root, globs, (".py",)):
        if "/test" in rel or rel.startswith("test"):
            continue
        for level, kind, parts in extract.python_messages(read(path)):
            collection.add(version, rel, level, kind, parts)


def scan_cpp(collection, version, root, globs, macros=extract.CPP_MACROS):
    for path, rel in files_matching(root, globs, (".cpp", ".cc", ".h", ".hpp", ".cu", ".cuh")):
        if "/test" in rel:
            continue
        for level, kind, parts in extract.cpp_messages(read(path), macros):
            collection.add(version, rel, level, kind, parts)


def fetch(url, dest):
    if not os.path.exists(dest):
        print(f"collect-messages: downloading {url}", file=sys.stderr)
        tmp = dest + ".part"
        urllib.request.urlretrieve(url, tmp)
        os.replace(tmp, dest)
    return dest


def unpacked(archive, cache):
    name = os.path.basename(archive)
    for suffix in (".orig.tar.xz", ".tar.gz", ".whl"):
        name = name.replace(suffix, "")
    dest = os.path.join(cache, name)
    if not os.path.isdir(dest):
        tmp = dest + ".part"
        os.makedirs(tmp, exist_ok=True)
        if archive.endswith(".whl"):
            zipfile.ZipFile(archive).extractall(tmp)
        else:
            with tarfile.open(archive) as t:
                t.extractall(tmp, filter="data")
        os.replace(tmp, dest)
    entries = os.listdir(dest)
    return os.path.join(dest, entries[0]) if len(entries) == 1 and os.path.isdir(
        os.path.join(dest, entries[0])) else dest


def pip_download(python, spec, cache, binary):
    kind = ["--only-binary", ":all:"] if binary else ["--no-binary", ":all:", "--no-build-isolation"]
    name, version = spec.split("==")
    for f in os.listdir(cache):
        if f.lower().replace("-", "_").startswith(f"{name}-{version}".replace("-", "_")) and \
                f.endswith((".whl", ".tar.gz")):
            return os.path.join(cache, f)
    subprocess.run([python, "-m", "pip", "download", "-q", "--no-deps", *kind, spec, "-d", cache],
                   check=True)
    return pip_download(python, spec, cache, binary)


def git_tree(repo, rev, cache):
    dest = os.path.join(cache, os.path.basename(os.path.dirname(repo.rstrip("/"))) + "-" + rev)
    if not os.path.isdir(dest):
        os.makedirs(dest + ".part", exist_ok=True)
        archive = subprocess.run(["git", "-C", repo, "archive", rev], check=True,
                                 capture_output=True).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as t:
            t.extractall(dest + ".part", filter="data")
        os.replace(dest + ".part", dest)
    return dest


def rev_before(repo, date):
    if date == "HEAD":
        return subprocess.run(["git", "-C", repo, "rev-parse", "--short", "HEAD"], check=True,
                              capture_output=True, text=True).stdout.strip()
    return subprocess.run(["git", "-C", repo, "log", "-1", "--format=%h", f"--before={date}"],
                          check=True, capture_output=True, text=True).stdout.strip()


def collect_pytorch(args):
    versions = [v for v, _ in PYTORCH_DEBIAN]
    venv_torch = None
    if args.site_packages:
        version_file = os.path.join(args.site_packages, "torch", "version.py")
        m = re.search(r"__version__ = '([0-9.]+)", read(version_file))
        venv_torch = m.group(1) if m else "2.x"
        versions.append(venv_torch)
    c = Collection("pytorch", versions)
    for version, tarball in PYTORCH_DEBIAN:
        root = unpacked(fetch(DEBIAN + tarball, os.path.join(args.cache, tarball)), args.cache)
        scan_python(c, version, root, PYTORCH_PY)
        scan_cpp(c, version, root, PYTORCH_CPP)
    if venv_torch:
        scan_python(c, venv_torch, args.site_packages, PYTORCH_PY)
    return c


NCCL_MACROS = {"WARN": ("warning", ("printf", 0))}


def collect_nccl(args):
    c = Collection("nccl", NCCL_TAGS)
    for tag in NCCL_TAGS:
        root = git_tree(args.nccl_git, tag, args.cache)
        scan_cpp(c, tag, root, ["src/*"], NCCL_MACROS)
        for path, rel in files_matching(root, ["src/*"], (".cc", ".cpp")):
            for s in extract.returned_strings(read(path), "ncclGetErrorString"):
                c.add(tag, rel, "error", "ncclGetErrorString", [s])
    return c


GLOO_MACROS = {k: v for k, v in extract.CPP_MACROS.items() if k.startswith("GLOO_") or
               k.startswith("std::")}


def collect_gloo(args):
    revs = [(label, rev_before(args.gloo_git, date)) for label, date in GLOO_COMMITS]
    c = Collection("gloo", [f"{label} ({rev})" for label, rev in revs])
    for label, rev in revs:
        root = git_tree(args.gloo_git, rev, args.cache)
        scan_cpp(c, f"{label} ({rev})", root, ["gloo/*"], GLOO_MACROS)
    return c


def collect_cuda(args):
    here = os.path.dirname(os.path.abspath(__file__))
    cuda = args.cuda
    exe = os.path.join(args.cache, "cuda_errors")
    subprocess.run(["cc", os.path.join(here, "cuda_errors.c"), f"-I{cuda}/include",
                    f"-L{cuda}/lib64", "-lcudart", "-o", exe], check=True)
    out = subprocess.run([exe], check=True, capture_output=True, text=True,
                         env=dict(os.environ, LD_LIBRARY_PATH=f"{cuda}/lib64")).stdout
    version = re.search(r"release ([0-9.]+)", subprocess.run(
        [f"{cuda}/bin/nvcc", "--version"], capture_output=True, text=True).stdout)
    label = f"CUDA {version.group(1) if version else '?'}"
    c = Collection("cuda", [label])
    for line in out.splitlines():
        code, name, text = line.split("\t")
        # PyTorch's two spellings (c10/cuda/CUDAException.cpp; THC's before 1.8) and the name.
        c.add(label, f"cudaGetErrorString({name})", "error", "cudaError", ["CUDA error: " + text])
        c.add(label, f"cudaGetErrorString({name})", "error", "cudaError",
              ["cuda runtime error (", extract.HOLE, ") : " + text])
        c.add(label, f"cudaGetErrorName({name})", "error", "cudaError", [name])
    header = read(os.path.join(cuda, "include", "cublas_api.h"))
    for name in sorted(set(re.findall(r"\b(CUBLAS_STATUS_[A-Z_]+)\s*=", header))):
        c.add(label, "cublas_api.h", "error", "cublasStatus_t", [name])
    return c


# Texts no source file of ours holds, each with where it comes from.
SYSTEM_TEXTS = [
    ("Linux mm/oom_kill.c", ["Out of memory: Killed process ", extract.HOLE]),
    ("Linux mm/oom_kill.c", ["Memory cgroup out of memory: Killed process ", extract.HOLE]),
    ("Linux mm/oom_kill.c", [extract.HOLE, " invoked oom-killer: ", extract.HOLE]),
    ("Linux mm/oom_kill.c", ["oom-kill:constraint=", extract.HOLE]),
    ("libstdc++ vterminate.cc", ["terminate called after throwing an instance of ",
                                 extract.HOLE]),
    ("libstdc++ vterminate.cc", ["terminate called without an active exception"]),
    ("libstdc++ vterminate.cc", ["terminate called recursively"]),
    ("CPython Objects/exceptions.c", ["MemoryError"]),
    ("glibc malloc.c", ["double free or corruption ", extract.HOLE]),
    ("glibc malloc.c", ["malloc(): corrupted top size"]),
    ("bash jobs.c", [extract.HOLE, " Killed ", extract.HOLE]),
    ("slurm src/slurmd/slurmstepd", ["*** JOB ", extract.HOLE, " CANCELLED AT ", extract.HOLE,
                                      " DUE TO TIME LIMIT ***"]),
    ("slurm src/slurmd/slurmstepd", ["*** STEP ", extract.HOLE, " CANCELLED AT ", extract.HOLE,
                                      " DUE TO TIME LIMIT ***"]),
    ("slurm src/slurmd/slurmstepd", ["*** JOB ", extract.HOLE, " CANCELLED AT ", extract.HOLE,
                                      " DUE TO NODE FAILURE", extract.HOLE]),
    ("slurm src/srun", ["srun: error: Node failure on ", extract.HOLE]),
]


def collect_system(args):
    label = f"glibc, Linux ({os.uname().release.split('-')[0]})"
    c = Collection("system", [label])
    import errno
    for code, name in sorted(errno.errorcode.items()):
        text = os.strerror(code)
        c.add(label, f"strerror({name})", "error", "errno", [f"[Errno {code}] {text}"])
        c.add(label, f"strerror({name})", "error", "errno", [f"errno: {code} - {text}"])
    for sig in signal.Signals:
        text = signal.strsignal(sig)
        if text and len(text) > 6:
            c.add(label, f"strsignal({sig.name})", "error", "signal", [text + " (core dumped)"])
    for where, parts in SYSTEM_TEXTS:
        c.add(label, where, "error", "text", parts)
    return c


def collect_framework(args, library):
    entries = [f for f in FRAMEWORKS if f[0] == library]
    versions = [f"{dist} {v}" for _, dist, vs, _ in entries for v in vs]
    venv_version = None
    if args.site_packages and library in VENV_PACKAGES:
        dist = "lightning" if library == "lightning" else library
        meta = [d for d in os.listdir(args.site_packages)
                if d.startswith(dist + "-") and d.endswith(".dist-info")]
        if meta:
            venv_version = f"{dist} {meta[0][len(dist) + 1:-len('.dist-info')]}"
            versions.append(venv_version)
    c = Collection(library, versions)
    for _, dist, vs, globs in entries:
        for v in vs:
            binary = library != "deepspeed"
            archive = pip_download(args.python, f"{dist}=={v}", args.cache, binary)
            root = unpacked(archive, args.cache)
            scan_python(c, f"{dist} {v}", root, globs)
    if venv_version:
        scan_python(c, venv_version, args.site_packages, VENV_PACKAGES[library])
    return c


def toml_string(text):
    out = ['"']
    for ch in text:
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def version_range(collection, seen):
    order = [v for v in collection.versions if v in seen]
    if len(order) == len(collection.versions) and len(order) > 2:
        return f"{order[0]}..{order[-1]}"
    if len(order) <= 3:
        return ", ".join(order)
    return f"{order[0]}..{order[-1]} ({len(order)} of {len(collection.versions)} scanned)"


def write(collection, out_dir):
    path = os.path.join(out_dir, f"{collection.library}.toml")
    rows = []
    for text in sorted(collection.messages):
        m = collection.messages[text]
        newest = [v for v in collection.versions if v in m["versions"]][-1]
        where = m["where"][newest]
        # c10::str and fmt::format build a text whose use the call does not say: an error.
        level = "warning" if m["levels"] == {"warning"} else "error"
        rows.append((text, where, level, sorted(m["kinds"])[0],
                     version_range(collection, m["versions"]),
                     classify.classify(collection.library, where, text)))
    classified = sum(1 for r in rows if r[5])
    with open(path + ".part", "w", encoding="utf-8") as f:
        f.write(f"# Messages {collection.library} prints, collected from its sources by "
                "scripts/collect-messages\n# (docs/diagnosis.md, \"The message catalog\"). "
                "Generated: edit the rules in\n# scripts/messages/classify.py, not this file.\n")
        f.write("#   text      the message: literal text, `{}` where a value is filled in, "
                "`{{`/`}}` braces\n#   where     the file (or function) that prints it, in the "
                "newest version that has it\n#   versions  the scanned versions that print it\n"
                "#   level     error or warning; kind: the exception type or macro\n"
                "#   class     the failure class (stages/diagnoses.toml); empty: not "
                "classified\n\n")
        f.write("[source]\n")
        f.write(f"library = {toml_string(collection.library)}\n")
        f.write(f"from = {toml_string(REPOSITORIES[collection.library])}\n")
        f.write("versions = [" + ", ".join(toml_string(v) for v in collection.versions) + "]\n")
        f.write(f"collected = {toml_string(datetime.date.today().isoformat())}\n")
        f.write(f"messages = {len(rows)}\nclassified = {classified}\n")
        for text, where, level, kind, versions, klass in rows:
            f.write(f"\n[[message]]\ntext = {toml_string(text)}\nwhere = {toml_string(where)}\n"
                    f"versions = {toml_string(versions)}\nlevel = {toml_string(level)}\n"
                    f"kind = {toml_string(kind)}\nclass = {toml_string(klass)}\n")
    os.replace(path + ".part", path)
    print(f"collect-messages: {collection.library}: {len(rows)} messages, {classified} "
          f"classified -> {path}")


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--out", required=True, help="stages/messages")
    p.add_argument("--cache", required=True, help="where sources are downloaded and unpacked")
    p.add_argument("--nccl-git", help="a clone of NVIDIA/nccl with its tags")
    p.add_argument("--gloo-git", help="a clone of facebookincubator/gloo")
    p.add_argument("--cuda", default="/usr/local/cuda", help="the CUDA toolkit")
    p.add_argument("--python", default=sys.executable, help="the pip that downloads wheels")
    p.add_argument("--site-packages", help="the PyTorch 2.x virtualenv's site-packages")
    p.add_argument("--only", nargs="*", help="libraries to collect (default: all)")
    args = p.parse_args()
    os.makedirs(args.cache, exist_ok=True)
    os.makedirs(args.out, exist_ok=True)
    jobs = {"pytorch": collect_pytorch, "nccl": collect_nccl, "gloo": collect_gloo,
            "cuda": collect_cuda, "system": collect_system}
    for lib in ("accelerate", "lightning", "transformers", "deepspeed"):
        jobs[lib] = lambda a, lib=lib: collect_framework(a, lib)
    for name, job in jobs.items():
        if args.only and name not in args.only:
            continue
        if name == "nccl" and not args.nccl_git or name == "gloo" and not args.gloo_git:
            print(f"collect-messages: {name}: skipped (no --{name}-git)", file=sys.stderr)
            continue
        write(job(args), args.out)


if __name__ == "__main__":
    main()
