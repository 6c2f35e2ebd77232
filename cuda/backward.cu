#include <algorithm>

#include "backward.h"
#include "launch_grid.cuh"
#include "step_lane_map.h"
#include "warp_rows.cuh"

namespace nanscope::cuda {
namespace {

// c51_grad with the MSE part, on the taken sub-action: (p - m)/(B D) + lmse 2 (Q - y)/(B D) p (zeta
// - Q).
__global__ void c51_grad(Dims bd, float lmse, const float* __restrict__ logp,
                         const float* __restrict__ m, const float* __restrict__ q,
                         const float* __restrict__ y, const std::int32_t* __restrict__ actions,
                         float* __restrict__ g) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;  // (b, d, i)
  if (t >= bd.B * bd.D * bd.NA) return;
  const int i = t % bd.NA, br = (t / bd.NA) % bd.D, b = t / (bd.NA * bd.D);
  const int a = bd.off[br] + actions[b * bd.D + br];
  const float coef = 1.f / static_cast<float>(bd.B * bd.D);
  const float qa = q[b * bd.A + a];
  const float dq = lmse * 2.f * (qa - y[b * bd.D + br]) * coef;
  const float p = expf(logp[(static_cast<size_t>(b) * bd.A + a) * bd.NA + i]);
  g[(static_cast<size_t>(b) * bd.A + a) * bd.NA + i] =
      (p - m[(static_cast<size_t>(b) * bd.D + br) * bd.NA + i]) * coef +
      dq * p * (static_cast<float>(bd.v_min + i * bd.dz) - qa);
}

// CQL: alpha (softmax(Q_d) - onehot(a_d)) / B through dQ/dl = p (zeta - Q), every sub-action.
__global__ void cql_grad(Dims bd, float alpha_b, const float* logp, const float* q,
                         const float* lse, const std::int32_t* actions, float* g) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;  // (b, a, i)
  if (t >= bd.B * bd.A * bd.NA) return;
  const int i = t % bd.NA, a = (t / bd.NA) % bd.A, b = t / (bd.NA * bd.A);
  const int br = a < bd.off[1] ? 0 : (a < bd.off[2] ? 1 : 2);
  const float qa = q[b * bd.A + a];
  const float sm = expf(qa - lse[b * bd.D + br]);
  const float dq = alpha_b * (sm - ((a - bd.off[br]) == actions[b * bd.D + br] ? 1.f : 0.f));
  const float p = expf(logp[static_cast<size_t>(t)]);
  g[t] = dq * p * (static_cast<float>(bd.v_min + i * bd.dz) - qa);
}

// d_value[b, i] = sum_a g; d_adv = g - mean over the branch (accumulated into d_adv when asked),
// for thread t = (b, i).
__device__ __forceinline__ void logits_backward_at(const Dims& bd, int t,
                                                   const float* __restrict__ g,
                                                   float* __restrict__ d_value,
                                                   float* __restrict__ d_adv, bool accumulate) {
  const int i = t % bd.NA, b = t / bd.NA;
  const float* gb = g + static_cast<size_t>(b) * bd.A * bd.NA;
  double acc = 0;
  for (int a = 0; a < bd.A; ++a) acc += gb[a * bd.NA + i];
  d_value[t] = static_cast<float>(acc);
  for (int br = 0; br < bd.D; ++br) {
    double mean = 0;
    for (int a = 0; a < bd.sub[br]; ++a) mean += gb[(bd.off[br] + a) * bd.NA + i];
    mean /= bd.sub[br];
    for (int a = 0; a < bd.sub[br]; ++a) {
      const size_t col = static_cast<size_t>(b) * bd.A * bd.NA + (bd.off[br] + a) * bd.NA + i;
      const float v = static_cast<float>(gb[(bd.off[br] + a) * bd.NA + i] - mean);
      d_adv[col] = accumulate ? d_adv[col] + v : v;
    }
  }
}

