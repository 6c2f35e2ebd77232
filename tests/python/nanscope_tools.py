"""What the Python tests share: a program run that must succeed, and the workbench's state JSON of
a file it opened offscreen (what the window shows, with a screenshot beside it)."""
import json
import os
import subprocess
import sys


def run(cmd, timeout=300, **kw):
    """`cmd`'s standard output; the test ends, printing both outputs, when it exits non-zero."""
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} exited {p.returncode}:\n{p.stdout}\n{p.stderr}")
    return p.stdout


def workbench_state(workbench, path, work, tag=None):
    """The workbench, offscreen, on `path`: its state JSON (and `tag`.png in `work`)."""
    tag = tag or os.path.basename(path)
    state = os.path.join(work, tag + ".json")
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", XDG_RUNTIME_DIR=work)
    run([workbench, path, "--state-json", state, "--screenshot", os.path.join(work, tag + ".png")],
        env=env)
    with open(state) as f:
        return json.load(f)
