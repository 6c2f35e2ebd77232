#include "reference_math.h"

#include "../device_array.h"
#include "../forward_losses.h"
#include "../optimizer.h"

namespace nanscope::cuda::reference {
namespace {
__global__ void relu_kernel(const float* x, float* out, std::size_t n) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) {
    const float v = x[i];
    out[i] = v < 0.f ? 0.f : v;
  }
}
}  // namespace

void relu(const float* x, float* out, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  relu_kernel<<<static_cast<unsigned>((n + 255) / 256), 256, 0, stream>>>(x, out, n);
  NANSCOPE_LAUNCH_CHECK();
}

double device_mean(const float* x, int n, cudaStream_t stream) {
  DeviceArray<double> out(1);
  mean_into(x, n, 1.0, out.get(), stream);
  return out.download()[0];
}

void adam_step(DeviceOptimizer& opt, float* grads, float* params, float* adam, const float* norms,
               std::int64_t t) {
  DeviceArray<std::int64_t> t_dev(1);
  t_dev.upload({t - 1});  // the step advances it first
  opt.adam_step(grads, params, adam, norms, t_dev.get(), AdamGuard{});
  NANSCOPE_CUDA_CHECK(cudaDeviceSynchronize());  // t_dev goes away
}

}  // namespace nanscope::cuda::reference
