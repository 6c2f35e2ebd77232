#include "device_array.h"
#include "layer_gemm.h"
#include "layer_gemm_kernel.cuh"

namespace nanscope::cuda {
namespace {

using namespace layer_kernel;

// The tile and pipeline the step's layers run with (bench/layer_gemm.cu: the shapes measured).
constexpr int kRows = 16, kCols = 32;
constexpr int kStages = 3;
constexpr int kSmem = smem_bytes<kRows, kCols, kStages>();

template <class Kernel>
void allow_smem(Kernel kernel) {
  if (kSmem > 48 * 1024)
    NANSCOPE_CUDA_CHECK(
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
}

template <bool kTransA, bool kTransB>
void launch(const LayerGemm& g, cudaStream_t stream) {
  auto kernel = layer_kernel::layer_kernel<kTransA, kTransB, kRows, kCols, kStages>;
  allow_smem(kernel);
  kernel<<<tiles<kRows, kCols>(g), threads<kRows, kCols>(), kSmem, stream>>>(g);
}

}  // namespace

bool layer_gemm_fits(int m, int n, int k) {
  // Each thread sums its outputs' terms one after the other, a multiply and an add each: past
  // 128 inner entries cuBLAS's FMA kernels are faster than this kernel saves in launches (H100,
  // bench/NOTES.md), and past a few thousand rows of a hundred-odd columns its larger tiles are.
  // Below 16 columns most of a tile would be padding (the IQN head's action outputs).
  return m > 0 && n >= 16 && k >= 16 && k <= 128 &&
         static_cast<double>(m) * n * k <= static_cast<double>(1 << 26);
}

void layer_gemm(const LayerGemm& g, cudaStream_t stream) {
  if (!layer_gemm_fits(g.m, g.n, g.k)) throw InternalError("layer_gemm: a layer past its sizes");
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
