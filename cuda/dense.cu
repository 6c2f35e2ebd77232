#include <cublas_v2.h>

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

__global__ void bias_rows_kernel(float* __restrict__ y, const float* __restrict__ bias, int rows, int cols) {
  const size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < static_cast<size_t>(rows) * cols) y[i] += bias[i % cols];
}

__global__ void relu_kernel(const float* __restrict__ x, float* __restrict__ out, size_t n) {
  const size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) {
    const float v = x[i];
    out[i] = v < 0.f ? 0.f : v;  // NaN < 0 is false: NaN passes (fmaxf would turn it into 0)
  }
}

// The relu that checks what it writes: whole warps stay to the end (the vote needs every lane).
__global__ void relu_checked_kernel(const float* __restrict__ x, float* __restrict__ out, size_t n, SlotSink sink) {
  const size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  unsigned kind = 0u;
  if (i < n) {
    const float v = x[i];
    const float y = v < 0.f ? 0.f : v;
    out[i] = y;
    kind = nonfinite_kind(y);
  }
  note_in_producer(sink, kind, kind != 0u);
}

}  // namespace

Blas::Blas(void* stream) : stream_(stream) {
  cublasHandle_t h = nullptr;
  NANSCOPE_CUBLAS_CHECK(cublasCreate(&h));
  handle_ = h;
  NANSCOPE_CUBLAS_CHECK(cublasSetStream(h, static_cast<cudaStream_t>(stream)));
  NANSCOPE_CUBLAS_CHECK(cublasSetMathMode(h, CUBLAS_PEDANTIC_MATH));
  NANSCOPE_CUBLAS_CHECK(cublasSetAtomicsMode(h, CUBLAS_ATOMICS_NOT_ALLOWED));  // deterministic
}

Blas::~Blas() { cublasDestroy(static_cast<cublasHandle_t>(handle_)); }

void Blas::gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a,
                const float* b, float beta, float* c) {
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: swap the operands.
  const int lda = trans_a ? m : k;  // row-major leading dimensions of the stored A and B
  const int ldb = trans_b ? k : n;
  NANSCOPE_CUBLAS_CHECK(cublasSgemm(static_cast<cublasHandle_t>(handle_),
                                    trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
                                    n, m, k, &alpha, b, ldb, a, lda, &beta, c, n));
}

void add_bias_rows(float* y, const float* bias, int rows, int cols, void* stream) {
  const size_t n = static_cast<size_t>(rows) * cols;
  if (!n) return;
  bias_rows_kernel<<<static_cast<unsigned>((n + 255) / 256), 256, 0, static_cast<cudaStream_t>(stream)>>>(y, bias, rows, cols);
  NANSCOPE_CUDA_CHECK(cudaGetLastError());
}

void relu(const float* x, float* out, std::size_t n, void* stream, const SlotSink& sink) {
  if (!n) return;
  const unsigned blocks = static_cast<unsigned>((n + 255) / 256);
  if (sink.on())
    relu_checked_kernel<<<blocks, 256, 0, static_cast<cudaStream_t>(stream)>>>(x, out, n, sink);
  else
    relu_kernel<<<blocks, 256, 0, static_cast<cudaStream_t>(stream)>>>(x, out, n);
  NANSCOPE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace nanscope::cuda
