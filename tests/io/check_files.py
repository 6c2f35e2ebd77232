"""Reads a nanscope run directory with h5py and checks it against the run's JSON summary.

usage: check_files.py SUMMARY.json
Exits non-zero with a message on the first mismatch.
"""
import json
import sys

import h5py
import numpy as np

summary = json.load(open(sys.argv[1]))
failures = []


def expect(cond, what):
    if not cond:
        failures.append(what)


def same_number(stored, reported):
    """A float64 of the file against the JSON's number (null for a non-finite value)."""
    return np.isnan(stored) if reported is None else stored == reported


STATE = {"clean": 0, "fired": 1, "absent": 2, "deferred": 3, "disabled": 4}
KIND = {"nan": 1, "posinf": 2, "neginf": 4}

with h5py.File(summary["run_file"], "r") as run:
    for attr in ("schema_version", "nanscope_version", "created_utc", "backend", "device_name", "config", "seed"):
        expect(attr in run.attrs, f"run.h5 root attribute {attr}")
    expect(run.attrs["schema_version"] == 2, "schema_version 2")
    expect(run.attrs["backend"] == summary["backend"], "backend attribute")
    expect(run.attrs["scenario"] == "healthy", "scenario attribute (no --scenario: the defaults, healthy)")
    slots = run["slots"]
    # nanscope's own table: as many rows as the summary's folds list slots (docs/slots.md).
    N = len(summary["folds"][0]["slots"])
    expect(run.attrs["trainer"] == "nanscope", "trainer attribute: nanscope's own")
    expect(slots.dtype.names == ("index", "name", "phase", "buffer", "rank", "consumers"), f"/slots fields {slots.dtype.names}")
    # consumers: bit i for each slot that reads the buffer in the step (docs/slots.md): h_s2 feeds
    # bn_z (3), iqn_quantiles (14), aux_pred_nb (17) and grad_norm (21).
    expect(int(slots["consumers"][2]) == (1 << 3) | (1 << 14) | (1 << 17) | (1 << 21), "h_s2's consumers")
    expect(N >= 36 and slots.shape == (N,), f"/slots has {N} rows")
    expect(list(slots["index"]) == list(range(N)), f"/slots indices 0..{N - 1}")
    expect(sorted(slots["rank"]) == list(range(N)), "/slots ranks are a permutation")
    names = [n.decode() for n in slots["name"]]
    expect(names[33] == "bw_d_h_s2.main" and names[17] == "aux_pred_nb", "slot names")
    nf = len(summary["folds"])
    for ds, dtype in (("flags", np.uint8), ("state", np.uint8), ("first_step", np.int64), ("count", np.int64)):
        d = run[f"folds/{ds}"]
        expect(d.shape == (nf, N), f"/folds/{ds} shape {d.shape}")
        expect(d.dtype == dtype, f"/folds/{ds} dtype {d.dtype}")
    expect(run["folds/entry_slot"].dtype == np.int32 and run["folds/entry_slot"].shape == (nf,), "/folds/entry_slot")
    for k, fold in enumerate(summary["folds"]):
        for s in fold["slots"]:
            i = s["index"]
            expect(run["folds/state"][k, i] == STATE[s["state"]], f"fold {k} slot {i} state")
            expect(run["folds/flags"][k, i] == sum(KIND[x] for x in s["kinds"]), f"fold {k} slot {i} flags")
            expect(run["folds/first_step"][k, i] == s["first_step"], f"fold {k} slot {i} first_step")
            expect(run["folds/count"][k, i] == s["count"], f"fold {k} slot {i} count")
    if summary["entry"]:
        e = summary["entry"]
        expect(run["folds/entry_slot"][e["fold"]] == e["slot"], "entry slot of the entry fold")
    steps = summary["steps_run"]
    expect(run["steps/flags"].shape == (steps, N) and run["steps/flags"].dtype == np.uint8, "/steps/flags")
    for ds, dtype in (("fold", np.int32), ("step", np.int32), ("loss", np.float64), ("grad_norm", np.float64)):
        expect(run[f"steps/{ds}"].shape == (steps,) and run[f"steps/{ds}"].dtype == dtype, f"/steps/{ds}")
    # The loss terms: float64 per step; a fold's first and last rows are the JSON's firsts and lasts.
    for ds in ("c51", "mse", "cql", "iqn", "aux", "ens"):
        d = run[f"steps/{ds}"]
        expect(d.shape == (steps,) and d.dtype == np.float64, f"/steps/{ds} {d.shape} {d.dtype}")
    step_fold = run["steps/fold"][()]
    for k, fold in enumerate(summary["folds"]):
        rows = np.flatnonzero(step_fold == k)
        expect(len(rows) == fold["steps"], f"fold {k}: {len(rows)} rows of /steps, {fold['steps']} steps")
        for ds, key in (("loss", "loss"), ("c51", "c51")):
            v = run[f"steps/{ds}"][()]
            expect(same_number(v[rows[0]], fold[f"{key}_first"]) and same_number(v[rows[-1]], fold[f"{key}_last"]),
                   f"fold {k}: /steps/{ds} first and last rows against {key}_first and {key}_last")
    # /steps/checked: uint8 0/1 per step and slot; a slot off all run long is never checked, a slot
    # that stayed clean is checked at every step of its fold.
    checked_raw = run["steps/checked"]
    expect(checked_raw.shape == (steps, N) and checked_raw.dtype == np.uint8, "/steps/checked")
    expect(set(np.unique(checked_raw[()])) <= {0, 1}, "/steps/checked holds 0 and 1")
    for k, fold in enumerate(summary["folds"]):
        rows = checked_raw[()][step_fold == k]
        for s in fold["slots"]:
            if s["state"] in ("disabled", "absent"):
                expect((rows[:, s["index"]] == 0).all(), f"fold {k} slot {s['index']} ({s['state']}) never checked")
            if s["state"] == "clean":
                expect((rows[:, s["index"]] == 1).all(), f"fold {k} slot {s['index']} (clean) checked at every step")
    # /watches: the documented fields and types; row k is the JSON's k-th trip and the k-th watch event.
    expect(len(summary["watches"]) >= 1, "the run has watch trips")
    w = run["watches"]
    expect(w.dtype.names == ("condition", "slot", "group", "fold", "step", "value", "threshold"),
           f"/watches fields {w.dtype.names}")
    expect(w.dtype["condition"].kind == "S", f"/watches condition is a string ({w.dtype['condition']})")
    for f in ("slot", "group", "fold", "step"):
        expect(w.dtype[f] == np.int32, f"/watches {f} int32 ({w.dtype[f]})")
    for f in ("value", "threshold"):
        expect(w.dtype[f] == np.float64, f"/watches {f} float64 ({w.dtype[f]})")
    watch_events = [e for e in run["events"] if e["kind"] == b"watch"]
    expect(w.shape == (len(summary["watches"]),) and len(watch_events) == len(summary["watches"]),
           f"/watches {w.shape}, {len(watch_events)} watch events, {len(summary['watches'])} trips in the JSON")
    for k, (row, trip, event) in enumerate(zip(w, summary["watches"], watch_events)):
        expect(row["condition"].decode() == trip["condition"], f"/watches[{k}] condition")
        for f in ("slot", "group", "fold", "step"):
            expect(int(row[f]) == trip[f], f"/watches[{k}] {f}")
        expect(row["value"] == trip["value"] and row["threshold"] == trip["threshold"], f"/watches[{k}] value, threshold")
        expect((event["fold"], event["step"], event["entry_slot"]) == (row["fold"], row["step"], row["slot"]),
               f"/watches[{k}] is the {k}-th watch event")
    # /steps/health [steps, N, fields]: NaN rows where a slot was not checked; the JSON's per-fold
    # peaks are the largest finite absolute values it holds.
    health = run["steps/health"]
    fields = list(health.attrs["fields"])
    expect(fields == ["finite_min", "finite_max", "mean", "rms", "nonfinite", "zero_fraction",
                      "c51_mass_error", "quantile_crossing", "overflow_margin", "underflow_share",
                      "dynamic_range"], f"/steps/health fields {fields}")
    expect(health.shape == (steps, N, len(fields)) and health.dtype == np.float32, "/steps/health")
    h = health[()]
    checked = run["steps/checked"][()].astype(bool)
    expect(np.isnan(h[~checked]).all(), "/steps/health is NaN where a slot was not checked")
    expect(not np.isnan(h[checked][:, fields.index("nonfinite")]).any(), "checked slots are measured")
    nonfinite = h[:, :, fields.index("nonfinite")]
    expect(((nonfinite > 0) == (run["steps/flags"][()] > 0))[checked].all(),
           "a slot's non-finite count is positive exactly where it fired")
    absmax = np.fmax(np.abs(h[:, :, 0]), np.abs(h[:, :, 1]))
    # The margin to overflow: log2(float32's largest / absmax), against a float64 reference.
    margin = h[:, :, fields.index("overflow_margin")]
    some = checked & (absmax > 0)
    want = np.log2(float(np.finfo(np.float32).max)) - np.log2(absmax[some].astype(np.float64))
    expect(np.allclose(margin[some], want, rtol=1e-6, atol=1e-5), "overflow_margin is log2 headroom")
    for k, fold in enumerate(summary["folds"]):
        rows = absmax[run["steps/fold"][()] == k]
        for s in fold["slots"]:
            col = rows[:, s["index"]]
            if np.isnan(col).all():
                expect(s["peak_abs"] is None and s["peak_step"] == -1, f"fold {k} slot {s['index']} no peak")
            else:
                expect(abs(s["peak_abs"] - np.nanmax(col)) <= 1e-6 * np.nanmax(col), f"fold {k} slot {s['index']} peak_abs")
                expect(s["peak_step"] == int(np.nanargmax(col)), f"fold {k} slot {s['index']} peak_step")
    # Per-step flags OR-ed over a fold give the fold's flags (sticky accumulation).
    for k in range(nf):
        rows = run["steps/flags"][run["steps/fold"][()] == k]
        expect((np.bitwise_or.reduce(rows, axis=0) == run["folds/flags"][k]).all(), f"fold {k}: OR of step flags")
    ev = run["events"]
    expect(ev.dtype.names == ("fold", "step", "kind", "entry_slot", "dump"), f"/events fields {ev.dtype.names}")
    dumps_in_events = {e["dump"].decode() for e in ev if e["kind"] == b"first_fire"}
    expect(len(dumps_in_events) == len(summary["dumps"]), "one first_fire event per dump")
    if summary["halt"]:
        expect(any(e["kind"].decode() == summary["halt"]["reason"] for e in ev), "halt event")

