// The fused layer's kernel (layer_gemm.h), templated on its tile's rows and columns, the inner
// entries of a slice and the slices in flight: layer_gemm.cu launches the chosen shape,
// bench/layer_gemm.cu measures the others.
//
// A block computes a kRows x kCols tile of c, each thread a 2 x 2 block of it. Every output is one
// running sum over the inner dimension in order, k = 0, 1, ..., a separate multiply and add per
// term: the arithmetic of the CPU backend's Eigen products (which the CPU build runs without FMA),
// so a product that overflows is Inf before it is added there and here, and the non-finite kinds
// a layer leaves are the CPU's. The inner dimension streams through shared memory in slices of
// kDepth, kStages slices of asynchronous copies in flight (a layer's inner dimension is a few
// slices, whose load latency would otherwise be paid one by one).
#pragma once

#include "layer_epilogue.cuh"
#include "layer_gemm.h"

namespace nanscope::cuda::layer_kernel {

template <int kRows, int kCols>
__host__ __device__ constexpr int threads() {
  return (kRows / 2) * (kCols / 2);
}
// Shared memory of one stage: a slice of a as sa[kk][row] and of b as sb[kk][col], each row
// padded for aligned pairs and fewer bank conflicts.
template <int kRows, int kCols, int kDepth>
__host__ __device__ constexpr int stage_floats() {
  return kDepth * (kRows + 4) + kDepth * (kCols + 4);
}
template <int kRows, int kCols, int kDepth, int kStages>
__host__ __device__ constexpr int smem_bytes() {
  return kStages * stage_floats<kRows, kCols, kDepth>() * static_cast<int>(sizeof(float));
}

// Asynchronous copies from sm_80 on; before it (a build for older cards) plain loads and stores,
// which the barrier before each slice's use makes visible just the same.
__device__ __forceinline__ void copy_async(float* dst, const float* src, bool present) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
  *dst = present ? *src : 0.f;
#else
  const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  // With a source size of 0 nothing is read and the entry is zero (the tile's edge).
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(d), "l"(src),
               "r"(present ? 4 : 0));
#endif
}
__device__ __forceinline__ void commit_copies() {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::);
#endif
}
template <int kPending>
__device__ __forceinline__ void wait_copies() {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending));
#endif
}

// One slice into a stage; each warp's loads follow the stored matrix's rows (coalesced).
template <bool kTransA, bool kTransB, int kRows, int kCols, int kDepth>
__device__ void load_slice(const LayerGemm& g, int row0, int col0, int k0, float* stage) {
  constexpr int kThreads = threads<kRows, kCols>();
  float* sa = stage;
  float* sb = stage + kDepth * (kRows + 4);
  for (int e = threadIdx.x; e < kRows * kDepth; e += kThreads) {
    const int row = kTransA ? e % kRows : e / kDepth, kk = kTransA ? e / kRows : e % kDepth;
    const int gr = row0 + row, gk = k0 + kk;
    const bool in = gr < g.m && gk < g.k;
    const float* src = !in       ? g.a
                       : kTransA ? g.a + static_cast<size_t>(gk) * g.m + gr
                                 : g.a + static_cast<size_t>(gr) * g.k + gk;
    copy_async(sa + kk * (kRows + 4) + row, src, in);
  }
  for (int e = threadIdx.x; e < kCols * kDepth; e += kThreads) {
    const int col = kTransB ? e / kDepth : e % kCols, kk = kTransB ? e % kDepth : e / kCols;
    const int gc = col0 + col, gk = k0 + kk;
    const bool in = gc < g.n && gk < g.k;
    const float* src = !in       ? g.b
                       : kTransB ? g.b + static_cast<size_t>(gc) * g.k + gk
                                 : g.b + static_cast<size_t>(gk) * g.n + gc;
    copy_async(sb + kk * (kCols + 4) + col, src, in);
  }
}

