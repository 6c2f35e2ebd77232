"""Where a CUDA step's time goes, kernel by kernel, from an ncu CSV of `bench_cuda_step profile`:

    ncu --csv --metrics gpu__time_duration.sum --launch-skip 2500 --launch-count 1000 \\
        bench_cuda_step profile > prof.csv
    python3 bench/kernel_profile.py prof.csv

Sums each kernel's duration over the profiled launches and divides by the number of steps they
cover (counted from advance_t, the optimizer's one-thread kernel that runs once per step). ncu
serialises kernels and flushes caches between them, so these are isolated kernel times, not the
graph's overlapped timeline: they show where the work is, not the step's wall time."""
import csv
import io
import re
import sys
from collections import defaultdict

text = open(sys.argv[1]).read()
start = text.find('"ID"')
rows = list(csv.DictReader(io.StringIO(text[start:])))
per_kernel = defaultdict(lambda: [0.0, 0])
for r in rows:
    if r.get("Metric Name") != "gpu__time_duration.sum":
        continue
    name = r["Kernel Name"].split("(")[0]
    while re.search(r"<[^<>]*>", name):
        name = re.sub(r"<[^<>]*>", "", name)
    name = name.split("::")[-1]
    v = float(r["Metric Value"].replace(",", ""))
    us = v * {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3}[r["Metric Unit"]]
    per_kernel[name][0] += us
    per_kernel[name][1] += 1
steps = per_kernel.get("advance_t", [0, 0])[1] or 1
total = sum(t for t, _ in per_kernel.values())
print(f"{len(rows)} launches profiled, {steps} steps; kernel time per step {total / steps:.1f} us")
print(f"{'kernel':<44} {'us/step':>9} {'launches/step':>14} {'share':>6}")
for name, (t, n) in sorted(per_kernel.items(), key=lambda kv: -kv[1][0]):
    print(f"{name[:44]:<44} {t / steps:9.1f} {n / steps:14.1f} {100 * t / total:5.1f}%")
