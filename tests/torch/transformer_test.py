#!/usr/bin/env python3
"""nanscope.torch on examples/python/train_transformer.py, as its user runs it (Debian's PyTorch on
the CPU, the host path), the package from the source tree:
- each bug is named at its module path and step (the script's line and the run file's first-fire
  event agree), with its first-fire dump holding the module's output with the NaN;
- without the bugs nothing fires;
- the guarded run's parameters equal, bit for bit, those of an unwatched run that skips the
  updates of the same steps;
- every run file passes `nanscope-run validate`, and its slots are named by module path in the
  step's execution order.

    transformer_test.py BUILD_DIR SOURCE_DIR
    transformer_test.py --installed SOURCE_DIR
    transformer_test.py --device cuda --lib LIBNANSCOPE --run-tool NANSCOPE_RUN SOURCE_DIR

With --installed it tests the installed package (tests/package/installed_without_cuda.sh):
nanscope.torch and libnanscope as python3 finds them, /usr/bin/nanscope-run.

The second form is the device check (scripts/gpu-check.sh, part torch): the same on a CUDA device,
deterministic algorithms on, so the guard's comparison holds there too; and each bug again with
the step captured by torch.cuda.graph (--graph), whose run file and dumps must equal the eager
run's bit for bit (tests/sdk/device_runs_agree.py).
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

import h5py
import numpy as np
import torch

ap = argparse.ArgumentParser()
ap.add_argument("dirs", nargs="+")
ap.add_argument("--device", default="cpu")
ap.add_argument("--lib")
ap.add_argument("--run-tool")
ap.add_argument("--installed", action="store_true")
args = ap.parse_args()
source = os.path.abspath(args.dirs[-1])
build = os.path.abspath(args.dirs[0]) if len(args.dirs) > 1 else None
script = os.path.join(source, "examples", "python", "train_transformer.py")
env = dict(os.environ, CUBLAS_WORKSPACE_CONFIG=":4096:8")
if args.installed:  # the example finds the installed library by itself
    lib_args, run_tool = [], "/usr/bin/nanscope-run"
    env.pop("PYTHONPATH", None)
else:
    lib_args = ["--lib", args.lib or os.path.join(build, "sdk", "libnanscope.so")]
    run_tool = args.run_tool or os.path.join(build, "cli", "nanscope-run")
    env["PYTHONPATH"] = os.path.join(source, "python")
work = tempfile.mkdtemp(prefix="nanscope_torch_")


def fail(why):
    sys.exit(f"transformer_test: {why}")


def train(name, *flags):
    run_dir = os.path.join(work, name)
    p = subprocess.run([sys.executable, script, run_dir, *lib_args, "--device", args.device,
                        *flags], env=env,
                       capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        fail(f"{name} exits {p.returncode}:\n{p.stdout}{p.stderr}")
    v = subprocess.run([run_tool, "validate", os.path.join(run_dir, "run.h5")],
                       capture_output=True, text=True)
    if v.returncode != 0:
        fail(f"{name}: nanscope-run validate exits {v.returncode}: {v.stderr}")
    return run_dir, p.stdout


def slot_names(run_dir):
    with h5py.File(os.path.join(run_dir, "run.h5"), "r") as f:
        return [row["name"].decode() for row in f["slots"][:]]


def first_fires(run_dir):
    with h5py.File(os.path.join(run_dir, "run.h5"), "r") as f:
        return [(int(e["fold"]), int(e["step"]), int(e["entry_slot"]), e["dump"].decode())
                for e in f["events"][:] if e["kind"] == b"first_fire"]


try:
    # Clean: nothing fires, in any fold; every module, gradient, moment and parameter is a slot.
    clean, out = train("clean")
    if "entry" in out or re.search(r"skipped fold \d+: \d", out):
        fail(f"the clean run fired or skipped an update:\n{out}")
    names = slot_names(clean)
    with h5py.File(os.path.join(clean, "run.h5"), "r") as f:
        if np.any(f["folds"]["flags"][:]):
            fail("the clean run's fold flags are set")
    for wanted in ["tok", "embed_norm", "blocks.0.attn.probs", "blocks.1.mlp.2", "loss",
                   "grad:blocks.0.attn.probs", "grad:head.weight",
                   "adam.exp_avg_sq:blocks.1.attn.qkv.weight", "param:pos"]:
        if wanted not in names:
            fail(f"no slot '{wanted}' among {len(names)}: {names[:20]} ...")
    order = [names.index(n) for n in ["embed_norm", "blocks.0.attn.probs", "loss",
                                      "grad:blocks.0.attn.probs", "adam.exp_avg:head.weight",
                                      "param:head.weight"]]
    if order != sorted(order):
        fail(f"the slots are not in the step's execution order: {order}")

    # Each bug, named where it enters (and on the device, the same again with the step graphed).
    graphed = args.device.startswith("cuda")
    for flag, fold, step, slot in [("--bug-softmax", 1, 6, "blocks.0.attn.probs"),
                                   ("--bug-layernorm", 0, 4, "embed_norm")]:
        runs = [(flag.strip("-"), ())] + ([(flag.strip("-") + "_graphed", ("--graph",))]
                                          if graphed else [])
        skipped = {}
        for name, extra in runs:
            run_dir, out = train(name, flag, *extra, "--params", os.path.join(work, name + ".pt"))
            skipped[name] = re.findall(r"^skipped fold \d+: .*$", out, re.M)
            line = f"fold {fold}: .*entry {re.escape(slot)} at step {step}$"
            if not re.search(line, out, re.M):
                fail(f"{name}: the script does not name {slot} at step {step}:\n{out}")
            fires = first_fires(run_dir)
            names = slot_names(run_dir)
            if len(fires) != 1 or fires[0][:2] != (fold, step) or names[fires[0][2]] != slot:
                fail(f"{name}: the run file's first fire is {fires}, not {slot} at {fold}/{step}")
            dump = os.path.join(run_dir, fires[0][3])
            with h5py.File(dump, "r") as d:
                values = d["slots"][slot][:]
                if not np.isnan(values).any():
                    fail(f"{name}: the dump's {slot} holds no NaN")
        if graphed:
            agree = subprocess.run([sys.executable,
                                    os.path.join(source, "tests", "sdk", "device_runs_agree.py"),
                                    os.path.join(work, runs[0][0]), os.path.join(work, runs[1][0]),
                                    "--entry", f"{fold}:{step}:{slot}"],
                                   capture_output=True, text=True)
            print(agree.stdout, end="")
            if agree.returncode != 0:
                fail(f"{flag}: the graphed run differs from the eager one:\n{agree.stdout}"
                     f"{agree.stderr}")
            # The guard inside the graph: the same updates skipped, the same parameters at the end.
            if skipped[runs[0][0]] != skipped[runs[1][0]]:
                fail(f"{flag}: skipped updates {skipped[runs[1][0]]} graphed, "
                     f"{skipped[runs[0][0]]} eager")
            e, g = (torch.load(os.path.join(work, n + ".pt")) for n, _ in runs)
            differ = [k for k in e if not torch.equal(e[k], g[k])]
            if differ:
                fail(f"{flag}: the graphed run's parameters differ from the eager one's: {differ}")

    # The guard: the parameters of the guarded run equal an unwatched run's that skips the updates
    # of the same steps.
    guarded, out = train("guarded", "--bug-softmax", "--params", os.path.join(work, "g.pt"))
    skip = [f"{fold}:{s}" for fold, steps in re.findall(r"^skipped fold (\d+): ([\d ]*)$", out, re.M)
            for s in steps.split()]
    if not skip:
        fail(f"the guarded run skipped no update:\n{out}")
    p = subprocess.run([sys.executable, script, os.path.join(work, "unwatched"), "--unwatched",
                        "--device", args.device,
                        "--bug-softmax", "--skip", ",".join(skip), "--params",
                        os.path.join(work, "u.pt")], env=env, capture_output=True, text=True)
    if p.returncode != 0:
        fail(f"the unwatched run exits {p.returncode}: {p.stderr}")
    g, u = torch.load(os.path.join(work, "g.pt")), torch.load(os.path.join(work, "u.pt"))
    differ = [k for k in g if not torch.equal(g[k], u[k])]
    if differ or not all(torch.isfinite(v).all() for v in g.values()):
        fail(f"the guarded parameters differ from the unwatched run's ({differ}) or are not finite")
    print(f"transformer_test ({args.device}): {len(names)} slots by module path; --bug-softmax named "
          f"blocks.0.attn.probs at fold 1 step 6 and --bug-layernorm embed_norm at fold 0 step 4, "
          f"with their dumps{' (graphed too, equal to eager)' if graphed else ''}; the clean run quiet; the guard skipped {len(skip)} updates and the "
          f"parameters equal the unwatched run's that skips them")
finally:
    shutil.rmtree(work, ignore_errors=True)
