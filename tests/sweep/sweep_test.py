#!/usr/bin/python3
"""Sweeps on a real one-node Slurm and locally (docs/sweeps.md).

Brings up Slurm from Debian's packages (tests/sweep/slurm_fixture.sh), submits a 6-task array
sweep on the CPU backend at a small size (two variants with an injection that fires, one without,
two seeds each), waits for it, and checks `sweep status --json` against each task's own `--json`
run summary on every task and fold. Then runs the same spec with the local scheduler: the same
results; a task killed with -9 shows as failed with its reason, and the rest of the sweep is
unaffected. A Slurm that does not start fails the test (it is never skipped).

The workbench's sweep view (its state JSON, offscreen) must say the same of the Slurm sweep.

Usage: sweep_test.py NANSCOPE_RUN SOURCE_DIR WORK_DIR [NANSCOPE_GUI]
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import time

run, src, work = sys.argv[1], sys.argv[2], sys.argv[3]
gui = sys.argv[4] if len(sys.argv) > 4 else None
fixture = os.path.join(src, "tests", "sweep", "slurm_fixture.sh")
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what, flush=True)


SMALL = ["data.bars=600", "model.batch=16", "model.hidden=16", "model.bottleneck=8",
         "model.iqn_n=4", "model.iqn_n_target=4", "model.iqn_k=4", "model.iqn_cos=8",
         "model.aux_hidden=8", "run.folds=3", "run.steps_per_fold=8", "halt.on_fire=never"]


def spec(path, extra_variant=""):
    sets = ", ".join('"%s"' % s for s in SMALL)
    with open(path, "w") as f:
        f.write(f"""[sweep]
name = "ci"
seeds = [3, 4]
backend = "cpu"
set = [{sets}]

[[variant]]
name = "h_s2-nan"
inject = ["slot:h_s2@1:5"]

[[variant]]
name = "c51-posinf"
inject = ["slot:c51_loss@2:2:posinf"]

[[variant]]
name = "clean"
{extra_variant}
[slurm]
time = "00:10:00"
concurrency = 3
""")


def status(d):
    out = subprocess.run([run, "sweep", "status", d, "--json"], capture_output=True, text=True)
    check(out.returncode == 0, f"sweep status {d} exited {out.returncode}: {out.stderr}")
    return json.loads(out.stdout)


def wait_done(d, timeout):
    end = time.time() + timeout
    while time.time() < end:
        s = status(d)["summary"]
        if s["running"] == 0 and s["pending"] == 0:
            return True
        time.sleep(1)
    return False


def expected_from_summaries(d):
    """Each task's own --json summary: per fold its entry (slot, step) or clean."""
    st = status(d)
    for t in st["tasks"]:
        path = os.path.join(d, "tasks", t["name"], "summary.json")
        with open(path) as f:
            summary = json.load(f)
        check(t["state"] == "done", f"{t['name']}: state {t['state']} ({t['reason']})")
        check(t["exit_code"] == (1 if summary["entry"] else 0),
              f"{t['name']}: exit {t['exit_code']} against the summary's entry {summary['entry']}")
        folds = summary["folds"]
        check(len(folds) == len(t["folds"]), f"{t['name']}: {len(t['folds'])} folds, summary {len(folds)}")
        for mine, theirs in zip(t["folds"], folds):
            entry = theirs.get("entry")
            if entry:
                check(mine["state"] == "fired" and mine["entry_slot"] == entry["slot"]
                      and mine["entry_step"] == entry["step"],
                      f"{t['name']} fold {mine['fold']}: {mine} against {entry}")
            else:
                check(mine["state"] in ("clean", "warned"),
                      f"{t['name']} fold {mine['fold']}: {mine['state']} against a clean summary")
        want = summary["entry"]
        got = t["entry"]
        check((want is None and got is None) or
              (got and want and got["slot"] == want["slot"] and got["fold"] == want["fold"]
               and got["step"] == want["step"]),
              f"{t['name']}: entry {got} against {want}")
    return st


def outcome(st):
    return {t["name"]: (t["state"], t["exit_code"], json.dumps(t["entry"]),
                        [(f["state"], f["entry_slot"], f["entry_step"]) for f in t["folds"]])
            for t in st["tasks"]}


spec_file = os.path.join(work, "spec.toml")
spec(spec_file)
slurm_work = os.path.join(work, "slurm")
up = subprocess.run([fixture, "start", slurm_work], capture_output=True, text=True)
if up.returncode != 0:
    print(up.stderr)
    print("sweep_test: Slurm did not start: this is a failure, not a skip")
    sys.exit(1)
