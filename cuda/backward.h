// The backward pass on the device, in the spec's order (main, aux, iqn, encoder), mirroring
// engine/model/cpu_backward.inl: the head gradient buffers 27, 28, 30, 31 hold the gradients of
// their unweighted losses; each lambda is applied once where the gradient joins the shared path.
// Parameter gradients go to one flat buffer with the parameters' layout. Streams are
// cudaStream_t; the branches run on the step's lanes (stream_lanes.h).
#pragma once

#include <array>
#include <cstdint>

#include "forward_losses.h"
#include "stream_lanes.h"

namespace nanscope::cuda {

// Everything the backward reads from the forward of the step.
struct ForwardState {
  const float *s, *next_bar;  // batch fields
  const std::int32_t* actions;
  const float *h1, *pre1, *pre2, *h2, *z;        // online trunk on s
  const float *logp, *q, *m, *y, *cql_lse, *ve;  // C51 heads, projection, targets
  const float *tau, *iqn_cos, *iqn_phi_pre, *iqn_phi, *iqn_psi, *iqn_q, *iqn_targets;
  const float *aux_pre, *aux_h, *aux_pred;
};

struct BackwardBuffers {
  BackwardBuffers(const Dims& d, std::size_t param_total);
  DeviceArray<float> g_main, g_cql, d_value_main;
  DeviceArray<float> d_value, d_adv, cql_dv, d_ve, dz, bw;  // slots 24, 25, 29, 31, 32, bw_d_h_s2
  DeviceArray<float> dz_parts;  // the branch concat's terms [2 + E, B, Z], made side by side
  DeviceArray<float> d_aux_y, d_aux_h, aux_dh;                         // slot 30
  DeviceArray<float> iqn_dq, iqn_dpsi, iqn_dphi_pre, iqn_dh, trunk_m;  // slots 28, 27, 26
  DeviceArray<float> d_pre2, d_h1, d_pre1;
  DeviceArray<float> grads;  // flat, parameter layout
  // Bias gradients' row-chunk sums, one area per lane (lanes sum side by side).
  std::array<DeviceArray<float>, Lanes::kLanes> col_scratch;
};

struct LossWeights {
  float lambda_mse, alpha_cql, lambda_iqn, lambda_aux, lambda_ens;
};

// Zeroes the parameter gradients, the C51 head's logit gradients and the IQN quantile gradients,
// which the backward's kernels write in part: enqueued in the forward, beside it, so that no memset
// stands on the backward's chain.
void backward_clear(const Dims& d, BackwardBuffers& b, cudaStream_t stream);
// Each returns after enqueueing its phase; `bw` then holds bw_d_h_s2 at the phase's check moment
// (33 after main, 34 after aux, 35 after iqn), in the order of the lanes' stream (lane 0). `hook`
// sees each slot right after its producer, in the CPU backend's order: main 29, 24, 25, 31, 32,
// 33; aux 30, 34; iqn 28, 27, 26, 35. With the lanes on, the heads' branches and the parameter
// gradients run on side lanes: the aux and IQN chains from `start` (a mark on lane 0 before
// backward_main), joined into lane 0 where they add into bw_d_h_s2; the
// parameter gradients are joined by the caller (Lanes::join_all) before anything reads them.
// `cql_done`: cql_gradient (below) already ran for this step, joined into lane 0.
void backward_main(Lanes& lanes, const Dims& d, const ParamLayout& L, const float* params,
                   const ForwardState& f, const LossWeights& w, BackwardBuffers& b,
                   const SlotHook& hook = {}, bool cql_done = false);
// The CQL term's gradient with respect to the online logits, into b.g_cql: it reads the forward
// only (the online log-probabilities, Q, the CQL logsumexp and the actions), so a captured step
// launches it in the forward beside the rest, off the backward's chain; backward_main otherwise.
void cql_gradient(const Dims& d, const LossWeights& w, const float* logp, const float* q,
                  const float* lse, const std::int32_t* actions, BackwardBuffers& b,
                  cudaStream_t stream);
void backward_aux(Lanes& lanes, Lanes::Mark start, const Dims& d, const ParamLayout& L,
                  const float* params, const ForwardState& f, const LossWeights& w,
                  BackwardBuffers& b, const SlotHook& hook = {});
void backward_iqn(Lanes& lanes, Lanes::Mark start, const Dims& d, const ParamLayout& L,
                  const float* params, const ForwardState& f, const LossWeights& w,
                  BackwardBuffers& b, const SlotHook& hook = {});
// The bottleneck's input gradient, bw = dz W_bn^T (slot bw_d_h_s2's first state), summed in the
// CPU backend's order where the fused layer fits.
LayerGemm trunk_input(const Dims& d, const ParamLayout& L, const float* params, BackwardBuffers& b);
// In a captured step (lanes on), backward_main leaves bw to this one launch on lane 0 after the
// heads joined, and backward_aux and backward_iqn their sums into it: trunk_input's product, 33's
// copy (`main_copy`), the aux SAXPY, 34's copy (`aux_copy`), with the IQN head iqn_trunk_m and
// its copy over bw, bit for bit the separate launches' values (which the phase-by-phase step
// keeps: its observer may write a slot between them); and the gradient through the second
// layer's relu (`pre2`: its input), which backward_encoder then does not launch.
void trunk_gradient(Blas& blas, const Dims& d, const ParamLayout& L, const float* params,
                    const LossWeights& w, BackwardBuffers& b, float* main_copy, float* aux_copy,
                    const float* pre2);
void backward_encoder(Lanes& lanes, const Dims& d, const ParamLayout& L, const float* params,
                      const ForwardState& f, BackwardBuffers& b);

}  // namespace nanscope::cuda
