#include "device_array.h"
#include "step_record.h"

namespace nanscope::cuda {
namespace {

__global__ void total_kernel(const double* sc, LossWeightsD w, float* total) {
  double t = sc[kScC51] + w.lambda_mse * sc[kScMse] + sc[kScCql] + w.lambda_aux * sc[kScAux] +
             w.lambda_ens * sc[kScEns];
  if (w.iqn) t += w.lambda_iqn * sc[kScIqn];
  total[0] = static_cast<float>(t);
}

// One thread per health word; thread 0 also packs the rest.
__global__ void pack_kernel(const std::uint32_t* status, const std::uint32_t* updated,
                            const double* sc, const float* total, const float* norms,
                            const int* step, StepStatusRecord* records, StepHealthIn h) {
  StepStatusRecord* out = records + *step;
  const int i = threadIdx.x;
  const float nan = __int_as_float(0x7fc00000);
  if (i < kBuiltinSlotCount * kHealthFieldCount) {
    const int slot = i / kHealthFieldCount, field = i % kHealthFieldCount;
    float v = h.on ? h.bank.rows[i] : nan;
    if (h.on && field == kHealthMassError && h.bank.mass_bits[slot] != 0u)
      v = __uint_as_float(h.bank.mass_bits[slot] - 1u);
    if (h.on && field == kHealthCrossing && slot == kIqnQuantiles && h.bank.crossings[1] != 0ull)
      v = static_cast<float>(static_cast<double>(h.bank.crossings[0]) /
                             static_cast<double>(h.bank.crossings[1]));
    out->health[slot][field] = v;
  }
  if (i < kGroupCount)
    out->update_ratio[i] = h.update_norms ? h.update_norms[1 + i] / h.weight_norms[1 + i] : nan;
  if (i != 0) return;
  out->status = *status;
  out->updated = *updated;
  for (int i = 0; i < kScCount; ++i) out->scalars[i] = sc[i];
  out->total = total[0];
  out->grad_norm = norms[0];
  for (int g = 0; g < kGroupCount; ++g) out->group_norm[g] = norms[1 + g];
}

__global__ void set_i64(std::int64_t* dst, std::int64_t v) {
  *dst = v;
}

__global__ void sync_target_kernel(const std::int64_t* gstep, int every,
                                   const float* __restrict__ p, float* __restrict__ t, size_t n) {
  if ((*gstep + 1) % every != 0) return;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    t[i] = p[i];
}

}  // namespace

void total_loss(const double* scalars, const LossWeightsD& w, float* total, cudaStream_t stream) {
  total_kernel<<<1, 1, 0, stream>>>(scalars, w, total);
  NANSCOPE_LAUNCH_CHECK();
}

void pack_step_record(const std::uint32_t* status, const std::uint32_t* updated,
                      const double* scalars, const float* total, const float* norms,
                      const int* step, StepStatusRecord* records, const StepHealthIn& health,
                      cudaStream_t stream) {
  pack_kernel<<<1, kBuiltinSlotCount * kHealthFieldCount, 0, stream>>>(
      status, updated, scalars, total, norms, step, records, health);
  NANSCOPE_LAUNCH_CHECK();
}

void set_global_step(std::int64_t* dst, std::int64_t value, cudaStream_t stream) {
  set_i64<<<1, 1, 0, stream>>>(dst, value);
  NANSCOPE_LAUNCH_CHECK();
}

void sync_target_if_due(const std::int64_t* global_step, int every, const float* params,
                        float* target, std::size_t n, cudaStream_t stream) {
  sync_target_kernel<<<264, 256, 0, stream>>>(global_step, every, params, target, n);
  NANSCOPE_LAUNCH_CHECK();
}

}  // namespace nanscope::cuda