os.environ["SLURM_CONF"] = os.path.join(slurm_work, "slurm.conf")
try:
    d = os.path.join(work, "on_slurm")
    sub = subprocess.run([run, "sweep", spec_file, "--scheduler", "slurm", "--out", d],
                         capture_output=True, text=True)
    check(sub.returncode == 0, f"sweep --scheduler slurm exited {sub.returncode}: {sub.stderr}")
    check(os.path.exists(os.path.join(d, "slurm_job")), "no slurm_job file")
    with open(os.path.join(d, "sweep.sbatch")) as f:
        script = f.read()
    check("#SBATCH --array=0-5%3" in script, "the array line with the concurrency limit")
    check("#SBATCH --time=00:10:00" in script, "the time limit passed through")
    check(wait_done(d, 300), "the Slurm sweep did not finish in 300 s")
    slurm_status = expected_from_summaries(d)
    s = slurm_status["summary"]
    check((s["fired"], s["clean"], s["failed"]) == (4, 2, 0), f"Slurm summary {s}")
    if gui:  # the sweep view: the same tasks, states and folds
        state = os.path.join(work, "view.json")
        env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
        v = subprocess.run([gui, d, "--screenshot", os.path.join(work, "view.png"),
                            "--screenshot-after", "steps:0", "--state-json", state],
                           capture_output=True, text=True, env=env, timeout=120)
        check(v.returncode == 0, f"the workbench on the sweep exited {v.returncode}: {v.stderr}")
        with open(state) as f:
            view = json.load(f)["sweep"]
        for mine, theirs in zip(view["tasks"], slurm_status["tasks"]):
            check(mine["name"] == theirs["name"] and mine["state"] == theirs["state"]
                  and mine["outcome"] == theirs["outcome"]
                  and [(x["state"], x["entry_slot"], x["entry_step"]) for x in mine["folds"]]
                  == [(x["state"], x["entry_slot"], x["entry_step"]) for x in theirs["folds"]],
                  f"the sweep view's {mine['name']} against sweep status: {mine} / {theirs}")
    text = subprocess.run([run, "sweep", "status", d], capture_output=True, text=True).stdout
    check(text.strip().splitlines()[-1] == "2 clean, 4 fired, 0 warned, 0 failed, 0 running",
          f"the summary line: {text.strip().splitlines()[-1]!r}")
finally:
    subprocess.run([fixture, "stop", slurm_work])

# The local scheduler: the same spec, the same results.
d = os.path.join(work, "local")
loc = subprocess.run([run, "sweep", spec_file, "--out", d, "--jobs", "2", "--quiet"],
                     capture_output=True, text=True)
check(loc.returncode == 0, f"local sweep exited {loc.returncode}: {loc.stderr}")
local_status = expected_from_summaries(d)
check(outcome(local_status) == outcome(slurm_status), "the local sweep's results differ from Slurm's")

# A task killed with -9 fails with its reason; the rest of the sweep is unaffected.
slow = os.path.join(work, "slow.toml")
spec(slow, extra_variant='set = ["run.steps_per_fold=60", "model.hidden=256", "model.batch=256"]\n')
d = os.path.join(work, "killed")
p = subprocess.Popen([run, "sweep", slow, "--out", d, "--jobs", "2", "--quiet"])
victim = os.path.join(d, "tasks", "clean-seed3", "started")
end = time.time() + 120
while not os.path.exists(victim) and time.time() < end:
    time.sleep(0.1)
time.sleep(0.5)
with open(victim) as f:  # `KEY VALUE` lines: pid, host
    pid = int(dict(line.split(" ", 1) for line in f.read().splitlines())["pid"])
os.kill(pid, signal.SIGKILL)
check(p.wait(timeout=600) == 1, "a sweep with a failed task exits 1")
st = status(d)
by = {t["name"]: t for t in st["tasks"]}
check(by["clean-seed3"]["state"] == "failed" and "signal 9" in by["clean-seed3"]["reason"],
      f"the killed task: {by['clean-seed3']}")
for name in ("h_s2-nan-seed3", "h_s2-nan-seed4", "c51-posinf-seed3", "c51-posinf-seed4"):
    check(outcome(st)[name] == outcome(local_status)[name], f"{name} after the kill: {by[name]}")
check(st["summary"]["failed"] == 1, f"one failed: {st['summary']}")

if failures:
    print(f"sweep_test: {len(failures)} failures")
    sys.exit(1)
print("sweep_test: Slurm ran the 6-task sweep, status agrees with every task's summary on every "
      "fold; the local scheduler gives the same; a task killed with -9 fails alone")