__global__ void logits_backward(Dims bd, const float* g, float* d_value, float* d_adv,
                                bool accumulate) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;  // (b, i)
  if (t < bd.B * bd.NA) logits_backward_at(bd, t, g, d_value, d_adv, accumulate);
}

// The C51 and CQL logit gradients' backward and their value sum in one launch (a captured step,
// where no host write stands between them): each thread runs the two launches' work for its
// (b, i) in their order, then the add, so every value is theirs bit for bit.
__global__ void logits_backward_both(Dims bd, const float* g_main, const float* g_cql,
                                     float* d_value_main, float* cql_dv, float* d_value,
                                     float* d_adv) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;  // (b, i)
  if (t >= bd.B * bd.NA) return;
  logits_backward_at(bd, t, g_main, d_value_main, d_adv, false);
  logits_backward_at(bd, t, g_cql, cql_dv, d_adv, true);
  d_value[t] = d_value_main[t] + cql_dv[t];
}

__global__ void add(const float* a, const float* b, float* out, size_t n) {
  const size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = a[i] + b[i];
}

// out += alpha * x
__global__ void axpy(float alpha, const float* x, float* out, size_t n) {
  const size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] += alpha * x[i];
}

// d ens / d ve_{e,b,i} = (D softmax(ve)_i - sum_d m_{b,d,i}) / (E B D), one thread per (e, b) row.
// One warp per (head, sample) row: the row's lse, then each atom's gradient (its branch sum of
// targets in branch order, as before).
__global__ void ens_grad(Dims bd, const float* ve, const float* m, float* d_ve) {
  const int t = static_cast<int>((blockIdx.x * blockDim.x + threadIdx.x) / 32);
  if (t >= bd.E * bd.B) return;  // the whole warp
  const int b = t % bd.B;
  const float* row = ve + static_cast<size_t>(t) * bd.NA;
  const float lse = lse_row_warp(row, bd.NA);
  const float coef = 1.f / static_cast<float>(bd.E * bd.B * bd.D);
  for (int i = static_cast<int>(threadIdx.x % 32); i < bd.NA; i += 32) {
    float msum = 0;
    for (int br = 0; br < bd.D; ++br) msum += m[(static_cast<size_t>(b) * bd.D + br) * bd.NA + i];
    d_ve[static_cast<size_t>(t) * bd.NA + i] =
        (static_cast<float>(bd.D) * expf(row[i] - lse) - msum) * coef;
  }
}

// Bias gradient: out[c] = scale * sum over rows of g[r, c], in a fixed order: chunks of
// kColChunk rows, each summed by 8 row lanes (rows y, y + 8, ...) folded in lane order, then the
// chunks in order. Float accumulation, deterministic for any launch; 32 columns per block, so the
// loads of a warp are one row's consecutive columns.
constexpr int kColChunk = 256;
__global__ void col_sum_chunks(const float* __restrict__ g, int rows, int cols, float scale,
                               int chunks, float* __restrict__ partial, float* __restrict__ out) {
  __shared__ float sh[8][33];
  const int c = blockIdx.x * 32 + threadIdx.x;
  const int r0 = blockIdx.y * kColChunk, r1 = min(rows, r0 + kColChunk);
  float acc = 0;
  if (c < cols)
    for (int r = r0 + threadIdx.y; r < r1; r += 8) acc += g[static_cast<size_t>(r) * cols + c];
  sh[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y != 0 || c >= cols) return;
  float sum = 0;
  for (int y = 0; y < 8; ++y) sum += sh[y][threadIdx.x];
  if (chunks == 1)
    out[c] = sum * scale;
  else
    partial[static_cast<size_t>(blockIdx.y) * cols + c] = sum;
}

__global__ void col_sum_fold(const float* __restrict__ partial, int chunks, int cols, float scale,
                             float* __restrict__ out) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= cols) return;
  float sum = 0;
  for (int k = 0; k < chunks; ++k) sum += partial[static_cast<size_t>(k) * cols + c];
  out[c] = sum * scale;
}

__global__ void aux_dy(const float* pred, const float* t, float scale, float* out, size_t n) {
  const size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = (pred[i] - t[i]) * scale;
}

