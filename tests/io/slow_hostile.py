#!/usr/bin/env python3
"""Damaged files are answered within seconds: each file of tests/data/slow-hostile/ (README.md there
says what each once cost) is refused (78) or opened (0) within 5 s, through the command that was slow.

usage: slow_hostile.py SOURCE_DIR OUT_DIR NANSCOPE_RUN [NANSCOPE]
  Without NANSCOPE (a build without the workbench) only the replay is checked.
"""
import os
import subprocess
import sys
import time

LIMIT_S = 5.0


def answer(command, env=None):
    began = time.monotonic()
    try:
        p = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env,
                           timeout=120)
        code, err = p.returncode, p.stderr.decode(errors="replace").strip()
    except subprocess.TimeoutExpired:
        code, err = "hang", ""
    return code, time.monotonic() - began, err


def main():
    if len(sys.argv) not in (4, 5):
        print(__doc__)
        return 2
    source, out_dir, run_binary = sys.argv[1:4]
    workbench = sys.argv[4] if len(sys.argv) == 5 else None
    data = os.path.join(source, "tests", "data", "slow-hostile")
    os.makedirs(out_dir, exist_ok=True)
    checks = [("replay-60s.h5", [run_binary, "replay", "{}", "--backend", "cpu", "--json"])]
    if workbench:
        for name in ("gui-open-26s.h5", "gui-open-41s.h5"):
            checks.append((name, [workbench, "{}", "--out-root", os.path.join(out_dir, "runs"),
                                  "--screenshot", os.path.join(out_dir, name + ".png"),
                                  "--screenshot-after", "steps:0"]))
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    failed = []
    for name, command in checks:
        path = os.path.join(data, name)
        code, seconds, err = answer([path if a == "{}" else a for a in command], env)
        print(f"{name}: exit {code} after {seconds:.1f} s {err[-200:]}")
        if code not in (0, 78):
            failed.append(f"{name}: exit {code} (refused 78 or opened 0 expected)")
        if seconds > LIMIT_S:
            failed.append(f"{name}: answered after {seconds:.1f} s, more than {LIMIT_S:.0f} s")
    for f in failed:
        print("FAILED:", f)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
