// bench/step_scaling: how the graphed step's cost grows with the batch and the hidden width. For
// each point of a grid (batch x hidden, the rest of the default config): the step graphed with
// every check on (median of blocks of steps), its GEMM work (floating-point operations counted as
// the step enqueues them) and so its FLOP rate, and cuBLAS SGEMM alone (the same pedantic fp32
// handle setup) on the step's largest GEMM shape, timed in the same run as a graph of back-to-back
// calls: the step's rate over that ceiling. Also the step graph's nodes, kernels and longest chain.
// bench/step_scaling.py adds the PyTorch twin at the same sizes.
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "core/config.h"
#include "cuda_backend.h"
#include "dense.h"
#include "device_array.h"
#include "session/session.h"
#include "test_seams.h"

#include "bench_util.h"
#include "session_timing.h"

using namespace nanscope;
using nanscope::bench::int_list;
using nanscope::bench::median;
using nanscope::bench::ms_per_step;
using Clock = std::chrono::steady_clock;

namespace {

// cuBLAS SGEMM alone on one shape: ms per call, median over blocks of `reps` calls captured in one
// graph (so that launch gaps count as they do in the step's graph).
double sgemm_ms(const cuda::GemmWork& g, int blocks = 7, int reps = 20) {
  cudaStream_t s = nullptr;
  NANSCOPE_CUDA_CHECK(cudaStreamCreate(&s));
  cuda::Blas blas(s);
  const std::size_t na = static_cast<std::size_t>(g.m) * g.k,
                    nb = static_cast<std::size_t>(g.k) * g.n,
                    nc = static_cast<std::size_t>(g.m) * g.n;
  cuda::DeviceArray<float> a(na), b(nb), c(nc);
  NANSCOPE_CUDA_CHECK(cudaMemsetAsync(a.get(), 0, na * 4, s));
  NANSCOPE_CUDA_CHECK(cudaMemsetAsync(b.get(), 0, nb * 4, s));
  NANSCOPE_CUDA_CHECK(cudaMemsetAsync(c.get(), 0, nc * 4, s));
  for (int i = 0; i < 3; ++i)
    blas.gemm(g.trans_a, g.trans_b, g.m, g.n, g.k, 1.f, a.get(), b.get(), 0.f, c.get());
  cudaGraph_t graph = nullptr;
  NANSCOPE_CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < reps; ++i)
    blas.gemm(g.trans_a, g.trans_b, g.m, g.n, g.k, 1.f, a.get(), b.get(), 0.f, c.get());
  NANSCOPE_CUDA_CHECK(cudaStreamEndCapture(s, &graph));
  cuda::GraphExec exec;
  exec.instantiate(graph);
  cudaGraphDestroy(graph);
  cudaEvent_t e0, e1;
  NANSCOPE_CUDA_CHECK(cudaEventCreate(&e0));
  NANSCOPE_CUDA_CHECK(cudaEventCreate(&e1));
  std::vector<double> t;
  NANSCOPE_CUDA_CHECK(cudaGraphLaunch(exec.get(), s));  // warm
  for (int i = 0; i < blocks; ++i) {
    NANSCOPE_CUDA_CHECK(cudaEventRecord(e0, s));
    NANSCOPE_CUDA_CHECK(cudaGraphLaunch(exec.get(), s));
    NANSCOPE_CUDA_CHECK(cudaEventRecord(e1, s));
    NANSCOPE_CUDA_CHECK(cudaEventSynchronize(e1));
    float ms = 0;
    NANSCOPE_CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
    t.push_back(static_cast<double>(ms) / reps);
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  cudaStreamDestroy(s);
  return median(t);
}

}  // namespace

// Usage: bench_step_scaling [BATCHES] [HIDDENS] [OUT]   (comma-separated lists; OUT receives one
// line per point: batch hidden ms_per_step gemm_gflop sgemm_ms m n k, for bench/step_scaling.py)
int main(int argc, char** argv) {
  const auto batches = int_list(argc > 1 ? argv[1] : "64,256,1024,4096");
  const auto hiddens = int_list(argc > 2 ? argv[2] : "128,512,2048");
  std::FILE* out = argc > 3 ? std::fopen(argv[3], "w") : nullptr;
  fmt::print(
      "bench step_scaling: the graphed step (every check on, slot health on) against cuBLAS SGEMM "
      "alone on the step's largest GEMM, same run\n");
  fmt::print("{:>6} {:>6} {:>10} {:>10} {:>9} {:>22} {:>10} {:>8} {:>6} {:>8} {:>8}\n", "batch",
             "hidden", "ms/step", "GEMM GFLOP", "TFLOP/s", "largest GEMM m,n,k", "SGEMM TF/s",
             "of SGEMM", "nodes", "kernels", "longest");
  for (int batch : batches)
    for (int hidden : hiddens) {
      Config c;
      c.model.batch = batch;
      c.model.hidden = hidden;
      c.run.folds = 1;
      c.run.steps_per_fold = 400;
      c.halt.on_fire = HaltOnFire::Never;
      c.halt.collapse_patience = 0;
      SessionOptions o;
      o.graph = true;
      double ms = 0;
      cuda::StepGraphShape g;
      {
        Session s(c, cuda::make_cuda_backend(c), o);
        ms_per_step(s, 1, 5);  // the fold's upload, cuBLAS heuristics, the capture
        const int steps = batch * hidden >= 1024 * 2048 ? 10 : 40;
        ms = ms_per_step(s, 5, steps);
        g = cuda::step_graph_shape(s.backend());
      }
      const cuda::GemmWork& w = g.gemms;
      const double gemm = sgemm_ms(w);
      const double step_tf = w.flops / (ms * 1e-3) / 1e12;
      const double gemm_tf = 2.0 * w.m * w.n * w.k / (gemm * 1e-3) / 1e12;
      fmt::print(
          "{:>6} {:>6} {:>10.4f} {:>10.2f} {:>9.2f} {:>22} {:>10.2f} {:>7.1f}% {:>6} {:>8} {:>8}\n",
          batch, hidden, ms, w.flops / 1e9, step_tf,
          fmt::format("{},{},{}{}", w.m, w.n, w.k,
                      w.trans_a ? " (A^T)" : (w.trans_b ? " (B^T)" : "")),
          gemm_tf, 100.0 * step_tf / gemm_tf, g.nodes, g.kernels, g.longest_path);
      std::fflush(stdout);
      if (out)
        std::fprintf(out, "%d %d %.5f %.4f %.5f %d %d %d\n", batch, hidden, ms, w.flops / 1e9, gemm,
                     w.m, w.n, w.k);
    }
  if (out) std::fclose(out);
  return 0;
}