expect(len(summary["dumps"]) >= 1, "at least one dump")
for path in summary["dumps"]:
    with h5py.File(path, "r") as dump:
        for attr in ("fold", "step", "global_step", "entry_slot", "schema_version", "config", "seed", "backend"):
            expect(attr in dump.attrs, f"{path}: root attribute {attr}")
        fold, step = int(dump.attrs["fold"]), int(dump.attrs["step"])
        expect(path.endswith(f"fold{fold:03d}_step{step:08d}_{names[dump.attrs['entry_slot']]}.h5"), f"{path}: name")
        flags = dump["flags"][()]
        expect(flags.shape == (N,) and flags.dtype == np.uint8, f"{path}: /flags")
        for name, ds in dump["slots"].items():
            i = int(ds.attrs["index"])
            expect(names[i] == name, f"{path}: /slots/{name} index")
            expect(ds.dtype == np.float32, f"{path}: /slots/{name} dtype")
            v = ds[()]
            expect(int(ds.attrs["nan_count"]) == int(np.isnan(v).sum()), f"{path}: {name} nan_count")
            expect(int(ds.attrs["posinf_count"]) == int(np.isposinf(v).sum()), f"{path}: {name} posinf_count")
            expect(int(ds.attrs["neginf_count"]) == int(np.isneginf(v).sum()), f"{path}: {name} neginf_count")
            bad = np.flatnonzero(~np.isfinite(v.ravel()))
            expect(int(ds.attrs["first_bad_index"]) == (bad[0] if len(bad) else -1), f"{path}: {name} first_bad_index")
            fin = v[np.isfinite(v)]
            if fin.size:
                expect(ds.attrs["finite_min"] == fin.min() and ds.attrs["finite_max"] == fin.max(), f"{path}: {name} finite range")
            expect(flags[i] != 0 and (int(ds.attrs["flags"]) & ~int(flags[i])) == 0, f"{path}: {name} flags")
            # The fold's first fire of this slot is this step.
            k = summary["folds"][fold]["slots"][i]
            expect(k["first_step"] == step, f"{path}: {name} first_step {k['first_step']} != {step}")
            expect(k["count"] == int((~np.isfinite(v)).sum()), f"{path}: {name} count at first fire")
        for field in ("obs", "next_obs", "returns", "done", "next_bar", "actions"):
            expect(f"context/batch/{field}" in dump, f"{path}: /context/batch/{field}")
        expect(dump["context/batch/actions"].dtype == np.int32, f"{path}: actions int32")
        expect(dump["context/params/encoder.w1"].shape[0] == 24, f"{path}: encoder.w1 shape")
        expect("target.encoder.w1" in dump["context/params"], f"{path}: target params")
        expect("t" in dump["context/adam"].attrs, f"{path}: adam t")
        expect(dump["context/adam/m/encoder.w1"].shape == dump["context/params/encoder.w1"].shape, f"{path}: adam m")

if failures:
    print("\n".join(failures))
    sys.exit(1)
print(f"ok: run file and {len(summary['dumps'])} dumps match the summary")
