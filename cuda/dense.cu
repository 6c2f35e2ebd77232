#include <cublasLt.h>
#include <cublas_v2.h>

#include <map>
#include <tuple>

#include "dense.h"
#include "device_array.h"
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

// y[b, r, c] += bias[b, c]: each block of rows its own bias row (the ensemble's heads).
__global__ void bias_blocks_kernel(float* __restrict__ y, const float* __restrict__ bias,
                                   unsigned rows, unsigned cols, unsigned n) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  y[i] += bias[(i / (rows * cols)) * cols + i % cols];
}

}  // namespace

// cuBLASLt for the GEMMs with a bias epilogue: one plan per shape (layouts, descriptor, the
// algorithm the heuristic gave), kept for the handle's life.
struct Blas::LtPlans {
  static constexpr std::size_t kWorkspace = std::size_t{4} << 20;
  struct Plan {
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
    cublasLtMatmulAlgo_t algo{};
    bool usable = false;  // the heuristic found an algorithm
  };
  cublasLtHandle_t handle = nullptr;
  DeviceArray<unsigned char> workspace{kWorkspace};
  // (trans_a, trans_b, m, n, k, pointers 16-byte aligned): the heuristic reads the alignment.
  std::map<std::tuple<bool, bool, int, int, int, bool>, Plan> plans;

  LtPlans() { NANSCOPE_CUBLAS_CHECK(cublasLtCreate(&handle)); }
  ~LtPlans() {
    for (auto& [key, p] : plans) {
      if (p.desc) cublasLtMatmulDescDestroy(p.desc);
      for (auto l : {p.a, p.b, p.d})
        if (l) cublasLtMatrixLayoutDestroy(l);
    }
    cublasLtDestroy(handle);
  }
  LtPlans(const LtPlans&) = delete;
  LtPlans& operator=(const LtPlans&) = delete;

  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T, as in Blas::gemm: the
  // column-major output has n rows, so the epilogue's bias (one per output row) is per column of C.
  Plan& plan(bool ta, bool tb, int m, int n, int k, bool aligned) {
    const auto key = std::make_tuple(ta, tb, m, n, k, aligned);
    auto found = plans.find(key);
    if (found != plans.end()) return found->second;
    Plan& p = plans[key];
    NANSCOPE_CUBLAS_CHECK(
        cublasLtMatmulDescCreate(&p.desc, CUBLAS_COMPUTE_32F_PEDANTIC, CUDA_R_32F));
    const cublasOperation_t op_first = tb ? CUBLAS_OP_T : CUBLAS_OP_N;  // B's, then A's
    const cublasOperation_t op_second = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
    NANSCOPE_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA,
                                                         &op_first, sizeof op_first));
    NANSCOPE_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB,
                                                         &op_second, sizeof op_second));
    NANSCOPE_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE,
                                                         &epilogue, sizeof epilogue));
    NANSCOPE_CUBLAS_CHECK(
        cublasLtMatrixLayoutCreate(&p.a, CUDA_R_32F, tb ? k : n, tb ? n : k, tb ? k : n));
    NANSCOPE_CUBLAS_CHECK(
        cublasLtMatrixLayoutCreate(&p.b, CUDA_R_32F, ta ? m : k, ta ? k : m, ta ? m : k));
    NANSCOPE_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p.d, CUDA_R_32F, n, m, n));
    cublasLtMatmulPreference_t pref = nullptr;
    NANSCOPE_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    const std::uint64_t ws = kWorkspace;
    // Split-K only with a separate reduction (no in-place accumulation whose order could vary).
    const std::uint32_t schemes =
        CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE | CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE;
    cublasLtMatmulHeuristicResult_t result{};
    int found_count = 0;
    const bool ok =
        cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
                                             sizeof ws) == CUBLAS_STATUS_SUCCESS &&
        cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK,
                                             &schemes, sizeof schemes) == CUBLAS_STATUS_SUCCESS &&
        cublasLtMatmulAlgoGetHeuristic(handle, p.desc, p.a, p.b, p.d, p.d, pref, 1, &result,
                                       &found_count) == CUBLAS_STATUS_SUCCESS;
    cublasLtMatmulPreferenceDestroy(pref);
    p.usable = ok && found_count > 0;
    if (p.usable) p.algo = result.algo;
    return p;
  }
};

Blas::Blas(cudaStream_t stream) : stream_(stream), lt_(std::make_unique<LtPlans>()) {
  cublasHandle_t h = nullptr;
  NANSCOPE_CUBLAS_CHECK(cublasCreate(&h));
  handle_ = h;
  NANSCOPE_CUBLAS_CHECK(cublasSetStream(h, stream));
  NANSCOPE_CUBLAS_CHECK(cublasSetMathMode(h, CUBLAS_PEDANTIC_MATH));
  NANSCOPE_CUBLAS_CHECK(cublasSetAtomicsMode(h, CUBLAS_ATOMICS_NOT_ALLOWED));  // deterministic
}

Blas::~Blas() {
  cublasDestroy(static_cast<cublasHandle_t>(handle_));
}

void Blas::Tally::add(const Tally& o) {
  if (2.0 * o.m * o.n * o.k > 2.0 * m * n * k) {
    trans_a = o.trans_a;
    trans_b = o.trans_b;
    m = o.m;
    n = o.n;
    k = o.k;
  }
  flops += o.flops;
}

void Blas::gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a,
                const float* b, float beta, float* c) {
  tally_.add(Tally{2.0 * m * n * k, trans_a, trans_b, m, n, k});
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: swap the operands.
  const int lda = trans_a ? m : k;  // row-major leading dimensions of the stored A and B
  const int ldb = trans_b ? k : n;
  NANSCOPE_CUBLAS_CHECK(cublasSgemm(
      static_cast<cublasHandle_t>(handle_), trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
      trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &alpha, b, ldb, a, lda, &beta, c, n));
}

void Blas::gemm_bias(bool trans_a, bool trans_b, int m, int n, int k, const float* a,
                     const float* b, const float* bias, float* c) {
  auto aligned = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; };
  LtPlans::Plan& p =
      lt_->plan(trans_a, trans_b, m, n, k, aligned(a) && aligned(b) && aligned(bias) && aligned(c));
  if (!p.usable || m == 0 || n == 0) {
    gemm(trans_a, trans_b, m, n, k, 1.f, a, b, 0.f, c);
    add_bias_rows(c, bias, m, n, stream_);
    return;
  }
  tally_.add(Tally{2.0 * m * n * k, trans_a, trans_b, m, n, k});
  NANSCOPE_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                                       &bias, sizeof bias));
  const float one = 1.f, zero = 0.f;
  NANSCOPE_CUBLAS_CHECK(cublasLtMatmul(lt_->handle, p.desc, &one, b, p.a, a, p.b, &zero, c, p.d, c,
                                       p.d, &p.algo, lt_->workspace.get(), LtPlans::kWorkspace,
                                       stream_));
}

void Blas::gemm_batched(bool trans_a, bool trans_b, int m, int n, int k, float alpha,
                        const float* a, long long stride_a, const float* b, long long stride_b,
                        float beta, float* c, long long stride_c, int count) {
  tally_.add(Tally{2.0 * m * n * k * count, trans_a, trans_b, m, n, k});
  const int lda = trans_a ? m : k;
  const int ldb = trans_b ? k : n;
  NANSCOPE_CUBLAS_CHECK(cublasSgemmStridedBatched(
      static_cast<cublasHandle_t>(handle_), trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
      trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &alpha, b, ldb, stride_b, a, lda, stride_a,
      &beta, c, n, stride_c, count));
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
