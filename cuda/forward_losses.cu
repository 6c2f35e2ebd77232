#include "batch_mean.cuh"
#include "forward_losses.h"
#include "launch_grid.cuh"
#include "reduce.cuh"
#include "warp_rows.cuh"

namespace nanscope::cuda {
namespace {

constexpr float kNaN = __builtin_nanf("");

// One warp per sample (enough lanes in flight: one thread per sample left most of the GPU idle):
// the C51 loss on the taken sub-actions (mean over branches), summed in double over (branch, atom)
// lane-strided and folded in a fixed order.
__global__ void c51_loss_kernel(Dims bd, bool kl, const float* __restrict__ logp,
                                const float* __restrict__ m,
                                const std::int32_t* __restrict__ actions, float* __restrict__ c51) {
  const int b = static_cast<int>((blockIdx.x * blockDim.x + threadIdx.x) / 32);
  if (b >= bd.B) return;  // the whole warp
  double per = 0;
  for (int k = static_cast<int>(threadIdx.x % 32); k < bd.D * bd.NA; k += 32) {
    const int br = k / bd.NA, i = k % bd.NA;
    const int a = bd.off[br] + actions[b * bd.D + br];
    const float lp = logp[(static_cast<size_t>(b) * bd.A + a) * bd.NA + i];
    const float mm = m[(static_cast<size_t>(b) * bd.D + br) * bd.NA + i];
    per += kl ? static_cast<double>(mm * (logf(mm) - lp)) : -static_cast<double>(mm) * lp;
  }
  per = warp_sum_double(per);
  if (threadIdx.x % 32 == 0) c51[b] = static_cast<float>(per / bd.D);
}

// One warp per sample: CQL logsumexp per branch, y per branch, and the per-sample MSE sum (for
// the batch scalar), from Q as its call site left it. The lanes share the sums over atoms and
// sub-actions; lane 0 writes. The CQL term is not summed here: it is computed from the checked
// logsumexp after its call site (cql_mean_kernel), so an injection into slot 11 reaches it.
__global__ void mse_lse_kernel(Dims bd, const float* __restrict__ q, const float* __restrict__ tlp,
                               const std::int32_t* __restrict__ astar,
                               const float* __restrict__ ret, const float* __restrict__ done,
                               const std::int32_t* __restrict__ actions, float* __restrict__ lse,
                               float* __restrict__ y, float* __restrict__ mse_part) {
  const int b = static_cast<int>((blockIdx.x * blockDim.x + threadIdx.x) / 32);
  if (b >= bd.B) return;  // the whole warp
  const int lane = static_cast<int>(threadIdx.x % 32);
  double mse = 0;
  const float disc = static_cast<float>(bd.gamma_n) * (1.f - done[b]);
  for (int br = 0; br < bd.D; ++br) {
    const int a = bd.off[br] + actions[b * bd.D + br];
    // y_d = R + g^n (1-done) E_{p'}[zeta] of the target's greedy distribution
    const int as = astar[b * bd.D + br];
    float yd = kNaN;
    if (as >= 0) {
      const float* row = tlp + (static_cast<size_t>(b) * bd.A + bd.off[br] + as) * bd.NA;
      double ey = 0;
      for (int j = lane; j < bd.NA; j += 32)
        ey += (bd.v_min + j * bd.dz) * static_cast<double>(expf(row[j]));
      ey = warp_sum_double(ey);
      yd = ret[b] + disc * static_cast<float>(ey);
    }
    const float l = lse_row_warp(q + static_cast<size_t>(b) * bd.A + bd.off[br], bd.sub[br]);
    if (lane == 0) {
      y[b * bd.D + br] = yd;
      lse[b * bd.D + br] = l;
    }
    const float taken = q[static_cast<size_t>(b) * bd.A + a];
    const double e = static_cast<double>(taken) - yd;
    mse += e * e;
  }
  if (lane == 0) mse_part[b] = static_cast<float>(mse);
}

// *out = alpha / B * sum_b sum_d (lse[b, d] - Q[b, a_d]), from the checked logsumexp: one block,
// the samples folded in a fixed order (as mean_kernel), in double.
__global__ void cql_mean_kernel(Dims bd, const float* __restrict__ q, const float* __restrict__ lse,
                                const std::int32_t* __restrict__ actions, double alpha,
                                double* __restrict__ out) {
  double acc = 0;
  for (int b = threadIdx.x; b < bd.B; b += blockDim.x)
    for (int br = 0; br < bd.D; ++br)
      acc += static_cast<double>(lse[b * bd.D + br]) -
             q[static_cast<size_t>(b) * bd.A + bd.off[br] + actions[b * bd.D + br]];
  const double sum = block_sum<256>(acc);
  if (threadIdx.x == 0) *out = alpha * (sum / bd.B);
}

__global__ void aux_loss_kernel(int B, int AO, const float* __restrict__ pred,
                                const float* __restrict__ target, float* __restrict__ loss) {
  const int b = blockIdx.x * blockDim.x + threadIdx.x;
  if (b >= B) return;
  double acc = 0;
  for (int k = 0; k < AO; ++k) {
    const double e = static_cast<double>(pred[b * AO + k]) - target[b * AO + k];
    acc += e * e;
  }
  loss[b] = static_cast<float>(acc / AO);
}

// One warp per (head, sample) row: the row's lse, then -sum over branches and atoms of
// m * (row - lse) in double, lane-strided and folded in a fixed order.
__global__ void ens_ce_kernel(Dims bd, int E, const float* __restrict__ ve,
                              const float* __restrict__ m, float* __restrict__ part) {
  const int t = static_cast<int>((blockIdx.x * blockDim.x + threadIdx.x) / 32);  // (e, b)
  if (t >= E * bd.B) return;                                                     // the whole warp
  const int b = t % bd.B;
  const float* row = ve + static_cast<size_t>(t) * bd.NA;
  const float l = lse_row_warp(row, bd.NA);
  const int n = bd.D * bd.NA;  // the sample's targets, branch by branch
  const float* mb = m + static_cast<size_t>(b) * n;
  double acc = 0;
  for (int k = static_cast<int>(threadIdx.x % 32); k < n; k += 32)
    acc -= static_cast<double>(mb[k]) * (row[k % bd.NA] - l);
  acc = warp_sum_double(acc);
  if (threadIdx.x % 32 == 0) part[t] = static_cast<float>(acc);
}

__global__ void __launch_bounds__(kMeanThreads)
    mean_kernel(const float* __restrict__ x, int n, double scale, double* __restrict__ out) {
  mean_block(x, n, scale, out);
}

}  // namespace

void mean_into(const float* x, int n, double scale, double* out, cudaStream_t stream) {
  mean_kernel<<<1, kMeanThreads, 0, stream>>>(x, n, scale, out);
  NANSCOPE_LAUNCH_CHECK();
}

HeadBuffers::HeadBuffers(const Dims& d)
    : q(static_cast<size_t>(d.B) * d.A),
      q_next(q.size()),
      astar(static_cast<size_t>(d.B) * d.D),
      m(static_cast<size_t>(d.B) * d.D * d.NA),
      c51(d.B),
      lse(static_cast<size_t>(d.B) * d.D),
      y(lse.size()),
      mse_part(d.B),
      aux_pre(static_cast<size_t>(d.B) * d.AH),
      aux_h(aux_pre.size()),
      pred(static_cast<size_t>(d.B) * d.AO),
      aux_loss(d.B),
      ve(static_cast<size_t>(d.E) * d.B * d.NA),
      ens_part(static_cast<size_t>(d.E) * d.B),
      total(1) {}

// ---- The forward's stages, each enqueued on the stream with no host copy ----

void c51_loss(const Dims& d, bool kl, const float* logp, const float* m,
              const std::int32_t* actions, float* c51, cudaStream_t stream) {
  c51_loss_kernel<<<grid(static_cast<size_t>(d.B) * 32), 128, 0, stream>>>(d, kl, logp, m, actions,
                                                                           c51);
  NANSCOPE_LAUNCH_CHECK();
}

void mse_lse_terms(const Dims& d, const float* q, const float* tlp, const std::int32_t* astar,
                   const float* ret, const float* done, const std::int32_t* actions, float* lse,
                   float* y, float* mse_part, cudaStream_t stream) {
  mse_lse_kernel<<<grid(static_cast<size_t>(d.B) * 32), 128, 0, stream>>>(
      d, q, tlp, astar, ret, done, actions, lse, y, mse_part);
  NANSCOPE_LAUNCH_CHECK();
}

void cql_mean(const Dims& d, const float* q, const float* lse, const std::int32_t* actions,
              double alpha_cql, double* out, cudaStream_t stream) {
  cql_mean_kernel<<<1, 256, 0, stream>>>(d, q, lse, actions, alpha_cql, out);
  NANSCOPE_LAUNCH_CHECK();
}

void aux_head(Blas& blas, const Dims& d, const ParamLayout& L, const float* p, const float* h2,
              float* pre, float* h, float* pred) {
  LayerGemm hidden = product(false, false, d.B, d.AH, d.H, h2, p + L[kAuxW1].offset, pre);
  hidden.bias = p + L[kAuxB1].offset;
  hidden.relu_out = h;
  blas.layer(hidden);
  LayerGemm out = product(false, false, d.B, d.AO, d.AH, h, p + L[kAuxW2].offset, pred);
  out.bias = p + L[kAuxB2].offset;
  blas.layer(out);
}

void aux_loss(const Dims& d, const float* pred, const float* next_bar, float* loss,
              cudaStream_t stream) {
  aux_loss_kernel<<<grid(d.B), 128, 0, stream>>>(d.B, d.AO, pred, next_bar, loss);
  NANSCOPE_LAUNCH_CHECK();
}

void ensemble_heads(Blas& blas, const Dims& d, const ParamLayout& L, const float* p, const float* z,
                    float* ve) {
  cudaStream_t s = blas.stream();
  // The heads in one launch: head e reads the shared z and its own ens.w[e].
  blas.gemm_batched(false, false, d.B, d.NA, d.Z, 1.f, z, 0, p + L[kEnsW].offset,
                    static_cast<long long>(d.Z) * d.NA, 0.f, ve, static_cast<long long>(d.B) * d.NA,
                    d.E);
  add_bias_blocks(ve, p + L[kEnsB].offset, d.E, d.B, d.NA, s);  // ens.b is [E, atoms]
}

void ensemble_ce(const Dims& d, const float* ve, const float* m, float* part, cudaStream_t stream) {
  ens_ce_kernel<<<grid(static_cast<size_t>(d.E) * d.B * 32), 128, 0, stream>>>(d, d.E, ve, m, part);
  NANSCOPE_LAUNCH_CHECK();
}

}  // namespace nanscope::cuda