__device__ float huber_grad(float d, float k) {
  return fabsf(d) > k ? (d > 0.f ? k : -k) : d;
}

__global__ void iqn_dq(Dims bd, const float* __restrict__ q, const float* __restrict__ tau,
                       const float* __restrict__ T, const std::int32_t* __restrict__ actions,
                       float* __restrict__ dq) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;  // (b, d, i)
  if (t >= bd.B * bd.D * bd.N) return;
  const int i = t % bd.N, br = (t / bd.N) % bd.D, b = t / (bd.N * bd.D);
  const int a = bd.off[br] + actions[b * bd.D + br];
  const float kappa = static_cast<float>(bd.kappa);
  const float coef = 1.f / static_cast<float>(bd.B * bd.D * bd.Np);
  const float qi = q[(static_cast<size_t>(b) * bd.N + i) * bd.A + a];
  double acc = 0;
  for (int j = 0; j < bd.Np; ++j) {
    const float delta = T[(b * bd.D + br) * bd.Np + j] - qi;
    const float w = fabsf(tau[b * bd.N + i] - (delta < 0.f ? 1.f : 0.f));
    acc -= static_cast<double>(w * huber_grad(delta, kappa) / kappa);
  }
  dq[(static_cast<size_t>(b) * bd.N + i) * bd.A + a] = static_cast<float>(acc) * coef;
}

// iqn_d_h_s2[b, h] = sum_n dpsi[b, n, h] phi[b, n, h]; dphi_pre = relu_bw(phi_pre, dpsi * h2).
// The pointers do not alias, so a thread's loads of several samples go out before their stores
// (the loop is bound by memory latency otherwise). With kPhiFromPre, phi is not read but made from
// phi_pre as bias_relu makes it (pre < 0 ? 0 : pre, NaN passing): the same values in a captured
// step, where nothing writes phi from the host after its producer, and a quarter less to read.
template <bool kPhiFromPre>
__global__ void iqn_dh(Dims bd, const float* __restrict__ dpsi, const float* __restrict__ phi,
                       const float* __restrict__ phi_pre, const float* __restrict__ h2,
                       float* __restrict__ dh, float* __restrict__ dphi_pre) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;  // (b, h)
  if (t >= bd.B * bd.H) return;
  const int h = t % bd.H, b = t / bd.H;
  const float h2_t = h2[t];
  float acc = 0;
#pragma unroll 8
  for (int k = 0; k < bd.N; ++k) {
    const size_t r = (static_cast<size_t>(b) * bd.N + k) * bd.H + h;
    const float pre = phi_pre[r];
    const float phi_r = kPhiFromPre ? (pre < 0.f ? 0.f : pre) : phi[r];
    acc += dpsi[r] * phi_r;
    const float g = dpsi[r] * h2_t;
    dphi_pre[r] = pre <= 0.f ? 0.f : g;
  }
  dh[t] = acc;
}

void at_slot(const SlotHook& hook, int slot) {
  if (hook) hook(slot);
}

void bias_grad(const float* g, int rows, int cols, float scale, float* out,
               DeviceArray<float>& scratch, cudaStream_t s) {
  const int chunks = (rows + kColChunk - 1) / kColChunk;
  if (chunks > 1 && static_cast<size_t>(chunks) * cols > scratch.size())
    throw InternalError("bias_grad: scratch too small");
  col_sum_chunks<<<dim3((cols + 31) / 32, chunks), dim3(32, 8), 0, s>>>(g, rows, cols, scale,
                                                                        chunks, scratch.get(), out);
  NANSCOPE_LAUNCH_CHECK();
  if (chunks == 1) return;
  col_sum_fold<<<grid(cols), 128, 0, s>>>(scratch.get(), chunks, cols, scale, out);
  NANSCOPE_LAUNCH_CHECK();
}

}  // namespace

