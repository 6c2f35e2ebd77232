// The step's loss scalars on the device and the one small record the host reads at the end of a
// step: the sentinel status word, the loss terms, the total loss as its slot holds it and the
// gradient norms. No CUDA types here.
#pragma once

#include <cstdint>

namespace nanscope::cuda {

// Device doubles written by the forward's means, in this order.
enum StepScalar : int { kScC51 = 0, kScMse, kScCql, kScIqn, kScAux, kScEns, kScCount };

struct LossWeightsD {
  double lambda_mse, lambda_iqn, lambda_aux, lambda_ens;
  bool iqn;
};

struct StepStatusRecord {
  std::uint32_t status;  // OR of the step's check kinds
  std::uint32_t pad;
  double scalars[kScCount];
  double total;          // the total_loss slot's value
  double grad_norm;      // the global norm clipping used
  double group_norm[7];  // the grad_norm slot's group entries
};

// total[0] = c51 + lmse mse + cql + laux aux + lens ens (+ liqn iqn), rounded to float like the
// CPU backend's total_loss slot.
void total_loss(const double* scalars, const LossWeightsD& w, float* total, void* stream);
void pack_step_record(const std::uint32_t* status, const double* scalars, const float* total,
                      const float* clip_norms, const float* norms, StepStatusRecord* out, void* stream);

}  // namespace nanscope::cuda
