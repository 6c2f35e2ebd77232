// The fused layer's epilogue steps past bias and relu (layer_gemm.h), shared by its kernel and by
// the launches that follow cuBLAS on Blas::layer's other route, so both routes compute the same
// expressions.
#pragma once

#include "layer_gemm.h"

namespace nanscope::cuda {

// c's value at `at` when it is a sum of parts: the parts in order, the product's value `product`
// in its place.
__device__ __forceinline__ float sum_of_parts(const LayerGemm& g, size_t at, float product) {
  const size_t stride = static_cast<size_t>(g.m) * g.n;
  float sum = g.product_part == 0 ? product : g.parts[at];
  for (int p = 1; p < g.part_count; ++p)
    sum += p == g.product_part ? product : g.parts[p * stride + at];
  return sum;
}

// The trunk's steps at `at` from the layer's value v; returns what c stores.
__device__ __forceinline__ float trunk_steps(const TrunkSteps& t, size_t at, float v) {
  t.main_copy[at] = v;
  v += t.lambda_aux * t.aux[at];
  t.aux_copy[at] = v;
  if (t.iqn) {
    float m = v;
    m += t.lambda_iqn * t.iqn[at];
    t.trunk_m[at] = m;
    v = m;
  }
  t.grad_pre[at] = t.pre[at] <= 0.f ? 0.f : v;  // relu_backward's arithmetic
  return v;
}

}  // namespace nanscope::cuda