BackwardBuffers::BackwardBuffers(const Dims& d, std::size_t param_total)
    : g_main(static_cast<size_t>(d.B) * d.A * d.NA),
      g_cql(g_main.size()),
      d_value_main(static_cast<size_t>(d.B) * d.NA),
      d_value(d_value_main.size()),
      d_adv(g_main.size()),
      cql_dv(d_value_main.size()),
      d_ve(static_cast<size_t>(d.E) * d.B * d.NA),
      dz(static_cast<size_t>(d.B) * d.Z),
      dz_parts((2 + static_cast<size_t>(d.E)) * dz.size()),
      bw(static_cast<size_t>(d.B) * d.H),
      d_aux_y(static_cast<size_t>(d.B) * d.AO),
      d_aux_h(static_cast<size_t>(d.B) * d.AH),
      aux_dh(bw.size()),
      iqn_dq(static_cast<size_t>(d.B) * d.N * d.A),
      iqn_dpsi(static_cast<size_t>(d.B) * d.N * d.H),
      iqn_dphi_pre(iqn_dpsi.size()),
      iqn_dh(bw.size()),
      trunk_m(bw.size()),
      d_pre2(bw.size()),
      d_h1(bw.size()),
      d_pre1(bw.size()),
      grads(param_total) {
  const size_t scratch = static_cast<size_t>((d.B * std::max(d.N, 1) + 255) / 256) *
                         std::max({d.H, d.Z, d.A * d.NA, d.NA, d.AO, d.AH, d.A});
  for (auto& c : col_scratch) c = DeviceArray<float>(scratch);
}

namespace {
// The backward's lanes (step_lane_map.h): each branch's chain stays on one lane, in the order it
// had on one stream; a lane waits for the buffers it reads.
constexpr int kMainLane = step_lane::kMain, kAdvLane = step_lane::kBwAdv,
              kIqnLane = step_lane::kBwIqn, kIqnGradLane = step_lane::kBwIqnGrad,
              kAuxLane = step_lane::kBwAux, kEnsLane = step_lane::kBwEns,
              kCqlLane = step_lane::kBwCql, kValueLane = step_lane::kBwValue;
}  // namespace

void backward_clear(const Dims& d, BackwardBuffers& b, cudaStream_t s) {
  NANSCOPE_CUDA_CHECK(cudaMemsetAsync(b.grads.get(), 0, b.grads.size() * sizeof(float), s));
  NANSCOPE_CUDA_CHECK(cudaMemsetAsync(b.g_main.get(), 0, b.g_main.size() * sizeof(float), s));
  if (d.iqn)
    NANSCOPE_CUDA_CHECK(cudaMemsetAsync(b.iqn_dq.get(), 0, b.iqn_dq.size() * sizeof(float), s));
}

void cql_gradient(const Dims& d, const LossWeights& w, const float* logp, const float* q,
                  const float* lse, const std::int32_t* actions, BackwardBuffers& b,
                  cudaStream_t s) {
  cql_grad<<<grid(b.g_cql.size()), 128, 0, s>>>(d, w.alpha_cql / static_cast<float>(d.B), logp, q,
                                                lse, actions, b.g_cql.get());
  NANSCOPE_LAUNCH_CHECK();
}