// The block's tile (blockIdx.x: columns, blockIdx.y: rows) of layer g, when the layer has it.
template <bool kTransA, bool kTransB, int kRows, int kCols, int kDepth, int kStages>
__device__ void layer_tile(const LayerGemm& g) {
  extern __shared__ __align__(16) float smem[];
  const int row0 = blockIdx.y * kRows, col0 = blockIdx.x * kCols;
  const int ty = threadIdx.x / (kCols / 2), tx = threadIdx.x % (kCols / 2);
  const int slices = (g.k + kDepth - 1) / kDepth;
  constexpr int kStage = stage_floats<kRows, kCols, kDepth>();

  for (int s = 0; s < kStages - 1; ++s) {
    if (s < slices)
      load_slice<kTransA, kTransB, kRows, kCols, kDepth>(g, row0, col0, s * kDepth,
                                                         smem + s * kStage);
    commit_copies();
  }
  float acc[2][2] = {};
  for (int t = 0; t < slices; ++t) {
    wait_copies<kStages - 2>();  // slice t has landed (this thread's copies)...
    __syncthreads();             // ...and every thread's; slice t - 1's stage is free again
    const int next = t + kStages - 1;
    if (next < slices)
      load_slice<kTransA, kTransB, kRows, kCols, kDepth>(g, row0, col0, next * kDepth,
                                                         smem + (next % kStages) * kStage);
    commit_copies();
    const float* sa = smem + (t % kStages) * kStage;
    const float* sb = sa + kDepth * (kRows + 4);
    // The thread's operands of the slice, then its four running sums over them.
    float2 av[kDepth], bv[kDepth];
#pragma unroll
    for (int kk = 0; kk < kDepth; ++kk) {
      av[kk] = *reinterpret_cast<const float2*>(sa + kk * (kRows + 4) + 2 * ty);
      bv[kk] = *reinterpret_cast<const float2*>(sb + kk * (kCols + 4) + 2 * tx);
    }
#pragma unroll
    for (int kk = 0; kk < kDepth; ++kk) {
      // Never contracted into an FMA (the intrinsics round each operation).
      acc[0][0] = __fadd_rn(acc[0][0], __fmul_rn(av[kk].x, bv[kk].x));
      acc[0][1] = __fadd_rn(acc[0][1], __fmul_rn(av[kk].x, bv[kk].y));
      acc[1][0] = __fadd_rn(acc[1][0], __fmul_rn(av[kk].y, bv[kk].x));
      acc[1][1] = __fadd_rn(acc[1][1], __fmul_rn(av[kk].y, bv[kk].y));
    }
  }
  wait_copies<0>();  // nothing left in flight when the block ends
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const int gr = row0 + 2 * ty + i, gc = col0 + 2 * tx + j;
      if (gr >= g.m || gc >= g.n) continue;
      float v = acc[i][j];
      if (g.bias) v += g.bias[gc];
      const size_t at = static_cast<size_t>(gr) * g.n + gc;
      if (g.parts) v = sum_of_parts(g, at, v);
      if (g.trunk.main_copy) v = trunk_steps(g.trunk, at, v);
      g.c[at] = v;
      if (g.relu_out) g.relu_out[at] = v < 0.f ? 0.f : v;
      if (g.masked_out) g.masked_out[at] = g.mask_pre[at] <= 0.f ? 0.f : v;
    }
}

template <bool kTransA, bool kTransB, int kRows, int kCols, int kDepth, int kStages>
__global__ void __launch_bounds__(threads<kRows, kCols>()) layer_kernel(const LayerGemm g) {
  layer_tile<kTransA, kTransB, kRows, kCols, kDepth, kStages>(g);
}

template <int kRows, int kCols>
dim3 tiles(const LayerGemm& g) {
  return dim3((g.n + kCols - 1) / kCols, (g.m + kRows - 1) / kRows);
}

}  // namespace nanscope::cuda::layer_kernel
