#!/usr/bin/env python3
"""A trainer of 4,096 host slots through the SDK, as its user runs it (examples/python's module).

Each slot is a layer's 16-float activation, each consumed by the next layer's. At step 150 a NaN
enters layer 2999 and an Inf layer 4095: the step fires, its first fire is dumped, the session
halts. Then the run file and the dump are read as the user reads them: h5py (the table and every
per-slot dataset 4,096 wide, the consumers as pairs, the health of the steps the budget keeps),
`nanscope-run validate` and `compare`, and the workbench offscreen (its state JSON and a
screenshot).

    wide_table_test.py BUILD_DIR SOURCE_DIR
"""
import json
import math
import os
import shutil
import sys
import tempfile

import h5py
import numpy as np

build, source = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
sys.path.insert(0, os.path.join(source, "python"))
sys.path.insert(0, os.path.join(source, "tests", "python"))
import nanscope.sdk as ns  # noqa: E402
from nanscope_tools import run, workbench_state  # noqa: E402

SLOTS, ENTRY, LAST, FIRE_STEP = 4096, 2999, 4095, 150
# The health the run file keeps (docs/files.md): one step in 41 (44 bytes a slot against 4,400 a
# step) and the 100 steps up to the first fire.
STRIDE, WINDOW = 41, 100
run_tool = os.path.join(build, "cli", "nanscope-run")
workbench = os.path.join(build, "gui", "nanscope")
work = tempfile.mkdtemp(prefix="nanscope_wide_")


def name(i):
    return f"layer{i:04d}.act"


def train(out_dir):
    lib = ns.load(os.path.join(build, "sdk", "libnanscope.so"))
    acts = [np.full(16, 0.5, dtype=np.float32) for _ in range(SLOTS)]
    with ns.Session(out_dir, trainer="wide_mlp", folds=1, halt_on_nan=True, lib=lib) as s:
        ids = [s.slot(name(i), order=i, array=acts[i], phase="forward",
                      consumers=name(i + 1) if i + 1 < SLOTS else None) for i in range(SLOTS)]
        assert ids == list(range(SLOTS)), ids[:4]
        results = []
        with s.fold(0):
            for step in range(FIRE_STEP + 3):
                if step == FIRE_STEP:
                    acts[ENTRY][5] = np.nan
                    acts[LAST][0] = np.inf
                with s.step(step) as st:
                    s.check(ids)  # every slot in one call
                results.append(st.result)
                if st.result.halt:
                    break
    return results


