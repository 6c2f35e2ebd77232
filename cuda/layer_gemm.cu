#include "device_array.h"
#include "layer_gemm.h"
#include "layer_gemm_kernel.cuh"

namespace nanscope::cuda {
namespace {

using namespace layer_kernel;

// The tile and pipeline the step's layers run with (bench/layer_gemm.cu measures the shapes): a
// 16 x 32 tile, slices of 32 inner entries for a layer that has at most 32 (the first encoder
// layer: no padding), else of 64; three slices in flight.
constexpr int kRows = 16, kCols = 32, kStages = 3, kShallow = 32, kDeep = 64;
static_assert(smem_bytes<kRows, kCols, kDeep, kStages>() <= 48 * 1024,
              "within the shared memory a launch gets without asking");

template <bool kTransA, bool kTransB, int kDepth>
void launch_depth(const LayerGemm& g, cudaStream_t stream) {
  layer_kernel::layer_kernel<kTransA, kTransB, kRows, kCols, kDepth, kStages>
      <<<tiles<kRows, kCols>(g), threads<kRows, kCols>(),
         smem_bytes<kRows, kCols, kDepth, kStages>(), stream>>>(g);
}

template <bool kTransA, bool kTransB>
void launch(const LayerGemm& g, cudaStream_t stream) {
  if (g.k <= kShallow)
    launch_depth<kTransA, kTransB, kShallow>(g, stream);
  else
    launch_depth<kTransA, kTransB, kDeep>(g, stream);
}

}  // namespace

bool layer_gemm_fits(const LayerGemm& g) {
  // Each thread sums its outputs' terms one after the other, a multiply and an add each: up to
  // 256 inner entries and 2^24 multiply-adds (the default step's layers) this kernel is as fast as
  // cuBLAS's FMA kernels and saves their bias launch (H100, bench/NOTES.md); past that cuBLAS's
  // larger tiles win. A sum of parts saves more (cuBLAS's split-K pair and the sum's launch, the
  // advantage head's input gradient): up to 512 inner entries. Below 16 columns most of a tile
  // would be padding (the IQN head's actions).
  const int deepest = g.parts ? 512 : 256;
  return g.m > 0 && g.n >= 16 && g.k >= 16 && g.k <= deepest &&
         static_cast<double>(g.m) * g.n * g.k <= static_cast<double>(1 << 24);
}

void layer_gemm(const LayerGemm& g, cudaStream_t stream) {
  if (!layer_gemm_fits(g)) throw InternalError("layer_gemm: a layer past its sizes");
  if (g.trans_a && g.trans_b)
    launch<true, true>(g, stream);
  else if (g.trans_a)
    launch<true, false>(g, stream);
  else if (g.trans_b)
    launch<false, true>(g, stream);
  else
    launch<false, false>(g, stream);
  NANSCOPE_LAUNCH_CHECK();
}

}  // namespace nanscope::cuda
