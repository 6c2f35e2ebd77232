// Dense layers on the device: row-major GEMMs through cuBLAS in full fp32 (pedantic math: no TF32,
// no reduced-precision reductions), bias broadcast and NaN-preserving relu. Pointers are device
// pointers; streams are cudaStream_t.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>

#include "device_array.h"
#include "gemm_work.h"
#include "layer_gemm.h"
#include "slot_sink.h"

namespace nanscope::cuda {

class Blas {
 public:
  explicit Blas(cudaStream_t stream = nullptr);
  ~Blas();
  Blas(const Blas&) = delete;
  Blas& operator=(const Blas&) = delete;

  // C[m,n] = alpha * op(A) op(B) + beta * C, all row-major; op(A) is [m,k], op(B) is [k,n].
  // beta = 1 accumulates into C (never alpha = 0 to skip work).
  void gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a,
            const float* b, float beta, float* c);
  // `count` independent GEMMs of one shape in one launch: the i-th reads a + i * stride_a and
  // b + i * stride_b and writes c + i * stride_c (a stride of 0 shares an operand).
  void gemm_batched(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a,
                    long long stride_a, const float* b, long long stride_b, float beta, float* c,
                    long long stride_c, int count);
  // A dense layer, g.c = op(a) op(b) + bias, with its relu or the gradient through a relu when
  // asked (layer_gemm.h; the arithmetic of add_bias_rows, bias_relu and relu_backward): a small
  // layer with any of those in one fused launch, the rest through cuBLAS and then those launches.
  // A relu needs a bias.
  void layer(const LayerGemm& g);
  cudaStream_t stream() const { return stream_; }

  // The GEMMs enqueued since the last reset (what a captured step's graph reports); `count` adds
  // a product that a kernel of the caller's runs on this stream.
  const GemmWork& tally() const { return tally_; }
  void count(const GemmWork& w) { tally_.add(w); }
  void reset_tally() { tally_ = {}; }

 private:
  void* handle_ = nullptr;
  cudaStream_t stream_;
  DeviceArray<unsigned char> workspace_;
  GemmWork tally_;
};

// y[rows, cols] += bias[cols] (row broadcast).
void add_bias_rows(float* y, const float* bias, int rows, int cols, cudaStream_t stream);
// A layer's bias and activation in one launch: pre[rows, cols] += bias[cols], then out = relu(pre)
// (the same arithmetic as add_bias_rows then out = pre < 0 ? 0 : pre, NaN passing). With a sink
// that is on, the kernel also adds the non-finite values it writes into that slot's record (the
// check of `out`, without reading it again).
void bias_relu(float* pre, const float* bias, int rows, int cols, float* out, cudaStream_t stream,
               const SlotSink& sink = {});
// The gradient through a relu whose input was `pre`: out = pre <= 0 ? 0 : g (a NaN input passes
// the gradient, as PyTorch's). `out` may be `g`.
void relu_backward(const float* pre, const float* g, float* out, std::size_t n,
                   cudaStream_t stream);
// y[blocks, rows, cols] += bias[blocks, cols]: one launch for several heads' biases.
void add_bias_blocks(float* y, const float* bias, int blocks, int rows, int cols,
                     cudaStream_t stream);

}  // namespace nanscope::cuda
