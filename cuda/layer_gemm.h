// A small dense layer's GEMM with its bias and activation in one launch: cuBLAS runs a layer of the
// step as one or two kernels (a split-K reduction) followed by the bias launch; here the whole
// layer is one node of the step graph. Full fp32, each output one running sum over the inner
// dimension in order with a separate multiply and add per term, the CPU backend's arithmetic
// (layer_gemm_kernel.cuh): deterministic, and a layer's values overflow at the same term as on the
// CPU. Larger and skinnier layers stay with cuBLAS (Blas::layer chooses).
#pragma once

#include <cuda_runtime_api.h>

namespace nanscope::cuda {

// c[m, n] = op(a)[m, k] op(b)[k, n] + bias[n], row-major (op transposes the stored matrix when its
// flag is set); with `relu_out`, also relu_out = c < 0 ? 0 : c (NaN passes), the arithmetic of
// bias_relu; with `masked_out`, the gradient through a relu whose input was mask_pre: masked_out =
// mask_pre <= 0 ? 0 : c (a NaN input passes the gradient), the arithmetic of relu_backward. A null
// bias adds nothing. With `parts`, c is instead a sum of `part_count` terms of m x n each, stored
// one after the other in `parts`, added in order (one running float sum, part 0 first); term
// `product_part` is this product (with its bias), which the fused kernel never stores (the cuBLAS
// route writes it there first).
// The trunk's gradient as the fused layer's epilogue (the bottleneck's input gradient, bw_d_h_s2,
// going on through the heads' sums: backward.cu): with `main_copy` set, main_copy = c; then
// c += lambda_aux * aux and aux_copy = c; with `iqn`, c += lambda_iqn * iqn and trunk_m = c; c is
// stored, and grad_pre = pre <= 0 ? 0 : c (the gradient through the relu whose output was the
// layer's input). The expressions of the separate launches, so the same roundings.
struct TrunkSteps {
  float* main_copy = nullptr;
  float lambda_aux = 0.f;
  const float* aux = nullptr;
  float* aux_copy = nullptr;
  float lambda_iqn = 0.f;
  const float* iqn = nullptr;
  float* trunk_m = nullptr;
  const float* pre = nullptr;
  float* grad_pre = nullptr;
};

struct LayerGemm {
  bool trans_a = false, trans_b = false;
  int m = 0, n = 0, k = 0;
  const float* a = nullptr;
  const float* b = nullptr;
  const float* bias = nullptr;
  float* c = nullptr;
  float* relu_out = nullptr;
  const float* mask_pre = nullptr;
  float* masked_out = nullptr;
  float* parts = nullptr;
  int part_count = 0, product_part = 0;
  TrunkSteps trunk;
  // Sum in the CPU backend's order even without an epilogue, where the fused kernel fits (a product
  // that a captured step computes with an epilogue and a phase-by-phase step without one: both
  // give the same bits).
  bool cpu_order = false;
};

// The product alone, c = op(a) op(b) (the epilogue's fields are set after).
inline LayerGemm product(bool trans_a, bool trans_b, int m, int n, int k, const float* a,
                         const float* b, float* c) {
  LayerGemm g;
  g.trans_a = trans_a;
  g.trans_b = trans_b;
  g.m = m;
  g.n = n;
  g.k = k;
  g.a = a;
  g.b = b;
  g.c = c;
  return g;
}

// Whether the layer is small enough for the fused kernel to beat cuBLAS and its epilogue's launch.
bool layer_gemm_fits(const LayerGemm& g);
void layer_gemm(const LayerGemm& g, cudaStream_t stream);

}  // namespace nanscope::cuda
