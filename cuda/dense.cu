#include <cublas_v2.h>

#include "dense.h"
#include "device_array.h"
#include "layer_epilogue.cuh"
#include "slot_note.cuh"

namespace nanscope::cuda {
namespace {

void check_blas(cublasStatus_t s, const char* what, const char* file, int line) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw DeviceError(std::string(file) + ":" + std::to_string(line) + ": " + what +
                      ": cuBLAS status " + std::to_string(static_cast<int>(s)));
}
#define NANSCOPE_CUBLAS_CHECK(call) check_blas((call), #call, __FILE__, __LINE__)

// The elementwise kernels here index in 32 bits (a 64-bit division or remainder per element costs
// more than the element's memory traffic); their launchers check the sizes.
__global__ void bias_rows_kernel(float* __restrict__ y, const float* __restrict__ bias, unsigned n,
                                 unsigned cols) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] += bias[i % cols];
}

// The bias add of a layer followed by its relu, in one pass (same arithmetic as the two apart:
// pre = pre + bias, then out = pre < 0 ? 0 : pre; NaN < 0 is false, so NaN passes where fmaxf would
// turn it into 0). kCheck: the kernel also adds the non-finite
// values it writes to `out` into a slot's record; whole warps stay to the end (the vote needs every
// lane).
template <bool kCheck>
__global__ void bias_relu_kernel(float* __restrict__ pre, const float* __restrict__ bias,
                                 unsigned cols, float* __restrict__ out, unsigned n,
                                 SlotSink sink) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned kind = 0u;
  if (i < n) {
    const float v = pre[i] + bias[i % cols];
    pre[i] = v;
    const float y = v < 0.f ? 0.f : v;
    out[i] = y;
    if (kCheck) kind = nonfinite_kind(y);
  }
  if (kCheck) note_in_producer(sink, kind, kind != 0u);
}

__global__ void relu_backward_kernel(const float* pre, const float* g, float* out, unsigned n) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = pre[i] <= 0.f ? 0.f : g[i];
}

// Elementwise launches index in 32 bits.
unsigned checked_count(std::size_t n) {
  if (n >= (std::size_t{1} << 31))
    throw InternalError("dense: an elementwise launch over 2^31 elements or more");
  return static_cast<unsigned>(n);
}

void launch_bias_relu(float* pre, const float* bias, int cols, float* out, std::size_t count,
                      cudaStream_t stream, const SlotSink& sink) {
  if (!count) return;
  const unsigned n = checked_count(count);
  const unsigned blocks = static_cast<unsigned>((n + 255) / 256);
  auto s = stream;
  if (sink.on())
    bias_relu_kernel<true>
        <<<blocks, 256, 0, s>>>(pre, bias, static_cast<unsigned>(cols), out, n, sink);
  else
    bias_relu_kernel<false>
        <<<blocks, 256, 0, s>>>(pre, bias, static_cast<unsigned>(cols), out, n, sink);
  NANSCOPE_LAUNCH_CHECK();
}

// c = the sum of g's parts in order (cuBLAS's route of a layer with parts: the product is already
// in its part), n = m * n entries.
__global__ void sum_parts_kernel(LayerGemm g, unsigned n) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) g.c[i] = sum_of_parts(g, i, g.parts[static_cast<size_t>(g.product_part) * n + i]);
}

// The trunk's steps over a layer's output c (cuBLAS's route of a layer with them).
__global__ void trunk_steps_kernel(TrunkSteps t, float* __restrict__ c, unsigned n) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = trunk_steps(t, i, c[i]);
}

// y[b, r, c] += bias[b, c]: each block of rows its own bias row (the ensemble's heads).
__global__ void bias_blocks_kernel(float* __restrict__ y, const float* __restrict__ bias,
                                   unsigned rows, unsigned cols, unsigned n) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  y[i] += bias[(i / (rows * cols)) * cols + i % cols];
}

}  // namespace

namespace {
// The workspace size cuBLAS recommends: 32 MiB from Hopper on, 4 MiB before.
std::size_t recommended_workspace() {
  int device = 0, major = 0;
  NANSCOPE_CUDA_CHECK(cudaGetDevice(&device));
  NANSCOPE_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  return std::size_t{major >= 9 ? 32u : 4u} << 20;
}
}  // namespace

// The handle has a workspace of its own: without one, cuBLAS allocates its workspace per call with
// cudaMallocAsync, which a captured step graph holds as an allocation node before and a free node
// after each GEMM that needs one, two more nodes on the step's chain each time. (Allocated before
// the handle: a failed allocation leaves no handle behind.)
Blas::Blas(cudaStream_t stream) : stream_(stream), workspace_(recommended_workspace()) {
  cublasHandle_t h = nullptr;
  NANSCOPE_CUBLAS_CHECK(cublasCreate(&h));
  handle_ = h;
  NANSCOPE_CUBLAS_CHECK(cublasSetStream(h, stream));
  NANSCOPE_CUBLAS_CHECK(cublasSetMathMode(h, CUBLAS_PEDANTIC_MATH));
  NANSCOPE_CUBLAS_CHECK(cublasSetAtomicsMode(h, CUBLAS_ATOMICS_NOT_ALLOWED));  // deterministic
  NANSCOPE_CUBLAS_CHECK(cublasSetWorkspace(h, workspace_.get(), workspace_.size()));
}

