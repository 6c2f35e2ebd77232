"""The PyTorch peer of bench/sentinel's sentinel_set: torch._amp_foreach_non_finite_check_and_unscale_
over tensors of the same element counts (one per line of the shapes file), eager and captured in a
CUDA graph; medians of CUDA-event timings. Run on the GPU machine in the same session, after
bench_sentinel, whose times (SHAPES.us: the step's check launches, then every checked slot in one
launch) it compares against: target >= 2.5x faster for the first."""
import os
import sys

import torch

counts = [int(line) for line in open(sys.argv[1]) if line.strip()]
tensors = [torch.randn(c, device="cuda") for c in counts]
found = torch.zeros(1, device="cuda")
inv = torch.ones(1, device="cuda")


def check():
    torch._amp_foreach_non_finite_check_and_unscale_(tensors, found, inv)


def median_us(fn, reps):
    for _ in range(10):
        fn()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1e3)
    times.sort()
    return times[len(times) // 2]


eager = median_us(check, 500)
g = torch.cuda.CUDAGraph()
s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    check()
torch.cuda.current_stream().wait_stream(s)
with torch.cuda.graph(g):
    check()
graphed = median_us(g.replay, 500)
print(f"torch {torch.__version__} on {torch.cuda.get_device_name()}: "
      f"_amp_foreach_non_finite_check_and_unscale_ over {len(counts)} tensors, {sum(counts)} floats: "
      f"eager {eager:.1f} us, graphed {graphed:.1f} us")
us_file = sys.argv[1] + ".us"
if os.path.exists(us_file):
    # bench_sentinel's figures: the step's check launches, then every checked slot in one launch.
    ours = [float(line) for line in open(us_file) if line.strip()]
    ratio = graphed / ours[0]
    print(f"sentinel_set: nanscope {ours[0]:.2f} us vs torch graphed {graphed:.2f} us: {ratio:.2f}x faster "
          f"(target >= 2.5x: {'met' if ratio >= 2.5 else 'NOT met'})")
    if len(ours) > 1:
        print(f"sentinel_set, every checked slot's buffer in one nanscope launch (the same bytes as torch reads): "
              f"{ours[1]:.2f} us, {graphed / ours[1]:.2f}x faster")
