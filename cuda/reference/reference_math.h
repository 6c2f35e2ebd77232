// Plain device references the GPU tests hold the fused production kernels to, and the helpers only
// tests read results through (reference_math.cu). For the GPU tests only (never in the programs).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace nanscope::cuda {
class DeviceOptimizer;
}

namespace nanscope::cuda::reference {

// out = x < 0 ? 0 : x elementwise (NaN passes, as in the production bias-and-relu), alone.
void relu(const float* x, float* out, std::size_t n, cudaStream_t stream);

// Mean of n floats in the production order (cuda::mean_into), read back to the host.
double device_mean(const float* x, int n, cudaStream_t stream);

// One Adam step with the step counter `t` given from the host (after its increment), no guard and
// no shadow: the production overload that reads t from the device, fed a device copy of t - 1.
void adam_step(DeviceOptimizer& opt, float* grads, float* params, float* adam, const float* norms,
               std::int64_t t);

}  // namespace nanscope::cuda::reference
