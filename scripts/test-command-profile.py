#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Where the README's test command spends its minutes.

Usage: scripts/test-command-profile.py BUILD_DIR [LOG]

Prints, from what the command leaves behind:
  - the phases (apt, configure, build, test) from LOG, the output of `scripts/nanscope test`
    ("nanscope: phase NAME SECONDS s" lines), when LOG is given;
  - compile seconds per top-level folder and the ten slowest objects, from BUILD_DIR/.ninja_log
    (the newest build's entries only: ninja appends, and a rebuilt object's last entry wins);
  - the ten slowest tests, from BUILD_DIR/Testing/Temporary/LastTest.log.

To profile a fresh clone: `scripts/profile-fresh-clone.sh`.
"""
import collections
import os
import re
import sys


BUILD = "."


def phases(log_path):
    with open(log_path, errors="replace") as log:
        return [(m.group(1), float(m.group(2)))
                for m in re.finditer(r"^nanscope: phase (\S+) ([0-9.]+) s$", log.read(), re.M)]


def ninja_entries(build):
    """(seconds, output) of each build step's last run, as .ninja_log v5 records them: one line per
    output, so a step with several outputs (moc's, a link's) is counted once, under its first."""
    last = {}
    steps = {}
    with open(os.path.join(build, ".ninja_log")) as log:
        for line in log:
            if line.startswith("#"):
                continue
            start, end, _mtime, output, command_hash = line.rstrip("\n").split("\t")
            step = (start, end, command_hash)
            steps.setdefault(step, output)
            last[steps[step]] = (int(end) - int(start)) / 1000.0
    return [(secs, out) for out, secs in last.items()]


def folder_of(output):
    """The source folder an output belongs to: engine, gui, tests, bench, cuda, ..."""
    parts = os.path.relpath(output, BUILD).split("/") if output.startswith("/") else output.split("/")
    return parts[0] if len(parts) > 1 else "(top)"


def slowest_tests(build):
    path = os.path.join(build, "Testing", "Temporary", "LastTest.log")
    if not os.path.exists(path):
        return []
    times = []
    name = None
    # Each test's block starts with "N/M Testing: NAME" and ends with "Test time =   S sec".
    for line in open(path, errors="replace"):
        testing = re.match(r"\d+/\d+ Testing: (\S+)", line)
        if testing:
            name = testing.group(1)
        ended = re.match(r'"?Test time = +([0-9.]+) sec', line)
        if ended and name:
            times.append((float(ended.group(1)), name))
            name = None
    return sorted(times, reverse=True)


def main():
    if len(sys.argv) not in (2, 3):
        print(__doc__, file=sys.stderr)
        return 2
    global BUILD
    build = BUILD = os.path.abspath(sys.argv[1])
    if len(sys.argv) == 3:
        print("phases of the test command (wall seconds):")
        for name, secs in phases(sys.argv[2]):
            print(f"  {name:<10} {secs:8.1f}")
    entries = ninja_entries(build)
    objects = [(s, o) for s, o in entries if o.endswith(".o")]
    per_folder = collections.Counter()
    for secs, out in entries:
        per_folder[folder_of(out)] += secs
    print(f"build steps: {len(entries)}, {sum(s for s, _ in entries):.0f} s of work "
          f"({sum(s for s, _ in objects):.0f} s compiling {len(objects)} objects)")
    print("work per folder (s):")
    for folder, secs in per_folder.most_common():
        print(f"  {folder:<16} {secs:8.1f}")
    print("ten slowest objects (s):")
    for secs, out in sorted(objects, reverse=True)[:10]:
        print(f"  {secs:7.1f}  {out}")
    tests = slowest_tests(build)
    if tests:
        print(f"tests: {len(tests)}, {sum(s for s, _ in tests):.0f} s in all; ten slowest (s):")
        for secs, name in tests[:10]:
            print(f"  {secs:7.1f}  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
