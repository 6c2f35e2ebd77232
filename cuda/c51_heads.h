// The C51 part of the forward pass on the device: the network up to the aggregated log-probs
// (trunk, bottleneck, value and advantage heads, branching dueling aggregation + log_softmax),
// expected Q and the greedy sub-action per branch, and the C51 projection of the target
// distribution. Same maths and NaN rules as engine/model/cpu_forward.inl. Streams are cudaStream_t
// (the public cuda_backend.h stays CUDA-free).
#pragma once

#include <cstdint>
#include <functional>

#include "core/slot_table.h"
#include "dense.h"
#include "device_array.h"
#include "model/dims.h"
#include "model/param_layout.h"

namespace nanscope::cuda {

// One network's forward buffers for a batch (online on s, online on s', target on s').
struct NetBuffers {
  NetBuffers(const Dims& d);
  DeviceArray<float> pre1, h1, pre2, h2, z, v, adv, logp;
};

// Called right after a slot's producer is enqueued, before anything that reads the buffer: the
// backend's call sites (fault injection, then the check).
using SlotHook = std::function<void(int slot)>;

// Runs trunk -> heads -> aggregation/log_softmax for `x` [B, F] with the parameters at `params`
// (the flat layout of `layout`). `hook` (the online pass on s) sees slots 1-6 in order.
void net_forward(Blas& blas, const Dims& d, const ParamLayout& layout, const float* params,
                 const float* x, NetBuffers& out, const SlotHook& hook = {});

// Q[b, a] = sum_i zeta_i exp(logp[b, a, i]); astar[b, d] = argmax over the branch (ties low;
// -1 when the row holds a NaN).
void expected_q(const Dims& d, const float* logp, float* q, cudaStream_t stream);
void greedy_actions(const Dims& d, const float* q, std::int32_t* astar, cudaStream_t stream);
// Both in one launch: the same Q values and greedy sub-actions bit for bit (the online network on
// s', whose Q values only pick the actions).
void expected_q_greedy(const Dims& d, const float* logp, float* q, std::int32_t* astar,
                       cudaStream_t stream);

// m[b, d, i] from the target log-probs of astar[b, d], returns R and done (the batch layout's
// fields); NaN rows where astar is -1.
void c51_projection(const Dims& d, const float* target_logp, const std::int32_t* astar,
                    const float* ret, const float* done, float* m, cudaStream_t stream);

}  // namespace nanscope::cuda