void backward_main(Lanes& lanes, const Dims& d, const ParamLayout& L, const float* p,
                   const ForwardState& f, const LossWeights& w, BackwardBuffers& b,
                   const SlotHook& hook, bool cql_done) {
  const Dims& bd = d;
  cudaStream_t s = lanes.stream(kMainLane);
  auto at = [&](ParamId id) { return p + L[id].offset; };
  auto gat = [&](ParamId id) { return b.grads.get() + L[id].offset; };
  const Lanes::Mark start = lanes.mark();
  // The CQL gradient and the ensemble's, beside the C51 gradient (they read the forward only).
  if (!cql_done) {
    lanes.wait(kCqlLane, start);
    cql_gradient(d, w, f.logp, f.q, f.cql_lse, f.actions, b, lanes.stream(kCqlLane));
  }
  lanes.wait(kEnsLane, start);
  ens_grad<<<grid(static_cast<size_t>(d.E) * d.B * 32), 128, 0, lanes.stream(kEnsLane)>>>(
      bd, f.ve, f.m, b.d_ve.get());
  NANSCOPE_LAUNCH_CHECK();
  c51_grad<<<grid(static_cast<size_t>(d.B) * d.D * d.NA), 128, 0, s>>>(
      bd, w.lambda_mse, f.logp, f.m, f.q, f.y, f.actions, b.g_main.get());
  NANSCOPE_LAUNCH_CHECK();
  const size_t rows = static_cast<size_t>(d.B) * d.NA;
  if (lanes.parallel()) {  // captured: one launch (no host write between the three)
    lanes.after(kMainLane, kCqlLane);
    logits_backward_both<<<grid(rows), 128, 0, s>>>(bd, b.g_main.get(), b.g_cql.get(),
                                                    b.d_value_main.get(), b.cql_dv.get(),
                                                    b.d_value.get(), b.d_adv.get());
    NANSCOPE_LAUNCH_CHECK();
    at_slot(hook, kCqlDValueLogits);
  } else {
    logits_backward<<<grid(rows), 128, 0, s>>>(bd, b.g_main.get(), b.d_value_main.get(),
                                               b.d_adv.get(), false);
    NANSCOPE_LAUNCH_CHECK();
    lanes.after(kMainLane, kCqlLane);
    logits_backward<<<grid(rows), 128, 0, s>>>(bd, b.g_cql.get(), b.cql_dv.get(), b.d_adv.get(),
                                               true);
    NANSCOPE_LAUNCH_CHECK();
    at_slot(hook, kCqlDValueLogits);
    add<<<grid(b.d_value.size()), 128, 0, s>>>(b.d_value_main.get(), b.cql_dv.get(),
                                               b.d_value.get(), b.d_value.size());
    NANSCOPE_LAUNCH_CHECK();
  }
  at_slot(hook, kDValueLogits);
  at_slot(hook, kDAdvLogits);
  const Lanes::Mark logits = lanes.mark();
  at_slot(hook, kEnsembleDLogits);
  // The branch concat's gradient dz = value + advantage + lambda_ens * ensemble heads, summed in
  // this order: the value and ensemble terms first on their heads' lanes (then those heads'
  // parameter gradients), the advantage term (the largest product) on the critical path, as one
  // launch with the sum of the terms when it fits (Blas::layer's parts); the advantage head's
  // parameter gradients beside it.
  const size_t bz = b.dz.size();
  float* part_value = b.dz_parts.get();
  float* part_ens = part_value + 2 * bz;  // the advantage term is part 1
  lanes.wait(kValueLane, logits);
  Blas& value = lanes.blas(kValueLane);
  value.layer(product(false, true, d.B, d.Z, d.NA, b.d_value.get(), at(kValW), part_value));
  const Lanes::Mark value_done = lanes.mark(kValueLane);
  value.layer(product(true, false, d.Z, d.NA, d.B, f.z, b.d_value.get(), gat(kValW)));
  bias_grad(b.d_value.get(), d.B, d.NA, 1.f, gat(kValB), b.col_scratch[kValueLane], value.stream());
  lanes.wait(kAdvLane, logits);
  Blas& adv = lanes.blas(kAdvLane);
  adv.layer(product(true, false, d.Z, d.A * d.NA, d.B, f.z, b.d_adv.get(), gat(kAdvW)));
  bias_grad(b.d_adv.get(), d.B, d.A * d.NA, 1.f, gat(kAdvB), b.col_scratch[kAdvLane], adv.stream());
  Lanes::Mark ens_done;
  {
    Blas& ens = lanes.blas(kEnsLane);  // after ens_grad on its lane
    const long long ve_stride = static_cast<long long>(d.B) * d.NA;
    const long long w_stride = static_cast<long long>(d.Z) * d.NA;
    ens.gemm_batched(false, true, d.B, d.Z, d.NA, w.lambda_ens, b.d_ve.get(), ve_stride, at(kEnsW),
                     w_stride, 0.f, part_ens, static_cast<long long>(bz), d.E);
    ens_done = lanes.mark(kEnsLane);
    ens.gemm_batched(true, false, d.Z, d.NA, d.B, w.lambda_ens, f.z, 0, b.d_ve.get(), ve_stride,
                     0.f, gat(kEnsW), w_stride, d.E);
    for (int e = 0; e < d.E; ++e)
      bias_grad(b.d_ve.get() + static_cast<size_t>(e) * d.B * d.NA, d.B, d.NA, w.lambda_ens,
                gat(kEnsB) + static_cast<size_t>(e) * d.NA, b.col_scratch[kEnsLane], ens.stream());
  }
  Blas& blas = lanes.blas(kMainLane);
  lanes.wait(kMainLane, value_done);
  lanes.wait(kMainLane, ens_done);
  LayerGemm concat =
      product(false, true, d.B, d.Z, d.A * d.NA, b.d_adv.get(), at(kAdvW), b.dz.get());
  concat.parts = b.dz_parts.get();
  concat.part_count = 2 + d.E;
  concat.product_part = 1;
  blas.layer(concat);
  at_slot(hook, kBnDConcat);
  lanes.wait(kCqlLane, lanes.mark());
  {
    Blas& side = lanes.blas(kCqlLane);
    side.layer(product(true, false, d.H, d.Z, d.B, f.h2, b.dz.get(), gat(kBnW)));
    bias_grad(b.dz.get(), d.B, d.Z, 1.f, gat(kBnB), b.col_scratch[kCqlLane], side.stream());
  }
  // Captured, trunk_gradient computes bw with the heads' sums in one launch; the same bits here.
  if (!lanes.parallel()) blas.layer(trunk_input(d, L, p, b));
  at_slot(hook, kBwDHS2Main);
}

