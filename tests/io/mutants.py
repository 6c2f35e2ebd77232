#!/usr/bin/env python3
"""Byte-flip mutants of a nanscope file, each handed to a command that must refuse or accept it
cleanly: exit 0 or a documented refusal (66, 78), never a signal, 70, 74 or a hang.

usage: mutants.py SEED_FILE COUNT SEED OUT_DIR -- COMMAND... {}
  SEED_FILE must be accepted (exit 0) first, or the script fails before making any mutant.
  Each mutant XORs 1-64 random bytes with random values, half of them in the first 4 KiB (where
  HDF5 keeps the superblock and the root group's metadata). `{}` in COMMAND is the mutant's path.
  Prints a line per outcome class and the files that failed; exit 1 if any mutant failed.
"""
import collections
import os
import random
import subprocess
import sys


def mutate(data, rng):
    b = bytearray(data)
    for _ in range(rng.randint(1, 64)):
        i = rng.randrange(min(4096, len(b))) if rng.random() < 0.5 else rng.randrange(len(b))
        b[i] ^= rng.randint(1, 255)
    return bytes(b)


def main():
    if "--" not in sys.argv:
        print(__doc__)
        return 2
    split = sys.argv.index("--")
    seed_file, count, seed, out_dir = sys.argv[1:split]
    command = sys.argv[split + 1:]
    data = open(seed_file, "rb").read()
    rng = random.Random(int(seed))
    os.makedirs(out_dir, exist_ok=True)
    # The seed itself must be accepted: were it refused, every mutant would be refused at the same
    # first check and the mutants would cover nothing beyond it.
    seed_run = subprocess.run([seed_file if a == "{}" else a for a in command], stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, timeout=120)
    if seed_run.returncode != 0:
        print(f"the seed file {seed_file} is not accepted (exit {seed_run.returncode}): "
              f"{seed_run.stderr.decode(errors='replace').strip()}")
        return 1
    outcomes = collections.Counter()
    failed = []
    for k in range(int(count)):
        path = os.path.join(out_dir, f"mutant_{k:04d}.h5")
        with open(path, "wb") as f:
            f.write(mutate(data, rng))
        cmd = [path if a == "{}" else a for a in command]
        try:
            p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=120)
            code = p.returncode
        except subprocess.TimeoutExpired:
            code = "hang"
        outcomes[code] += 1
        if code not in (0, 66, 78):
            failed.append((path, code))
        else:
            os.remove(path)
    for code, n in sorted(outcomes.items(), key=lambda x: str(x[0])):
        what = {0: "accepted", 66: "missing (66)", 78: "refused (78)"}.get(code, f"FAILED ({code})")
        print(f"{n:5d} {what}")
    for path, code in failed:
        print(f"failed: {path}: {code}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