def check_files(out_dir):
    results = train(out_dir)
    assert len(results) == FIRE_STEP + 1, f"halted after step {len(results) - 1}"
    for r in results[:FIRE_STEP]:
        assert (r.fired, r.entry_slot) == (0, -1), (r.fired, r.entry_slot)
    r = results[FIRE_STEP]
    assert (r.fired, r.first_fire, r.entry_slot, r.entry_step) == (1, 1, ENTRY, FIRE_STEP), \
        (r.fired, r.first_fire, r.entry_slot, r.entry_step)
    assert ns.HALTS[r.halt] == "halt_nan", r.halt

    run_file = os.path.join(out_dir, "run.h5")
    dump_name = f"fold000_step{FIRE_STEP:08d}_{name(ENTRY)}.h5"
    with h5py.File(run_file, "r") as f:
        assert f.attrs["trainer"] == "wide_mlp", dict(f.attrs)
        names = [n.decode() for n in f["slots"]["name"]]
        assert names == [name(i) for i in range(SLOTS)], names[:3]
        pairs = f["slots_consumers"][:]
        assert pairs.shape == (SLOTS - 1, 2), pairs.shape
        assert all(int(a) + 1 == int(b) for a, b in pairs), pairs[:3]
        for dataset in ("folds/flags", "folds/state", "folds/first_step", "folds/count"):
            assert f[dataset].shape == (1, SLOTS), (dataset, f[dataset].shape)
        assert list(f["folds/entry_slot"][:]) == [ENTRY]
        assert f["folds/first_step"][0][ENTRY] == FIRE_STEP
        assert f["folds/count"][0][ENTRY] == 1 and f["folds/count"][0][LAST] == 1
        flags = f["steps/flags"][:]
        assert flags.shape == (FIRE_STEP + 1, SLOTS), flags.shape
        assert flags[:FIRE_STEP].sum() == 0
        fired = {int(i): int(flags[FIRE_STEP][i]) for i in np.nonzero(flags[FIRE_STEP])[0]}
        assert fired == {ENTRY: 1, LAST: 2}, fired  # 1 NaN, 2 +Inf
        assert f["steps/checked"][:].all(), "every slot checked at every step"
        assert f.attrs["schema_version"] == 3
        kept = list(f["steps/health_step"][:])
        expect = sorted({s for s in range(0, FIRE_STEP + 1, STRIDE)} |
                        set(range(FIRE_STEP - WINDOW + 1, FIRE_STEP + 1)))
        assert kept == expect, (kept[:8], expect[:8])
        health = f["steps/health"]
        assert health.shape == (len(kept), SLOTS, 11), health.shape
        fields = [x.decode() if isinstance(x, bytes) else x for x in health.attrs["fields"]]
        assert health[0][1234][fields.index("mean")] == 0.5
        assert health[kept.index(FIRE_STEP)][ENTRY][fields.index("nonfinite")] == 1
        kinds = [k.decode() for k in f["events"]["kind"]]
        assert kinds == ["first_fire", "halt_nan"], kinds
        dump = f["events"]["dump"][0].decode()
        assert dump == "dumps/" + dump_name, dump
    with h5py.File(os.path.join(out_dir, "dumps", dump_name), "r") as d:
        assert set(d["slots"].keys()) == {name(ENTRY), name(LAST)}, list(d["slots"].keys())
        assert math.isnan(d["slots"][name(ENTRY)][5])
        assert d["flags"].shape == (SLOTS,), d["flags"].shape
        assert len(d["trainer_slots"]) == SLOTS
    return run_file, os.path.join(out_dir, "dumps", dump_name)


def check_tools(run_file, dump):
    run([run_tool, "validate", run_file])
    run([run_tool, "validate", dump])
    table = json.loads(run([run_tool, "compare", run_file, "--fold", "0", "--json"]))
    assert (table["step_a"], table["step_b"]) == (FIRE_STEP - 1, FIRE_STEP), table
    went = {row["name"] for row in table["rows"] if row["nonfinite_a"] == 0 and row["nonfinite_b"]}
    assert went == {name(ENTRY), name(LAST)}, went


def check_workbench(run_file):
    state = workbench_state(workbench, run_file, work, "wide")
    assert state["mode"] == "offline", state["mode"]
    assert state["trainer"] == "wide_mlp", state["trainer"]
    assert state["entry_frames"] == [dict(fold=0, slot=ENTRY, step=FIRE_STEP)], \
        state["entry_frames"]
    shown = state["folds"][0]["slots"]
    assert len(shown) == SLOTS, len(shown)
    assert state["slot_table_rows"] == SLOTS and state["step_grid"]["rows"] == SLOTS, \
        (state["slot_table_rows"], state["step_grid"]["rows"])
    assert shown[ENTRY]["state"] == "fired" and "nan" in shown[ENTRY]["kinds"], shown[ENTRY]
    assert shown[LAST]["state"] == "fired" and "posinf" in shown[LAST]["kinds"], shown[LAST]
    assert sum(s["state"] == "fired" for s in shown) == 2
    assert os.path.getsize(os.path.join(work, "wide.png")) > 0


try:
    run_file, dump = check_files(os.path.join(work, "run"))
    check_tools(run_file, dump)
    check_workbench(run_file)
    print(f"{SLOTS} slots: fired at step {FIRE_STEP} (entry {name(ENTRY)}), dumped, halted; "
          "the run file and the dump read in h5py, nanscope-run and the workbench")
finally:
    if os.environ.get("NANSCOPE_KEEP_WIDE"):
        print("kept", work)
    else:
        shutil.rmtree(work, ignore_errors=True)
