#!/usr/bin/env python3
"""The installed tool works on its own (issue 31, item 5; docs/install.md).

  install_test.py prefix --build DIR --cmake CMAKE --trainer 0|1
      `cmake --install DIR --prefix <tmp>`, then, from an empty working folder, the installed
      bin/bigmac-bringup: --version, the files it looks up beside itself (share/bigmac-bringup),
      and the quick start `run-all -c <prefix>/share/bigmac-bringup/configs/demo.toml` (exit 0)
      when bigmac-train is built, else `config check` and `plan` of that configuration.
  install_test.py deb --build DIR --cpack CPACK --trainer 0|1
      `cpack -G DEB` of DIR into <tmp>, its contents (`dpkg-deb -c`) and control fields, then
      the package unpacked (`dpkg -x`) into <tmp>/root and its bigmac-bringup run from there.
      Exits 77 (CTest's SKIP_RETURN_CODE) without cpack, dpkg-deb or dpkg.

Every temporary folder is removed at the end and every process started is waited for (a run
past its deadline is killed with its whole process group).
"""

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

SKIP = 77
SHARE = os.path.join("share", "bigmac-bringup")
# What the tool reads beside itself (<exe>/../share/bigmac-bringup), relative to <prefix>.
SHARED_FILES = [
    os.path.join(SHARE, "probe", "sitecustomize.py"),
    os.path.join(SHARE, "probe", "bigmac_probe", "__init__.py"),
    os.path.join(SHARE, "stages", "01-single.toml"),
    os.path.join(SHARE, "stages", "05-target.toml"),
    os.path.join(SHARE, "stages", "diagnoses.toml"),
    os.path.join(SHARE, "configs", "demo.toml"),
    os.path.join(SHARE, "configs", "plain-ddp.toml"),
    os.path.join(SHARE, "audit_python.py"),
    os.path.join(SHARE, "audit_python_model.py"),
    os.path.join("share", "doc", "bigmac-bringup", "README.md"),
    os.path.join("share", "doc", "bigmac-bringup", "docs", "install.md"),
]


class Failure(Exception):
    pass


def clean_env():
    # No BIGMAC_* setting of the caller's shell reaches the installed tool's configuration.
    env = {k: v for k, v in os.environ.items() if not k.startswith("BIGMAC_")}
    env["OMP_NUM_THREADS"] = "1"
    return env


