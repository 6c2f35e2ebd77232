#!/usr/bin/env python3
"""The slots' consumers through nanscope-run, at the default size: each injection of the slot
consumer issue fires, at its step, exactly the closure of docs/slots.md's consumers column, and a
dump made when the batch fires (the corrupt-bar scenario, no injection) replays to its own step.

usage: check_propagation.py NANSCOPE_RUN SOURCE_DIR [--backend cpu|cuda] [--graph on|off]
Prints one line per check and exits 1 if any fails (77 with --backend cuda and no device).
"""
import argparse
import glob
import json
import re
import subprocess
import sys
import tempfile

# (injection, the step it is made at); the run halts after that step (--until-fire)
INJECTIONS = ["slot:iqn_cos_features@0:2:nan:5", "slot:iqn_phi@0:2:nan:5", "slot:cql_lse@0:2:nan:3",
              "slot:grad_norm@0:2"]


def documented_consumers(source_dir, slot_count):
    consumers = {}
    row = re.compile(r"^\| (\d+) \| `[^`]+` \|.*\| ([0-9, ]+|none) \|$")
    with open(f"{source_dir}/docs/slots.md") as f:
        for line in f:
            m = row.match(line.rstrip("\n"))
            if m:
                consumers[int(m[1])] = [] if m[2] == "none" else [int(x) for x in m[2].split(",")]
    assert len(consumers) == slot_count, f"docs/slots.md: {len(consumers)} slot rows, not {slot_count}"
    return consumers


def closure(slot, consumers, present):
    reached, frontier = {slot}, [slot]
    while frontier:
        nxt = [c for s in frontier for c in consumers[s] if c not in reached]
        reached.update(nxt)
        frontier = nxt
    return sorted(s for s in reached if s in present)


def run(binary, args):
    p = subprocess.run([binary] + args, capture_output=True, text=True)
    if p.returncode == 69:
        print("no usable CUDA device: skipped")
        sys.exit(77)
    return p


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("source_dir")
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--graph", default=None)
    a = ap.parse_args()
    listed = subprocess.run([a.binary, "--list-slots"], capture_output=True, text=True, check=True)
    consumers = documented_consumers(a.source_dir, len(listed.stdout.strip().splitlines()))
    mode = ["--backend", a.backend] + (["--graph", a.graph] if a.graph else [])
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for i, spec in enumerate(INJECTIONS):
            step = int(spec.split("@")[1].split(":")[1])
            p = run(a.binary, ["--steps-per-fold", "4", "--folds", "1", "--until-fire", "--set",
                               "sentinel.undefer=[31]", "--inject", spec, "--json", "--quiet",
                               "--out", f"{tmp}/inj{i}"] + mode)
            summary = json.loads(p.stdout)
            slots = summary["folds"][0]["slots"]
            present = {s["index"] for s in slots if s["state"] != "absent"}
            fired = sorted(s["index"] for s in slots if s["state"] == "fired" and s["first_step"] == step)
            name = spec.split("@")[0][len("slot:"):]
            index = next(s["index"] for s in slots if s["name"] == name)
            want = closure(index, consumers, present)
            ok = fired == want
            failed += not ok
            print(f"{'ok  ' if ok else 'FAIL'} {spec} on {summary['backend']}: fired {fired}"
                  + ("" if ok else f", documented closure {want}"))

        p = run(a.binary, ["--scenario", "corrupt-bar", "--until-fire", "--json", "--quiet",
                           "--out", f"{tmp}/bar"] + mode)
        summary = json.loads(p.stdout)
        dumps = sorted(glob.glob(f"{tmp}/bar/dumps/*.h5"))
        entry = summary["entry"]
        ok = entry is not None and entry["name"] == "batch" and len(dumps) == 1
        if ok:
            r = run(a.binary, ["replay", dumps[0], "--backend", a.backend, "--json"])
            replay = json.loads(r.stdout)
            equal = all(s["buffer_equal"] for s in replay["slots"])
            worst = max(s["buffer_rel_error"] or 0 for s in replay["slots"])
            ok = replay["verdict"] == "reproducible" and not replay["injections"] and \
                (equal or (a.backend == "cuda" and worst <= 1e-5))
            print(f"{'ok  ' if ok else 'FAIL'} corrupt-bar dump at step {entry['step']} replays on "
                  f"{replay['backend']}: {replay['verdict']}, {len(replay['slots'])} slots, "
                  f"{'equal (finite values bit for bit, every NaN and Inf in place)' if equal else f'max relative error {worst:.3g}'}")
        else:
            print(f"FAIL corrupt-bar: entry {entry}, dumps {dumps}")
        failed += not ok
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
