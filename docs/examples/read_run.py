"""Read a nanscope run directory with h5py: the slot x fold grid, the entry point, the dumps."""
import sys

import h5py
import numpy as np

run_dir = sys.argv[1] if len(sys.argv) > 1 else "runs/x"
with h5py.File(f"{run_dir}/run.h5", "r") as run:
    names = [n.decode() for n in run["slots"]["name"]]
    state = run["folds/state"][()]          # [folds, 37]: 0 clean 1 fired 2 absent 3 deferred 4 disabled
    for fold, entry in enumerate(run["folds/entry_slot"][()]):
        fired = [names[i] for i in np.flatnonzero(state[fold] == 1)]
        print(f"fold {fold}: entry {names[entry] if entry >= 0 else '-'}; fired {fired}")
    for ev in run["events"]:
        if ev["dump"]:
            dump_path = f"{run_dir}/{ev['dump'].decode()}"
            with h5py.File(dump_path, "r") as dump:
                entry = names[dump.attrs["entry_slot"]]
                buf = dump[f"slots/{entry}"]
                print(f"{ev['kind'].decode()} at fold {ev['fold']} step {ev['step']}: {entry} "
                      f"{buf.shape} nan={buf.attrs['nan_count']} first_bad={buf.attrs['first_bad_index']}")
