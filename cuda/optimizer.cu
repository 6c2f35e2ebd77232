#include <cmath>

#include "optimizer.h"

namespace nanscope::cuda {
namespace {

__global__ void sumsq(const float* __restrict__ g, size_t n, double* __restrict__ out) {
  __shared__ double sh[256];
  double acc = 0;
  for (size_t i = threadIdx.x; i < n; i += blockDim.x) acc += static_cast<double>(g[i]) * g[i];
  sh[threadIdx.x] = acc;
  __syncthreads();
  for (int s = 128; s > 0; s >>= 1) {
    if (threadIdx.x < s) sh[threadIdx.x] += sh[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) *out = sh[0];
}

// Group sums in the layout's order, then the global norm (as the CPU: sqrt of the summed squares).
__global__ void group_norms(const double* __restrict__ entry_sq, const int* __restrict__ entry_group, int entries,
                            float* __restrict__ norms) {
  if (threadIdx.x != 0) return;
  double group[kGroupCount] = {0, 0, 0, 0, 0, 0, 0};
  for (int e = 0; e < entries; ++e) group[entry_group[e]] += entry_sq[e];
  double global = 0;
  for (int g = 0; g < kGroupCount; ++g) {
    global += group[g];
    norms[1 + g] = static_cast<float>(sqrt(group[g]));
  }
  norms[0] = static_cast<float>(sqrt(global));
}

// The guard: a non-zero status word (the step's checks so far) skips the whole update on the
// device, t included; no host round trip, so it works inside a captured graph.
__device__ __forceinline__ bool guarded(const std::uint32_t* skip_if) { return skip_if && *skip_if != 0u; }

__global__ void advance_t(std::int64_t* t, const std::uint32_t* skip_if, std::int64_t* shadow_t) {
  if (shadow_t) *shadow_t = *t;
  if (!guarded(skip_if)) ++*t;
}

__global__ void adam_kernel(float* __restrict__ g, float* __restrict__ p, float* __restrict__ m, float* __restrict__ v,
                            size_t n, const float* __restrict__ norms, double max_norm, float b1, float b2,
                            const std::int64_t* __restrict__ t, double beta1, double beta2, double lr, double eps,
                            const std::uint32_t* skip_if, float* __restrict__ sp, float* __restrict__ sm,
                            float* __restrict__ sv) {
  const size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  if (sp) {
    sp[i] = p[i];
    sm[i] = m[i];
    sv[i] = v[i];
  }
  if (guarded(skip_if)) return;
  const double bc1 = 1.0 - pow(beta1, static_cast<double>(*t));
  const double bc2 = 1.0 - pow(beta2, static_cast<double>(*t));
  float gi = g[i];
  if (max_norm > 0) {
    const double norm = norms[0];
    const double scale = norm <= max_norm ? 1.0 : max_norm / norm;  // NaN norm -> NaN scale
    if (!(scale == 1.0)) gi = static_cast<float>(gi * scale);
    g[i] = gi;
  }
  const float mi = b1 * m[i] + (1.f - b1) * gi;
  const float vi = b2 * v[i] + (1.f - b2) * gi * gi;
  m[i] = mi;
  v[i] = vi;
  const double step = (static_cast<double>(mi) / bc1) / (sqrt(static_cast<double>(vi) / bc2) + eps);
  p[i] = static_cast<float>(p[i] - lr * step);
}

}  // namespace

DeviceOptimizer::DeviceOptimizer(const ParamLayout& layout, const OptimConfig& optim, void* stream)
    : layout_(layout), optim_(optim), stream_(stream), entry_sq_(layout.existing().size()),
      entry_group_(layout.existing().size()) {
  std::vector<int> groups;
  for (const ParamEntry* e : layout.existing()) groups.push_back(e->group);
  entry_group_.upload(groups);  // once: the step itself makes no host copies
}

void DeviceOptimizer::grad_norms(const float* grads, float* norms) {
  auto s = static_cast<cudaStream_t>(stream_);
  const auto entries = layout_.existing();
  for (std::size_t e = 0; e < entries.size(); ++e)
    sumsq<<<1, 256, 0, s>>>(grads + entries[e]->offset, entries[e]->count, entry_sq_.get() + e);
  group_norms<<<1, 32, 0, s>>>(entry_sq_.get(), entry_group_.get(), static_cast<int>(entries.size()), norms);
  NANSCOPE_CUDA_CHECK(cudaGetLastError());
}

void DeviceOptimizer::adam_step(float* grads, float* params, float* adam, const float* norms, std::int64_t t) {
  DeviceArray<std::int64_t> t_dev(1);
  t_dev.upload({t - 1});
  adam_step(grads, params, adam, norms, t_dev.get(), nullptr);
  NANSCOPE_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(stream_)));  // t_dev goes away
}

void DeviceOptimizer::adam_step(float* grads, float* params, float* adam, const float* norms, std::int64_t* t,
                                const std::uint32_t* skip_if, const AdamShadow& shadow) {
  auto s = static_cast<cudaStream_t>(stream_);
  advance_t<<<1, 1, 0, s>>>(t, skip_if, shadow.t);
  NANSCOPE_CUDA_CHECK(cudaGetLastError());
  const std::size_t total = layout_.total();
  for (const ParamEntry* e : layout_.existing()) {
    const std::size_t n = e->count;
    adam_kernel<<<static_cast<unsigned>((n + 255) / 256), 256, 0, s>>>(
        grads + e->offset, params + e->offset, adam + e->offset, adam + total + e->offset, n, norms,
        optim_.max_grad_norm, static_cast<float>(optim_.beta1), static_cast<float>(optim_.beta2), t, optim_.beta1,
        optim_.beta2, optim_.lr * optim_.lr_mult[e->group], optim_.eps, skip_if,
        shadow.params ? shadow.params + e->offset : nullptr, shadow.adam ? shadow.adam + e->offset : nullptr,
        shadow.adam ? shadow.adam + total + e->offset : nullptr);
  }
  NANSCOPE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace nanscope::cuda
