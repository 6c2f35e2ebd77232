// GEMM work as a step enqueues it: floating-point operations (2 m n k each) and the largest GEMM's
// shape (row-major C[m,n] = op(A)[m,k] op(B)[k,n]). Blas tallies it; a captured step graph reports
// it (cuda_backend.h); bench/step_scaling times cuBLAS alone on the largest shape. No CUDA types.
#pragma once

namespace nanscope::cuda {

struct GemmWork {
  double flops = 0;
  bool trans_a = false, trans_b = false;
  int m = 0, n = 0, k = 0;
  // Sums the work and keeps the larger GEMM's shape.
  void add(const GemmWork& o) {
    if (2.0 * o.m * o.n * o.k > 2.0 * m * n * k) {
      trans_a = o.trans_a;
      trans_b = o.trans_b;
      m = o.m;
      n = o.n;
      k = o.k;
    }
    flops += o.flops;
  }
};

}  // namespace nanscope::cuda