void backward_aux(Lanes& lanes, Lanes::Mark start, const Dims& d, const ParamLayout& L,
                  const float* p, const ForwardState& f, const LossWeights& w, BackwardBuffers& b,
                  const SlotHook& hook) {
  auto at = [&](ParamId id) { return p + L[id].offset; };
  auto gat = [&](ParamId id) { return b.grads.get() + L[id].offset; };
  // The head's own chain reads the forward only: on its lane from the backward's start.
  lanes.wait(kAuxLane, start);
  Blas& blas = lanes.blas(kAuxLane);
  cudaStream_t s = blas.stream();
  aux_dy<<<grid(b.d_aux_y.size()), 128, 0, s>>>(f.aux_pred, f.next_bar,
                                                2.f / static_cast<float>(d.B * d.AO),
                                                b.d_aux_y.get(), b.d_aux_y.size());
  NANSCOPE_LAUNCH_CHECK();
  LayerGemm hidden =
      product(false, true, d.B, d.AH, d.AO, b.d_aux_y.get(), at(kAuxW2), b.d_aux_h.get());
  hidden.mask_pre = f.aux_pre;  // through the hidden relu, in place
  hidden.masked_out = b.d_aux_h.get();
  blas.layer(hidden);
  blas.layer(product(false, true, d.B, d.H, d.AH, b.d_aux_h.get(), at(kAuxW1), b.aux_dh.get()));
  at_slot(hook, kAuxDHS2Nb);
  const Lanes::Mark aux_dh = lanes.mark(kAuxLane);
  blas.gemm(true, false, d.AH, d.AO, d.B, w.lambda_aux, f.aux_h, b.d_aux_y.get(), 0.f, gat(kAuxW2));
  bias_grad(b.d_aux_y.get(), d.B, d.AO, w.lambda_aux, gat(kAuxB2), b.col_scratch[kAuxLane], s);
  blas.gemm(true, false, d.H, d.AH, d.B, w.lambda_aux, f.h2, b.d_aux_h.get(), 0.f, gat(kAuxW1));
  bias_grad(b.d_aux_h.get(), d.B, d.AH, w.lambda_aux, gat(kAuxB1), b.col_scratch[kAuxLane], s);
  // The aux SAXPY into bw_d_h_s2, on the backend's stream after the main branch.
  lanes.wait(kMainLane, aux_dh);
  if (!lanes.parallel()) {  // in a captured step, trunk_gradient makes it
    axpy<<<grid(b.bw.size()), 128, 0, lanes.stream(kMainLane)>>>(w.lambda_aux, b.aux_dh.get(),
                                                                 b.bw.get(), b.bw.size());
    NANSCOPE_LAUNCH_CHECK();
  }
  at_slot(hook, kBwDHS2Aux);
}

