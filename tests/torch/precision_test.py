#!/usr/bin/env python3
"""nanscope.torch on examples/python/train_transformer.py in reduced precision, as its user runs it:
- --precision pure-bf16 --bug-bf16-adam --no-guard: the bfloat16 gradient that overflows to -Inf
  is named at `grad:temperature`, step 5 of fold 0, and Adam's moments and the parameter fire in the
  same step (inf / inf is NaN) - the bfloat16 slots checked in their own type;
- --precision bf16 (torch.autocast): a clean run, its bfloat16 slots' overflow margin against
  bfloat16's largest value (a float64 reference from the run file's own absmax);
- on a CUDA device (--device cuda), also --precision fp16 --bug-fp16-scores with a GradScaler: the
  margin watch warns on `blocks.0.attn.scores` steps before its scores overflow float16 and the
  check fires there; the scaler's skipped step is an event naming that slot; the loss scale is a
  series of the run file and falls at the overflow.

    precision_test.py BUILD_DIR SOURCE_DIR
    precision_test.py --installed SOURCE_DIR
    precision_test.py --device cuda --lib LIBNANSCOPE SOURCE_DIR
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

import h5py
import numpy as np

ap = argparse.ArgumentParser()
ap.add_argument("dirs", nargs="+")
ap.add_argument("--device", default="cpu")
ap.add_argument("--lib")
ap.add_argument("--installed", action="store_true")
args = ap.parse_args()
source = os.path.abspath(args.dirs[-1])
build = os.path.abspath(args.dirs[0]) if len(args.dirs) > 1 else None
script = os.path.join(source, "examples", "python", "train_transformer.py")
env = dict(os.environ, CUBLAS_WORKSPACE_CONFIG=":4096:8")
if args.installed:
    lib_args = []
    env.pop("PYTHONPATH", None)
else:
    lib_args = ["--lib", args.lib or os.path.join(build, "sdk", "libnanscope.so")]
    env["PYTHONPATH"] = os.path.join(source, "python")
work = tempfile.mkdtemp(prefix="nanscope_precision_")
BF16_MAX = float.fromhex("0x1.fep127")


def fail(why):
    sys.exit(f"precision_test: {why}")


def text(v):
    return v.decode() if isinstance(v, bytes) else v


def train(name, *flags):
    run_dir = os.path.join(work, name)
    cmd = [sys.executable, script, run_dir, "--folds", "1", "--steps", "12",
           "--device", args.device] + lib_args + list(flags)
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        fail(f"{name}: {' '.join(cmd)} exited {p.returncode}:\n{p.stdout}{p.stderr}")
    f = h5py.File(os.path.join(run_dir, "run.h5"), "r")
    names = [text(n) for n in f["slots"]["name"]]
    return f, names, p.stdout


def events(f, names):
    out = []
    for e in f["events"][()]:
        slot = int(e["entry_slot"])
        out.append((text(e["kind"]), int(e["step"]), names[slot] if slot >= 0 else None))
    return out


def fired_at(f, names, step):
    return [names[i] for i in np.nonzero(f["steps/flags"][step])[0]]


# 1. A bfloat16 gradient overflows, Adam makes the parameter NaN (no loss scaler, no guard).
f, names, out = train("bf16_adam", "--precision", "pure-bf16", "--bug-bf16-adam", "--no-guard")
if "entry grad:temperature at step 5" not in out:
    fail(f"pure-bf16: the script's entry line: {out}")
first = [e for e in events(f, names) if e[0] == "first_fire"]
if first != [("first_fire", 5, "grad:temperature")]:
    fail(f"pure-bf16: first fire {first}")
at5 = fired_at(f, names, 5)
want = ["grad:temperature", "adam.exp_avg:temperature", "adam.exp_avg_sq:temperature",
        "param:temperature"]
if at5 != want:
    fail(f"pure-bf16: step 5 fired {at5}, not {want}")
if any(fired_at(f, names, s) for s in range(5)):
    fail("pure-bf16: a fire before step 5")
buffers = dict(zip(names, (text(b) for b in f["slots"]["buffer"])))
if not buffers["param:temperature"].endswith("bfloat16"):
    fail(f"pure-bf16: param:temperature's buffer {buffers['param:temperature']}")
# The gradient's kind: -Inf (4); the parameter's: NaN (1).
flags5 = f["steps/flags"][5]
if flags5[names.index("grad:temperature")] != 4 or flags5[names.index("param:temperature")] != 1:
    fail(f"pure-bf16: kinds at step 5: grad {flags5[names.index('grad:temperature')]}, param "
         f"{flags5[names.index('param:temperature')]}")
print("pure-bf16: grad:temperature -Inf at step 5, Adam's moments and param:temperature NaN there")
# The workbench on that run: the Slots table's type column and the inspector (the entry's dump)
# say bfloat16.
workbench = "/usr/bin/nanscope" if args.installed else (
    os.path.join(build, "gui", "nanscope") if build else None)
if workbench and os.path.exists(workbench) and args.device == "cpu":
    sys.path.insert(0, os.path.join(source, "tests", "python"))
    import json
    from nanscope_tools import run  # noqa: E402
    state_file = os.path.join(work, "bf16_adam.json")
    # The temperature's parameter selected at its first fire (step 5): its dump in the inspector.
    run([workbench, os.path.join(work, "bf16_adam", "run.h5"), "--state-json", state_file,
         "--screenshot", os.path.join(work, "bf16_adam.png"), "--screenshot-select",
         f"0:5:{names.index('param:temperature')}", "--screenshot-view",
         "health=grad:temperature:overflow_margin"],
        env=dict(os.environ, QT_QPA_PLATFORM="offscreen", XDG_RUNTIME_DIR=work))
    with open(state_file) as f:
        state = json.load(f)
    types = state["slot_types"]
    if types[names.index("param:temperature")] != "bfloat16":
        fail(f"workbench: param:temperature's type {types[names.index('param:temperature')]}")
    # A module path's slot name holds ':': the health series is named after its last one.
    if state["metrics"]["health_series"] != ["grad:temperature:overflow_margin"]:
        fail(f"workbench: health series {state['metrics']['health_series']}")
    summary = (state["inspector"] or {}).get("summary", "")
    if "of bfloat16" not in summary:
        fail(f"workbench: the inspector's summary does not name bfloat16: {summary}")
    print("workbench: the Slots table and the inspector say bfloat16")

# 2. torch.autocast in bfloat16, clean: the bfloat16 slots' margin against bfloat16's largest.
f, names, out = train("bf16_clean", "--precision", "bf16")
if f["folds/flags"][()].any():
    fail(f"bf16 autocast: a clean run fired: {out}")
buffers = [text(b) for b in f["slots"]["buffer"]]
bf = [i for i, b in enumerate(buffers) if b.endswith("bfloat16")]
if not bf:
    fail(f"bf16 autocast: no bfloat16 slot among {buffers[:10]}")
health = f["steps/health"][()]
fields = [text(x) for x in f["steps/health"].attrs["fields"]]
lo, hi = health[:, bf, fields.index("finite_min")], health[:, bf, fields.index("finite_max")]
absmax = np.fmax(np.abs(lo), np.abs(hi)).astype(np.float64)
margin = health[:, bf, fields.index("overflow_margin")]
ok = absmax > 0
ref = np.log2(BF16_MAX) - np.log2(absmax[ok])
if not np.allclose(margin[ok], ref, rtol=1e-6, atol=1e-5):
    fail("bf16 autocast: the overflow margin is not log2(bfloat16's largest / absmax)")
print(f"bf16 autocast: clean, {len(bf)} bfloat16 slots, margins down to "
      f"{np.nanmin(margin):.1f} bits")

if args.device.startswith("cuda"):
    # 3. float16 scores overflow: the margin watch first, then the fire, the scaler's skip.
    f, names, out = train("fp16_scores", "--precision", "fp16", "--bug-fp16-scores")
    ev = events(f, names)
    scores = "blocks.0.attn.scores"
    warn = [e for e in ev if e[0] == "watch" and e[2] == scores]
    fire = [e for e in ev if e[0] == "first_fire"]
    if not warn or not fire or fire[0][2] != scores:
        fail(f"fp16: events {ev}")
    w = f["watches"][()]
    margin_trips = [r for r in w if text(r["condition"]) == "overflow_margin"
                    and names[int(r["slot"])] == scores]
    if not margin_trips:
        fail(f"fp16: no overflow_margin trip on {scores}: {w}")
    if not warn[0][1] < fire[0][1]:
        fail(f"fp16: the watch (step {warn[0][1]}) did not come before the fire ({fire[0][1]})")
    skip = [e for e in ev if e[0] == "loss_scale_skip" and e[1] == fire[0][1]]
    if skip != [("loss_scale_skip", fire[0][1], scores)]:
        fail(f"fp16: the scaler's skip at the fire: {ev}")
    scale = f["steps/loss_scale"][()]
    if not (np.isfinite(scale).all() and (scale > 0).all()):
        fail(f"fp16: /steps/loss_scale {scale}")
    if not scale[fire[0][1]] < scale[fire[0][1] - 1]:
        fail(f"fp16: the scale did not fall at the overflow: {scale}")
    print(f"fp16: margin watch on {scores} at step {warn[0][1]}, fire there at step "
          f"{fire[0][1]}, the scaler's skip named it; scale {scale[0]:g} -> {scale[-1]:g}")

shutil.rmtree(work)
print("precision_test: PASS")
