// Step-level device state: the loss scalars, the per-step status record (the sentinel status
// word, the loss terms, the total loss as its slot holds it, the gradient norms) kept for every
// step of the fold, the global step counter and the target sync. All of it reads the step from
// device memory, so a captured step graph does the right thing at every replay. Streams are
// cudaStream_t (the public cuda_backend.h stays CUDA-free).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "core/config.h"
#include "core/slot_health.h"
#include "sentinel_check.h"

namespace nanscope::cuda {

// Device doubles written by the forward's means, in this order.
enum StepScalar : int { kScC51 = 0, kScMse, kScCql, kScIqn, kScAux, kScEns, kScCount };

struct LossWeightsD {
  double lambda_mse, lambda_iqn, lambda_aux, lambda_ens;
  bool iqn;
};

struct StepStatusRecord {
  std::uint32_t status;   // OR of the step's check kinds
  std::uint32_t updated;  // 1: the step's update ran, 0: the guard skipped it (advance_t decided)
  double scalars[kScCount];
  double total;                    // the total_loss slot's value
  double grad_norm;                // the grad_norm slot's global entry (the norm clipping used)
  double group_norm[kGroupCount];  // the grad_norm slot's group entries
  // sentinel.health: every slot's health row (NaN: not measured), read with the flags.
  float health[kBuiltinSlotCount][kHealthFieldCount];
  float update_ratio[kGroupCount];  // NaN unless the update_ratio watch is on
};
// Copied byte for byte from the device (one record per step of the fold).
static_assert(sizeof(StepStatusRecord) == 8 + 8 * kScCount + 8 + 8 + 8 * kGroupCount +
                                              4 * kBuiltinSlotCount * kHealthFieldCount +
                                              4 * kGroupCount &&
              std::is_trivially_copyable_v<StepStatusRecord>);
static_assert(offsetof(StepStatusRecord, scalars) == 8 &&
              offsetof(StepStatusRecord, group_norm) == 8 + 8 * kScCount + 16);

// total[0] = c51 + lmse mse + cql + laux aux + lens ens (+ liqn iqn), rounded to float like the
// CPU backend's total_loss slot.
void total_loss(const double* scalars, const LossWeightsD& w, float* total, cudaStream_t stream);
// records[*step] = the step's record.
// With the bank's health on, its step health goes into the record; `update_norms` and
// `weight_norms` (each in slot 21's layout, null: none) give the update ratios.
struct StepHealthIn {
  bool on = false;
  DeviceStepHealth bank{};
  const float* update_norms = nullptr;
  const float* weight_norms = nullptr;
};
void pack_step_record(const std::uint32_t* status, const std::uint32_t* updated,
                      const double* scalars, const float* total, const float* norms,
                      const int* step, StepStatusRecord* records, const StepHealthIn& health,
                      cudaStream_t stream);
void set_global_step(std::int64_t* dst, std::int64_t value, cudaStream_t stream);
// target = params when (*global_step + 1) % every == 0.
void sync_target_if_due(const std::int64_t* global_step, int every, const float* params,
                        float* target, std::size_t n, cudaStream_t stream);

}  // namespace nanscope::cuda
