// A stand-in for libnanscope-cuda.so that the loader must refuse: built with FAKE_ABI and
// FAKE_VERSION of another nanscope (another version, or this version with another ABI number), or
// with FAKE_NO_ENTRY as a library without the entry point.
#include "cuda_plugin_api.h"

#ifndef FAKE_NO_ENTRY
namespace {
using nanscope::kCudaPluginAbi;
const nanscope::CudaPluginApi kApi{FAKE_ABI, FAKE_VERSION, nullptr, nullptr, nullptr};
}  // namespace

NANSCOPE_CUDA_PLUGIN_ENTRY(kApi)
#else
extern "C" __attribute__((visibility("default"))) int not_a_nanscope_plugin() {
  return 0;
}
#endif
