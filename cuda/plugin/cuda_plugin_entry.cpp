// libnanscope-cuda.so's one exported symbol: the table of backend_choice/cuda_plugin_api.h over the
// CUDA library. Everything else in the plugin (the CUDA library, the engine, the static CUDA
// runtime) stays hidden, so the program that loads it keeps its own copies apart.
#include "core/version.h"
#include "cuda_backend.h"
#include "cuda_plugin_api.h"
#include "device_probe.h"
#include "sdk_device_checks.h"

namespace {

nanscope::CudaPluginProbe probe() {
  const auto p = nanscope::cuda::probe_devices();
  return {p.count, p.name, p.error, p.runtime};
}

std::unique_ptr<nanscope::Backend> make_backend(const nanscope::Config& config) {
  return nanscope::cuda::make_cuda_backend(config);
}

std::unique_ptr<nanscope::SdkDeviceChecks> make_sdk_device_checks() {
  return nanscope::cuda::make_sdk_device_checks();
}

const nanscope::CudaPluginApi kApi{nanscope::kCudaPluginAbi,
                                   nanscope::kVersion,
                                   &nanscope::this_build_layout,
                                   &probe,
                                   &make_backend,
                                   &make_sdk_device_checks};

}  // namespace

NANSCOPE_CUDA_PLUGIN_ENTRY(kApi)