def run(argv, cwd, timeout, env=None):
    """Runs argv in its own process group; kills the group past `timeout`. (rc, output)."""
    proc = subprocess.Popen(argv, cwd=cwd, env=env or clean_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        raise Failure(f"{' '.join(argv)} ran past {timeout} s:\n{out[-4000:]}")
    finally:
        # Whatever it started and left behind in its group goes too.
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return proc.returncode, out


def expect(argv, cwd, timeout, rc=0):
    code, out = run(argv, cwd, timeout)
    if code != rc:
        raise Failure(f"{' '.join(argv)} exited {code}, expected {rc}:\n{out[-4000:]}")
    return out


def check_files(root, names):
    missing = [n for n in names if not os.path.isfile(os.path.join(root, n))]
    if missing:
        raise Failure(f"missing under {root}: {', '.join(missing)}")


MARK = "(installed copy)"


def mark_installed_gate(prefix):
    """Appends MARK to the title of the installed single gate: this copy, not the source's."""
    path = os.path.join(prefix, SHARE, "stages", "01-single.toml")
    with open(path) as f:
        text = f.read()
    marked = re.sub(r'^title = "(.*)"$', rf'title = "\1 {MARK}"', text, count=1, flags=re.M)
    if marked == text:
        raise Failure(f"no title line in {path}")
    os.chmod(path, 0o644)
    with open(path, "w") as f:
        f.write(marked)


def check_tool(prefix, work, trainer, full_run):
    """The tool of `prefix` run from the empty folder `work`."""
    tool = os.path.join(prefix, "bin", "bigmac-bringup")
    out = expect([tool, "--version"], work, 30)
    if not out.startswith("bigmac-bringup "):
        raise Failure(f"--version printed {out!r}")
    demo = os.path.join(prefix, SHARE, "configs", "demo.toml")
    expect([tool, "config", "check", "-c", demo], work, 60)
    plan = expect([tool, "plan", "-c", demo], work, 60)
    # The gates come from the installed stages/, not from the source tree it was built in:
    # the installed copy's title (marked by mark_installed_gate) is the one printed.
    if MARK not in plan:
        raise Failure(f"plan did not read the installed gate files:\n{plan[-3000:]}")
    # The probe a Python trainer gets is the installed one (the example's own program is not
    # needed to plan it).
    real = os.path.realpath(prefix)
    ddp = os.path.join(prefix, SHARE, "configs", "plain-ddp.toml")
    env = expect([tool, "plan", "-v", "-c", ddp], work, 60)
    if "PYTHONPATH=" + os.path.join(real, SHARE, "probe") not in env:
        raise Failure(f"plan -v does not put the installed probe first:\n{env[-3000:]}")
    if trainer:
        # bigmac-train resolves beside the installed bigmac-bringup.
        if os.path.join(real, "bin", "bigmac-train") not in plan:
            raise Failure(f"plan does not start the installed bigmac-train:\n{plan[-3000:]}")
        if full_run:
            out = expect([tool, "run-all", "--ci", "-c", demo, "--run-dir",
                          os.path.join(work, "reports", "install-test")], work, 240)
            if not os.path.isfile(os.path.join(work, "reports", "install-test", "summary.json")):
                raise Failure(f"run-all wrote no summary.json:\n{out[-3000:]}")
            print(out[-1500:])


def prefix_test(args, tmp):
    prefix = os.path.join(tmp, "prefix")
    work = os.path.join(tmp, "work")
    os.mkdir(work)
    expect([args.cmake, "--install", args.build, "--prefix", prefix], tmp, 120)
    binaries = ["bigmac-bringup", "bigmac-rank-env"] + (["bigmac-train"] if args.trainer else [])
    check_files(prefix, [os.path.join("bin", b) for b in binaries] + SHARED_FILES)
    if not os.path.isdir(os.path.join(prefix, SHARE, "probe")):
        raise Failure("no probe folder under share/bigmac-bringup")
    mark_installed_gate(prefix)
    check_tool(prefix, work, args.trainer, full_run=True)


def deb_test(args, tmp):
    for tool in ("dpkg-deb", "dpkg"):
        if not shutil.which(tool):
            print(f"skipped: no {tool}")
            return SKIP
    cpack = shutil.which(args.cpack) if args.cpack else None
    if not cpack:
        print("skipped: no cpack")
        return SKIP
    config = os.path.join(args.build, "CPackConfig.cmake")
    expect([cpack, "-G", "DEB", "--config", config, "-B", tmp], tmp, 240)
    debs = [f for f in os.listdir(tmp) if f.endswith(".deb")]
    if len(debs) != 1:
        raise Failure(f"cpack made {debs} in {tmp}")
    deb = os.path.join(tmp, debs[0])
    print(f"{debs[0]}: {os.path.getsize(deb)} bytes")
    listing = expect(["dpkg-deb", "-c", deb], tmp, 60)
    paths = {line.split()[-1].removeprefix("./") for line in listing.splitlines() if line}
    binaries = ["bigmac-bringup", "bigmac-rank-env"] + (["bigmac-train"] if args.trainer else [])
    wanted = [f"usr/bin/{b}" for b in binaries] + [f"usr/{n}" for n in SHARED_FILES]
    missing = [w for w in wanted if w not in paths]
    if missing:
        raise Failure(f"{debs[0]} lacks {', '.join(missing)}")
    if not args.trainer and "usr/bin/bigmac-train" in paths:
        raise Failure("bigmac-train packaged though it was not built")
    fields = expect(["dpkg-deb", "-f", deb, "Package", "Depends", "Maintainer"], tmp, 30)
    print(fields)
    if "Package: bigmac-bringup" not in fields or "Depends:" not in fields:
        raise Failure(f"control fields: {fields}")
    # Installed as dpkg would lay it out, then run from there (no root needed for dpkg -x).
    root = os.path.join(tmp, "root")
    work = os.path.join(tmp, "work")
    os.mkdir(work)
    expect(["dpkg", "-x", deb, root], tmp, 60)
    mark_installed_gate(os.path.join(root, "usr"))
    check_tool(os.path.join(root, "usr"), work, args.trainer, full_run=False)
    return 0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["prefix", "deb"])
    parser.add_argument("--build", required=True)
    parser.add_argument("--cmake", default="cmake")
    parser.add_argument("--cpack", default="")
    parser.add_argument("--trainer", type=int, choices=[0, 1], required=True)
    args = parser.parse_args()
    args.build = os.path.abspath(args.build)
    tmp = tempfile.mkdtemp(prefix=f"bigmac-install-{args.mode}-")
    try:
        if args.mode == "prefix":
            prefix_test(args, tmp)
            rc = 0
        else:
            rc = deb_test(args, tmp)
    except Failure as e:
        print(f"FAIL: {e}", file=sys.stderr)
        rc = 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if rc == 0:
        print(f"install {args.mode}: ok")
    return rc


if __name__ == "__main__":
    sys.exit(main())