void backward_iqn(Lanes& lanes, Lanes::Mark start, const Dims& d, const ParamLayout& L,
                  const float* p, const ForwardState& f, const LossWeights& w, BackwardBuffers& b,
                  const SlotHook& hook) {
  if (!d.iqn) return;
  const Dims& bd = d;
  auto at = [&](ParamId id) { return p + L[id].offset; };
  auto gat = [&](ParamId id) { return b.grads.get() + L[id].offset; };
  lanes.wait(kIqnLane, start);  // the head's chain reads the forward only
  Blas& blas = lanes.blas(kIqnLane);
  cudaStream_t s = blas.stream();
  iqn_dq<<<grid(static_cast<size_t>(d.B) * d.D * d.N), 128, 0, s>>>(
      bd, f.iqn_q, f.tau, f.iqn_targets, f.actions, b.iqn_dq.get());
  NANSCOPE_LAUNCH_CHECK();
  at_slot(hook, kDBranchLogits);
  // The output layer's parameter gradients read iqn_dq alone: on a lane of their own beside the
  // rest of the head's chain, which goes on to the gradient norms.
  lanes.wait(kIqnGradLane, lanes.mark(kIqnLane));
  Blas& grads = lanes.blas(kIqnGradLane);
  grads.gemm(true, false, d.H, d.A, d.B * d.N, w.lambda_iqn, f.iqn_psi, b.iqn_dq.get(), 0.f,
             gat(kIqnOutW));
  bias_grad(b.iqn_dq.get(), d.B * d.N, d.A, w.lambda_iqn, gat(kIqnOutB),
            b.col_scratch[kIqnGradLane], grads.stream());
  blas.layer(
      product(false, true, d.B * d.N, d.H, d.A, b.iqn_dq.get(), at(kIqnOutW), b.iqn_dpsi.get()));
  if (lanes.parallel())  // captured: phi is relu(phi_pre), no host write between
    iqn_dh<true><<<grid(static_cast<size_t>(d.B) * d.H), 128, 0, s>>>(
        bd, b.iqn_dpsi.get(), nullptr, f.iqn_phi_pre, f.h2, b.iqn_dh.get(), b.iqn_dphi_pre.get());
  else
    iqn_dh<false><<<grid(static_cast<size_t>(d.B) * d.H), 128, 0, s>>>(
        bd, b.iqn_dpsi.get(), f.iqn_phi, f.iqn_phi_pre, f.h2, b.iqn_dh.get(), b.iqn_dphi_pre.get());
  NANSCOPE_LAUNCH_CHECK();
  at_slot(hook, kIqnDHS2);
  const Lanes::Mark iqn_dh = lanes.mark(kIqnLane);
  // The embedding's bias gradient beside its weight gradient (after the output layer's, on the
  // same lane and scratch).
  lanes.wait(kIqnGradLane, iqn_dh);
  bias_grad(b.iqn_dphi_pre.get(), d.B * d.N, d.H, w.lambda_iqn, gat(kIqnPhiB),
            b.col_scratch[kIqnGradLane], grads.stream());
  blas.gemm(true, false, d.C, d.H, d.B * d.N, w.lambda_iqn, f.iqn_cos, b.iqn_dphi_pre.get(), 0.f,
            gat(kIqnPhiW));
  // apply_iqn_trunk_gradient: iqn_trunk_m = bw + lambda_iqn * iqn_d_h_s2, copied back over bw; on
  // the backend's stream after the aux SAXPY.
  lanes.wait(kMainLane, iqn_dh);
  const bool separate = !lanes.parallel();  // in a captured step, trunk_gradient makes them
  cudaStream_t m = lanes.stream(kMainLane);
  if (separate) {
    NANSCOPE_CUDA_CHECK(cudaMemcpyAsync(b.trunk_m.get(), b.bw.get(), b.bw.size() * sizeof(float),
                                        cudaMemcpyDeviceToDevice, m));
    axpy<<<grid(b.trunk_m.size()), 128, 0, m>>>(w.lambda_iqn, b.iqn_dh.get(), b.trunk_m.get(),
                                                b.trunk_m.size());
    NANSCOPE_LAUNCH_CHECK();
  }
  at_slot(hook, kIqnTrunkM);
  if (separate)
    NANSCOPE_CUDA_CHECK(cudaMemcpyAsync(b.bw.get(), b.trunk_m.get(), b.bw.size() * sizeof(float),
                                        cudaMemcpyDeviceToDevice, m));
  at_slot(hook, kBwDHS2Iqn);
}

