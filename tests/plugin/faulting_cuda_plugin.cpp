// A CUDA plugin whose backend fails as a CUDA call does in the middle of the work: the CPU backend
// underneath, and at fold 0, step 2 the step's first phase throws the DeviceError (kind
// DeviceFault, exit 70) that a failed cudaMemcpyAsync raises. For the test that nanscope-run exits
// 70 through the plugin path and keeps the steps that ran.
#include "core/errors.h"
#include "core/version.h"
#include "cuda_plugin_api.h"
#include "delegating_backend.h"

namespace {

class FaultingBackend : public nanscope::test::DelegatingBackend {
 public:
  using DelegatingBackend::DelegatingBackend;
  void run_phase(nanscope::Phase phase, const nanscope::StepKey& key) override {
    if (key.fold == 0 && key.step == 2)
      throw nanscope::DeviceError(
          "cudaMemcpyAsync(status record): an illegal memory access was encountered",
          nanscope::ErrorKind::DeviceFault);
    inner_->run_phase(phase, key);
  }
};

nanscope::CudaPluginProbe probe() {
  return {1, "faulting stand-in", "", "13.0"};
}

std::unique_ptr<nanscope::Backend> make_backend(const nanscope::Config& config) {
  return std::make_unique<FaultingBackend>(nanscope::make_cpu_backend(config));
}

const nanscope::CudaPluginApi kApi{nanscope::kCudaPluginAbi,
                                   nanscope::kVersion,
                                   &nanscope::this_build_layout,
                                   &probe,
                                   &make_backend,
                                   nullptr};

}  // namespace

NANSCOPE_CUDA_PLUGIN_ENTRY(kApi)
