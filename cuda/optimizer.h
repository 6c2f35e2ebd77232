// The optimizer phase on the device: per-group and global gradient norms (slot 21), clipping (a
// NaN norm gives a NaN scale), Adam with bias correction, target sync. Same arithmetic as
// engine/model/cpu_optimizer.inl; deterministic reductions. Streams are cudaStream_t (the public
// cuda_backend.h stays CUDA-free).
#pragma once

#include <cstdint>
#include <memory>

#include "core/config.h"
#include "device_array.h"
#include "model/param_layout.h"
#include "slot_sink.h"

namespace nanscope::cuda {

// Where an Adam step leaves the values it started from (all null: nowhere).
struct AdamShadow {
  float* params = nullptr;
  float* adam = nullptr;
  std::int64_t* t = nullptr;
};

// What the guard reads on the device (both null: no guard): the step's status word (the checks
// before the update), and the gradient norms the clip reads when slot 21 is checked (their check
// runs with the update's own slots, after it: a non-finite norm is exactly slot 21 firing).
struct AdamGuard {
  const std::uint32_t* status = nullptr;
  const float* norms = nullptr;  // [1 + kGroupCount]
  // Out: 1 when the update ran, 0 when the guard skipped it, as decided before it ran (the step
  // record reports this word; it is never worked out again from the step's later flags).
  std::uint32_t* updated = nullptr;
};

// Where the update adds the non-finite values of what it leaves (slots 22 and 23 checked by their
// producer, skipped update or not), each sink on or off.
struct AdamChecks {
  SlotSink moments;  // [m | v]
  SlotSink params;
};

struct EntryTable;  // the entries' offsets, sizes, groups, learning rates and chunks (optimizer.cu)

class DeviceOptimizer {
 public:
  DeviceOptimizer(const ParamLayout& layout, const OptimConfig& optim,
                  cudaStream_t stream = nullptr);
  ~DeviceOptimizer();
  // norms = [global, encoder, bottleneck, value, adv, ens, iqn, aux] (slot 21 layout).
  void grad_norms(const float* grads, float* norms) { norms_of(grads, norms); }
  // The same norms of any array laid out as the parameters (the update, the weights).
  void norms_of(const float* x, float* norms);
  // Clips `grads` in place with the global norm just computed, then one Adam step on params and
  // adam = [m | v]. Adam's counter lives on the device (*t is incremented first, then used
  // for the bias correction); when `guard` finds a fired check (AdamGuard) nothing changes, t
  // included. Enqueue only, graph-capturable.
  // With `shadow`, the update also leaves the values it started from there (parameters, [m | v],
  // t), skipped or not: the state before the step, for first-fire capture, at the cost of the
  // writes alone (the update reads those values anyway). With `checks`, the kernel adds the
  // non-finite values of the parameters and moments it leaves into slots 22 and 23 (they are in
  // its registers: no second read of those buffers).
  // With `delta`, each parameter's change (new - old, 0 where the guard skips) is left there, for
  // the update_ratio watch.
  // `t_advanced`: advance_t below already ran for this update.
  void adam_step(float* grads, float* params, float* adam, const float* norms, std::int64_t* t,
                 const AdamGuard& guard, const AdamShadow& shadow = AdamShadow{},
                 const AdamChecks& checks = AdamChecks{}, float* delta = nullptr,
                 bool t_advanced = false);
  // Adam's counter and bias corrections for the next update (adam_step's first launch), on
  // `stream`: a captured step without the guard enqueues it beside the backward, since then it
  // reads nothing the step makes, and its update follows with t_advanced.
  void advance_t(std::int64_t* t, const AdamGuard& guard, const AdamShadow& shadow,
                 cudaStream_t stream);

 private:
  const ParamLayout& layout_;
  OptimConfig optim_;
  cudaStream_t stream_;
  std::unique_ptr<EntryTable> table_;      // built once: the kernels take it by value
  DeviceArray<double> entry_sq_;           // one per chunk of a parameter entry (sums of squares)
  DeviceArray<double> corrections_{2};     // Adam's bias corrections at the step's t (advance_t)
  DeviceArray<unsigned int> arrivals_{1};  // the norms' chunks done (zero between launches)
};

}  // namespace nanscope::cuda
