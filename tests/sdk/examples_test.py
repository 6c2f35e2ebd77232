#!/usr/bin/env python3
"""The SDK's three example trainers, as their users run them: each with its bug on and off.

For each run: the trainer's own report; the run file read by h5py (the trainer's slot table); the
workbench opening it offline (its state JSON: the entry frame the bug implies, the absent slot, no
fire without the bug); `nanscope-run validate` on the run file and the first-fire dump;
`nanscope-run compare --json` naming the entry slot among the slots that went non-finite.

    examples_test.py BUILD_DIR SOURCE_DIR {c|rust|python}
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import h5py

build, source, which = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2]), sys.argv[3]
lib_dir = os.path.join(build, "sdk")
run_tool = os.path.join(build, "cli", "nanscope-run")
workbench = os.path.join(build, "gui", "nanscope")
work = tempfile.mkdtemp(prefix=f"nanscope_sdk_{which}_")
# The Python example imports nanscope.sdk from the source tree's package, as docs/sdk.md says.
os.environ["PYTHONPATH"] = os.path.join(source, "python")

# What each bug implies: the fold and step the NaN or Inf enters, the slot it enters in, its
# kind, and the slot registered absent.
EXPECT = {
    "c": dict(trainer="c_mlp", fold=1, step=20, slot="x_norm", kind="nan", absent="dropout_mask"),
    "rust": dict(trainer="rust_trainer", fold=1, step=10, slot="probs", kind="nan", absent="iqn_tau"),
    "python": dict(trainer="train_numpy", fold=2, step=15, slot="log_p", kind="neginf",
                   absent="class_weights"),
}[which]


def run(cmd, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600, **kw)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} exited {p.returncode}:\n{p.stdout}\n{p.stderr}")
    return p.stdout


def trainer_command():
    if which == "c":
        return [os.path.join(build, "examples", "c_mlp", "c_mlp")]
    if which == "python":
        return ["/usr/bin/python3", os.path.join(source, "examples", "python", "train_numpy.py"),
                "--lib", os.path.join(lib_dir, "libnanscope.so")]
    # Rust: Debian's cargo and rustc, offline (the crate has no dependency), out of the source tree.
    env = dict(os.environ, NANSCOPE_LIB_DIR=lib_dir, CARGO_TARGET_DIR=os.path.join(work, "target"),
               PATH="/usr/bin:/bin", CARGO_HOME=os.path.join(work, "cargo-home"))
    run(["/usr/bin/cargo", "build", "--release", "--offline", "--quiet",
         "--manifest-path", os.path.join(source, "examples", "rust", "Cargo.toml")], env=env)
    return [os.path.join(work, "target", "release", "rust_trainer")]


def check_run(bug):
    out_dir = os.path.join(work, "bug" if bug else "clean")
    report = run(trainer_command() + [out_dir] + (["--bug"] if bug else []))
    lines = report.strip().splitlines()
    assert len(lines) == 3, report  # three folds

    with h5py.File(os.path.join(out_dir, "run.h5"), "r") as f:
        assert f.attrs["trainer"] == EXPECT["trainer"], dict(f.attrs)
        names = [n.decode() for n in f["slots"]["name"]]
        assert f["folds/flags"].shape == (3, len(names)), f["folds/flags"].shape
        entry_index = names.index(EXPECT["slot"])
        absent_index = names.index(EXPECT["absent"])
        assert all(f["folds/state"][k][absent_index] == 2 for k in range(3)), "absent slot"
        entries = list(f["folds/entry_slot"][:])

    expected_entries = [-1, -1, -1]
    if bug:
        expected_entries[EXPECT["fold"]] = entry_index
    assert entries == expected_entries, (entries, expected_entries)
    fold_line = lines[EXPECT["fold"]]
    if bug:
        assert f"entry slot {entry_index} at step {EXPECT['step']}" in fold_line, report
    else:
        assert all(line.endswith("clean") for line in lines), report

    # The workbench, offline, on the trainer's run file.
    state_path = os.path.join(work, f"state_{bug}.json")
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", XDG_RUNTIME_DIR=work)
    run([workbench, os.path.join(out_dir, "run.h5"), "--state-json", state_path,
         "--screenshot", os.path.join(work, f"shot_{bug}.png")], env=env)
    state = json.load(open(state_path))
    assert state["mode"] == "offline", state["mode"]
    assert state["trainer"] == EXPECT["trainer"], state["trainer"]
    assert f"trainer {EXPECT['trainer']}" in state["window_title"], state["window_title"]
    assert len(state["folds"]) == 3
    for fold in state["folds"]:
        shown = {s["index"]: s for s in fold["slots"]}
        assert shown[absent_index]["state"] == "absent", shown[absent_index]
    if bug:
        assert state["entry_frames"] == [dict(fold=EXPECT["fold"], slot=entry_index,
                                              step=EXPECT["step"])], state["entry_frames"]
        fired = state["folds"][EXPECT["fold"]]["slots"][entry_index]
        assert fired["state"] == "fired" and EXPECT["kind"] in fired["kinds"], fired
        first = [e for e in state["events"] if e["kind"] == "first_fire"]
        assert len(first) == 1 and first[0]["slot"] == entry_index, state["events"]
        dump = first[0]["dump"]
        assert os.path.basename(dump) == \
            f"fold{EXPECT['fold']:03d}_step{EXPECT['step']:08d}_{EXPECT['slot']}.h5", dump
        run([run_tool, "validate", dump])
        # compare: the step before the entry against the entry's step.
        table = json.loads(run([run_tool, "compare", os.path.join(out_dir, "run.h5"),
                                "--fold", str(EXPECT["fold"]), "--json"]))
        assert (table["step_a"], table["step_b"]) == (EXPECT["step"] - 1, EXPECT["step"]), table
        went = {r["name"] for r in table["rows"] if r["nonfinite_a"] == 0 and r["nonfinite_b"]}
        assert EXPECT["slot"] in went, went
    else:
        assert state["entry_frames"] == [], state["entry_frames"]
        assert all(s["state"] != "fired" for fold in state["folds"] for s in fold["slots"])
    run([run_tool, "validate", os.path.join(out_dir, "run.h5")])


try:
    check_run(bug=True)
    check_run(bug=False)
    print(f"sdk example {which}: the bug's entry {EXPECT['slot']} at fold {EXPECT['fold']} step "
          f"{EXPECT['step']} in the trainer's report, its run file, the workbench and compare; "
          "clean without the bug")
finally:
    shutil.rmtree(work, ignore_errors=True)
