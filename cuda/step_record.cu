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

__global__ void pack_kernel(const std::uint32_t* status, const double* sc, const float* total, const float* clip,
                            const float* norms, StepStatusRecord* out) {
  out->status = *status;
  out->pad = 0;
  for (int i = 0; i < kScCount; ++i) out->scalars[i] = sc[i];
  out->total = total[0];
  out->grad_norm = clip[0];
  for (int g = 0; g < 7; ++g) out->group_norm[g] = norms[1 + g];
}

}  // namespace

void total_loss(const double* scalars, const LossWeightsD& w, float* total, void* stream) {
  total_kernel<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>(scalars, w, total);
  NANSCOPE_CUDA_CHECK(cudaGetLastError());
}

void pack_step_record(const std::uint32_t* status, const double* scalars, const float* total,
                      const float* clip_norms, const float* norms, StepStatusRecord* out, void* stream) {
  pack_kernel<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>(status, scalars, total, clip_norms, norms, out);
  NANSCOPE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace nanscope::cuda
