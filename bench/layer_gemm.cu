// bench_layer_gemm: the step's dense layers at the default sizes, each as cuBLAS's GEMM followed by
// its bias launch (the forward's layers) or alone (the backward's products), against the fused
// layer kernel (cuda/layer_gemm_kernel.cuh) in five shapes: tiles of 32 x 32, 16 x 32 and 16 x 16
// with slices of 32 inner entries (three in flight), and 16 x 32 with slices of 64 (three in
// flight) and of 128 (two).
// Each figure is one launch's time inside a graph of 20 launches in a row on one stream (so a
// launch waits for the one before, as on the step's chain), median of 7 replays of 50 graphs.
// Usage: bench_layer_gemm
#include <cuda_runtime.h>
#include <fmt/format.h>

#include <functional>
#include <string>
#include <vector>

#include "bench_util.h"
#include "core/config.h"
#include "dense.h"
#include "device_array.h"
#include "layer_gemm.h"
#include "layer_gemm_kernel.cuh"
#include "model/dims.h"

using namespace nanscope;
using namespace nanscope::cuda;

namespace {

constexpr int kInGraph = 20, kGraphs = 50, kRepeats = 7;

// Microseconds per op: `op` enqueued kInGraph times into one captured graph, replayed.
double us_per_op(cudaStream_t s, const std::function<void()>& op) {
  op();  // once outside the capture: the kernel's shared memory attribute is set there
  NANSCOPE_CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < kInGraph; ++i) op();
  cudaGraph_t graph = nullptr;
  NANSCOPE_CUDA_CHECK(cudaStreamEndCapture(s, &graph));
  cudaGraphExec_t exec = nullptr;
  NANSCOPE_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  cudaEvent_t a, b;
  NANSCOPE_CUDA_CHECK(cudaEventCreate(&a));
  NANSCOPE_CUDA_CHECK(cudaEventCreate(&b));
  std::vector<double> t;
  for (int r = 0; r < kRepeats + 1; ++r) {
    NANSCOPE_CUDA_CHECK(cudaEventRecord(a, s));
    for (int g = 0; g < kGraphs; ++g) NANSCOPE_CUDA_CHECK(cudaGraphLaunch(exec, s));
    NANSCOPE_CUDA_CHECK(cudaEventRecord(b, s));
    NANSCOPE_CUDA_CHECK(cudaEventSynchronize(b));
    float ms = 0;
    NANSCOPE_CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
    if (r > 0) t.push_back(1000.0 * ms / (kGraphs * kInGraph));  // the first warms up
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  return bench::median(t);
}

template <int kRows, int kCols, int kDepth, int kStages>
void launch_variant(const LayerGemm& g, cudaStream_t s) {
  using namespace layer_kernel;
  constexpr int smem = smem_bytes<kRows, kCols, kDepth, kStages>();
  auto pick = [&](auto kernel) {
    NANSCOPE_CUDA_CHECK(
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    kernel<<<tiles<kRows, kCols>(g), threads<kRows, kCols>(), smem, s>>>(g);
  };
  if (g.trans_a)
    pick(layer_kernel::layer_kernel<true, false, kRows, kCols, kDepth, kStages>);
  else if (g.trans_b)
    pick(layer_kernel::layer_kernel<false, true, kRows, kCols, kDepth, kStages>);
  else
    pick(layer_kernel::layer_kernel<false, false, kRows, kCols, kDepth, kStages>);
  NANSCOPE_LAUNCH_CHECK();
}

struct Shape {
  std::string name;
  bool ta, tb;
  int m, n, k;
  bool bias;
};

}  // namespace

int main() {
  const Dims d = Dims::from(Config{});
  const std::vector<Shape> shapes = {
      {"encoder 1", false, false, d.B, d.H, d.F, true},
      {"encoder 2", false, false, d.B, d.H, d.H, true},
      {"bottleneck", false, false, d.B, d.Z, d.H, true},
      {"value", false, false, d.B, d.NA, d.Z, true},
      {"advantage", false, false, d.B, d.A * d.NA, d.Z, true},
      {"d advantage -> dz", false, true, d.B, d.Z, d.A * d.NA, false},
      {"dz -> d h_s2", false, true, d.B, d.H, d.Z, false},
      {"d pre2 -> d h1", false, true, d.B, d.H, d.H, false},
      {"grad encoder 2", true, false, d.H, d.H, d.B, false},
      {"grad encoder 1", true, false, d.F, d.H, d.B, false},
  };
  cudaStream_t s = nullptr;
  NANSCOPE_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  Blas blas(s);
  cudaDeviceProp prop{};
  NANSCOPE_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  fmt::print("bench layer_gemm [{}]: one launch's us in a chain of {} (median of {})\n", prop.name,
             kInGraph, kRepeats);
  fmt::print("{:<20} {:>16} {:>14} {:>9} {:>9} {:>9} {:>9} {:>9}\n", "layer", "m x n x k",
             "cuBLAS(+bias)", "32x32", "16x32", "16x16", "16x32/64", "16x32/128");
  for (const Shape& sh : shapes) {
    const std::size_t a_n = static_cast<std::size_t>(sh.m) * sh.k,
                      b_n = static_cast<std::size_t>(sh.k) * sh.n,
                      c_n = static_cast<std::size_t>(sh.m) * sh.n;
    DeviceArray<float> a(a_n), b(b_n), bias(static_cast<std::size_t>(sh.n)), c(c_n);
    NANSCOPE_CUDA_CHECK(cudaMemsetAsync(a.get(), 0, a_n * sizeof(float), s));
    NANSCOPE_CUDA_CHECK(cudaMemsetAsync(b.get(), 0, b_n * sizeof(float), s));
    NANSCOPE_CUDA_CHECK(cudaMemsetAsync(bias.get(), 0, sh.n * sizeof(float), s));
    LayerGemm g = product(sh.ta, sh.tb, sh.m, sh.n, sh.k, a.get(), b.get(), c.get());
    if (sh.bias) g.bias = bias.get();
    const double cublas = us_per_op(s, [&] {
      blas.gemm(sh.ta, sh.tb, sh.m, sh.n, sh.k, 1.f, a.get(), b.get(), 0.f, c.get());
      if (sh.bias) add_bias_rows(c.get(), bias.get(), sh.m, sh.n, s);
    });
    const double v32x32 = us_per_op(s, [&] { launch_variant<32, 32, 32, 3>(g, s); });
    const double v16x32 = us_per_op(s, [&] { launch_variant<16, 32, 32, 3>(g, s); });
    const double v16x16 = us_per_op(s, [&] { launch_variant<16, 16, 32, 3>(g, s); });
    const double d64 = us_per_op(s, [&] { launch_variant<16, 32, 64, 3>(g, s); });
    const double d128 = us_per_op(s, [&] { launch_variant<16, 32, 128, 2>(g, s); });
    fmt::print("{:<20} {:>16} {:>14.2f} {:>9.2f} {:>9.2f} {:>9.2f} {:>9.2f} {:>9.2f}\n", sh.name,
               fmt::format("{}x{}x{}{}", sh.m, sh.n, sh.k,
                           sh.ta   ? " tn"
                           : sh.tb ? " nt"
                                   : ""),
               cublas, v32x32, v16x32, v16x16, d64, d128);
  }
  cudaStreamDestroy(s);
  return 0;
}