void backward_encoder(Lanes& lanes, const Dims& d, const ParamLayout& L, const float* p,
                      const ForwardState& f, BackwardBuffers& b) {
  Blas& blas = lanes.blas(kMainLane);
  cudaStream_t s = blas.stream();
  auto at = [&](ParamId id) { return p + L[id].offset; };
  auto gat = [&](ParamId id) { return b.grads.get() + L[id].offset; };
  if (!lanes.parallel()) relu_backward(f.pre2, b.bw.get(), b.d_pre2.get(), b.bw.size(), s);
  // Each layer's parameter gradients beside the chain that goes on down the encoder.
  lanes.wait(kEnsLane, lanes.mark());
  {
    Blas& side = lanes.blas(kEnsLane);
    side.layer(product(true, false, d.H, d.H, d.B, f.h1, b.d_pre2.get(), gat(kEncW2)));
    bias_grad(b.d_pre2.get(), d.B, d.H, 1.f, gat(kEncB2), b.col_scratch[kEnsLane], side.stream());
  }
  LayerGemm first = product(false, true, d.B, d.H, d.H, b.d_pre2.get(), at(kEncW2), b.d_h1.get());
  first.mask_pre = f.pre1;  // and on through the first layer's relu
  first.masked_out = b.d_pre1.get();
  blas.layer(first);
  // The first layer's bias gradient beside its weight gradient, the backward's last two launches.
  lanes.wait(kAdvLane, lanes.mark());
  bias_grad(b.d_pre1.get(), d.B, d.H, 1.f, gat(kEncB1), b.col_scratch[kAdvLane],
            lanes.stream(kAdvLane));
  blas.layer(product(true, false, d.F, d.H, d.B, f.s, b.d_pre1.get(), gat(kEncW1)));
}

LayerGemm trunk_input(const Dims& d, const ParamLayout& L, const float* p, BackwardBuffers& b) {
  LayerGemm g = product(false, true, d.B, d.H, d.Z, b.dz.get(), p + L[kBnW].offset, b.bw.get());
  g.cpu_order = true;  // the same sums with the trunk's steps as without them
  return g;
}

void trunk_gradient(Blas& blas, const Dims& d, const ParamLayout& L, const float* p,
                    const LossWeights& w, BackwardBuffers& b, float* main_copy, float* aux_copy,
                    const float* pre2) {
  LayerGemm g = trunk_input(d, L, p, b);
  TrunkSteps& t = g.trunk;
  t.main_copy = main_copy;
  t.lambda_aux = w.lambda_aux;
  t.aux = b.aux_dh.get();
  t.aux_copy = aux_copy;
  if (d.iqn) {
    t.lambda_iqn = w.lambda_iqn;
    t.iqn = b.iqn_dh.get();
    t.trunk_m = b.trunk_m.get();
  }
  t.pre = pre2;
  t.grad_pre = b.d_pre2.get();
  blas.layer(g);
}

}  // namespace nanscope::cuda