Blas::~Blas() {
  cublasDestroy(static_cast<cublasHandle_t>(handle_));
}

void Blas::gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a,
                const float* b, float beta, float* c) {
  tally_.add(GemmWork{2.0 * m * n * k, trans_a, trans_b, m, n, k});
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: swap the operands.
  const int lda = trans_a ? m : k;  // row-major leading dimensions of the stored A and B
  const int ldb = trans_b ? k : n;
  NANSCOPE_CUBLAS_CHECK(cublasSgemm(
      static_cast<cublasHandle_t>(handle_), trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
      trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &alpha, b, ldb, a, lda, &beta, c, n));
}

void Blas::gemm_batched(bool trans_a, bool trans_b, int m, int n, int k, float alpha,
                        const float* a, long long stride_a, const float* b, long long stride_b,
                        float beta, float* c, long long stride_c, int count) {
  tally_.add(GemmWork{2.0 * m * n * k * count, trans_a, trans_b, m, n, k});
  const int lda = trans_a ? m : k;
  const int ldb = trans_b ? k : n;
  NANSCOPE_CUBLAS_CHECK(cublasSgemmStridedBatched(
      static_cast<cublasHandle_t>(handle_), trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
      trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &alpha, b, ldb, stride_b, a, lda, stride_a,
      &beta, c, n, stride_c, count));
}

void Blas::layer(const LayerGemm& g) {
  if (g.relu_out && !g.bias) throw InternalError("Blas::layer: a relu without a bias");
  const std::size_t count = static_cast<std::size_t>(g.m) * g.n;
  if (g.parts &&
      (g.relu_out || g.masked_out || g.product_part < 0 || g.product_part >= g.part_count))
    throw InternalError("Blas::layer: a sum of parts that is not a layer's output");
  const TrunkSteps& t = g.trunk;
  if (t.main_copy && (g.relu_out || g.masked_out || !t.aux || !t.aux_copy || !t.pre ||
                      !t.grad_pre || (t.iqn && !t.trunk_m)))
    throw InternalError("Blas::layer: the trunk's steps without their buffers");
  // A product alone is one cuBLAS launch already; the fused kernel saves the epilogue's.
  const bool epilogue = g.bias || g.relu_out || g.masked_out || g.parts || t.main_copy;
  if ((epilogue || g.cpu_order) && layer_gemm_fits(g)) {
    tally_.add(GemmWork{2.0 * g.m * g.n * g.k, g.trans_a, g.trans_b, g.m, g.n, g.k});
    layer_gemm(g, stream_);
    return;
  }
  float* product = g.parts ? g.parts + static_cast<std::size_t>(g.product_part) * count : g.c;
  gemm(g.trans_a, g.trans_b, g.m, g.n, g.k, 1.f, g.a, g.b, 0.f, product);
  if (g.relu_out) {
    bias_relu(product, g.bias, g.m, g.n, g.relu_out, stream_);
  } else if (g.bias) {
    add_bias_rows(product, g.bias, g.m, g.n, stream_);
  }
  if (g.masked_out) relu_backward(g.mask_pre, product, g.masked_out, count, stream_);
  if (g.parts && count) {
    const unsigned n = checked_count(count);
    sum_parts_kernel<<<(n + 127) / 128, 128, 0, stream_>>>(g, n);
    NANSCOPE_LAUNCH_CHECK();
  }
  if (t.main_copy && count) {
    const unsigned n = checked_count(count);
    trunk_steps_kernel<<<(n + 127) / 128, 128, 0, stream_>>>(t, g.c, n);
    NANSCOPE_LAUNCH_CHECK();
  }
}

void relu_backward(const float* pre, const float* g, float* out, std::size_t count,
                   cudaStream_t stream) {
  if (!count) return;
  const unsigned n = checked_count(count);
  relu_backward_kernel<<<(n + 127) / 128, 128, 0, stream>>>(pre, g, out, n);
  NANSCOPE_LAUNCH_CHECK();
}

void add_bias_rows(float* y, const float* bias, int rows, int cols, cudaStream_t stream) {
  const size_t count = static_cast<size_t>(rows) * cols;
  if (!count) return;
  const unsigned n = checked_count(count);
  bias_rows_kernel<<<(n + 255) / 256, 256, 0, stream>>>(y, bias, n, static_cast<unsigned>(cols));
  NANSCOPE_LAUNCH_CHECK();
}

void bias_relu(float* pre, const float* bias, int rows, int cols, float* out, cudaStream_t stream,
               const SlotSink& sink) {
  launch_bias_relu(pre, bias, cols, out, static_cast<std::size_t>(rows) * cols, stream, sink);
}

void add_bias_blocks(float* y, const float* bias, int blocks, int rows, int cols,
                     cudaStream_t stream) {
  const size_t count = static_cast<size_t>(blocks) * rows * cols;
  if (!count) return;
  const unsigned n = checked_count(count);
  bias_blocks_kernel<<<(n + 255) / 256, 256, 0, stream>>>(y, bias, static_cast<unsigned>(rows),
                                                          static_cast<unsigned>(cols), n);
  NANSCOPE_LAUNCH_CHECK();
}

}  // namespace nanscope::cuda
