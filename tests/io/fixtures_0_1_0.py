#!/usr/bin/env python3
"""The files nanscope 0.1.0 wrote (tests/data/v0.1.0/) open unchanged in the CLI and the workbench.

Each run file: `nanscope-run validate`, and the workbench offscreen shows it offline with its
trainer, folds and entry point. Each dump: validated, and the workbench's inspector shows its entry
slot by the dump's own slot name (an SDK trainer's, not nanscope's).

    fixtures_0_1_0.py BUILD_DIR SOURCE_DIR
"""
import os
import shutil
import subprocess
import sys
import tempfile

build, source = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
sys.path.insert(0, os.path.join(source, "tests", "python"))
from nanscope_tools import run, workbench_state  # noqa: E402

fixtures = os.path.join(source, "tests", "data", "v0.1.0")
run_tool = os.path.join(build, "cli", "nanscope-run")
workbench = os.path.join(build, "gui", "nanscope")
work = tempfile.mkdtemp(prefix="nanscope_fixtures_")

# file: (trainer, slots, folds, each fold's entry as (fold, slot, step): /folds/entry_slot and its
# /folds/first_step) for run files; the entry slot's label for dumps. nanscope's own files show
# nanscope's table today (its 36 slots of 0.1.0 and the later ones, absent in those runs).
BUILTIN_SLOTS = len(subprocess.run([run_tool, "--list-slots"], capture_output=True, text=True,
                                   check=True).stdout.strip().splitlines())
RUNS = {
    "run_schema1.h5": ("nanscope", BUILTIN_SLOTS, 2, [(0, 1, 1), (1, 18, 2)]),
    "run_schema1_watches.h5": ("nanscope", BUILTIN_SLOTS, 2, [(1, 1, 1)]),
    "run_schema2_checkpoints.h5": ("nanscope", BUILTIN_SLOTS, 2, [(1, 2, 1)]),
    "run_schema2_cuda.h5": ("nanscope", BUILTIN_SLOTS, 2, [(1, 2, 5)]),
    "sdk_run.h5": ("c_mlp", 11, 2, [(1, 1, 20)]),
}
DUMPS = {"dump.h5": "18 aux_loss", "sdk_dump.h5": "1 x_norm"}


try:
    assert sorted(os.listdir(fixtures)) == sorted(list(RUNS) + list(DUMPS)), os.listdir(fixtures)
    for name, (trainer, slots, folds, frames) in RUNS.items():
        path = os.path.join(fixtures, name)
        run([run_tool, "validate", path])
        s = workbench_state(workbench, path, work)
        assert s["mode"] == "offline" and s["trainer"] == trainer, (name, s["mode"], s["trainer"])
        assert len(s["folds"]) == folds, (name, len(s["folds"]))
        assert s["slot_table_rows"] == slots and s["step_grid"]["rows"] == slots, \
            (name, s["slot_table_rows"], s["step_grid"]["rows"])
        got = sorted((f["fold"], f["slot"], f["step"]) for f in s["entry_frames"])
        assert got == sorted(frames), (name, got)
    for name, label in DUMPS.items():
        path = os.path.join(fixtures, name)
        run([run_tool, "validate", path])
        s = workbench_state(workbench, path, work)
        inspector = s["inspector"]
        assert inspector["source"] == "dump" and inspector["nan"] + inspector["posinf"] > 0, \
            (name, inspector)
        assert f"slot {label}" in inspector["summary"], (name, inspector["summary"])
    print(f"{len(RUNS)} run files and {len(DUMPS)} dumps of nanscope 0.1.0 open in nanscope-run "
          "and the workbench")
finally:
    shutil.rmtree(work, ignore_errors=True)
