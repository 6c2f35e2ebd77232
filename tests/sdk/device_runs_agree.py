#!/usr/bin/env python3
"""Two run directories of one trainer (one ungraphed, one with its step captured as a CUDA graph)
must agree: the same fold flags, first steps, counts and entry points, the same per-step flags and
checked slots, the same health rows bit for bit, and the same dumps with the same values.

    device_runs_agree.py RUN_DIR_A RUN_DIR_B [--entry FOLD:STEP:SLOT_NAME]...

--entry: the entry point a fold must have (in both). Prints what differs; exit 0 when they agree.
"""
import argparse
import os
import sys

import h5py
import numpy as np


def datasets(group, prefix=""):
    out = {}
    for name, item in group.items():
        path = f"{prefix}/{name}"
        if isinstance(item, h5py.Dataset):
            out[path] = item[()]
        else:
            out.update(datasets(item, path))
    return out


def same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.kind == "f":
        return a.tobytes() == b.tobytes()  # bit for bit, NaNs included
    return np.array_equal(a, b)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--entry", action="append", default=[])
    args = ap.parse_args()
    problems = []
    with h5py.File(os.path.join(args.a, "run.h5")) as fa, \
            h5py.File(os.path.join(args.b, "run.h5")) as fb:
        names = [n.decode() if isinstance(n, bytes) else str(n) for n in fa["slots"]["name"]]
        for key in ["folds/flags", "folds/first_step", "folds/count", "folds/entry_slot",
                    "steps/flags", "steps/checked", "steps/health", "steps/fold", "steps/step"]:
            if not same(fa[key][()], fb[key][()]):
                problems.append(f"{key} differs")
        for spec in args.entry:
            fold, step, slot = spec.split(":")
            for label, f in (("a", fa), ("b", fb)):
                got = int(f["folds/entry_slot"][int(fold)])
                first = int(f["folds/first_step"][int(fold)][got]) if got >= 0 else -1
                if got < 0 or names[got] != slot or first != int(step):
                    problems.append(f"{label}: fold {fold} entry {names[got] if got >= 0 else None}"
                                    f" at step {first}, not {slot} at {step}")
        print(f"run files: {len(fa['steps/flags'])} steps, folds' entries "
              f"{[names[e] if e >= 0 else None for e in fa['folds/entry_slot'][()]]}")
    dumps_a = sorted(os.listdir(os.path.join(args.a, "dumps")))
    dumps_b = sorted(os.listdir(os.path.join(args.b, "dumps")))
    if dumps_a != dumps_b:
        problems.append(f"dumps differ: {dumps_a} vs {dumps_b}")
    for name in set(dumps_a) & set(dumps_b):
        with h5py.File(os.path.join(args.a, "dumps", name)) as da, \
                h5py.File(os.path.join(args.b, "dumps", name)) as db:
            va, vb = datasets(da["slots"]), datasets(db["slots"])
            if sorted(va) != sorted(vb):
                problems.append(f"{name}: slots {sorted(va)} vs {sorted(vb)}")
            for k in set(va) & set(vb):
                if not same(va[k], vb[k]):
                    problems.append(f"{name}: {k} values differ")
            print(f"dump {name}: {len(va)} slots, "
                  f"{sum(int(np.isnan(v).sum()) for v in va.values())} NaN values")
    for p in problems:
        print("DIFFERS:", p)
    print("agree" if not problems else f"{len(problems)} differences")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
