// A stand-in for libnanscope-cuda.so that the loader must refuse: built with FAKE_ABI and
// FAKE_VERSION of another nanscope (another version, or this version with another ABI number), with
// FAKE_OTHER_LAYOUT as this version and ABI built from a tree with one slot more, or with
// FAKE_NO_ENTRY as a library without the entry point.
#include "cuda_plugin_api.h"

#ifndef FAKE_NO_ENTRY
namespace {
using nanscope::kCudaPluginAbi;
nanscope::CudaPluginLayout layout() {
  nanscope::CudaPluginLayout l = nanscope::this_build_layout();
#ifdef FAKE_OTHER_LAYOUT
  l.slot_count += 1;
  l.slot_table ^= 0x5eed;
#endif
  return l;
}
const nanscope::CudaPluginApi kApi{FAKE_ABI, FAKE_VERSION, &layout, nullptr, nullptr, nullptr};
}  // namespace

NANSCOPE_CUDA_PLUGIN_ENTRY(kApi)
#else
extern "C" __attribute__((visibility("default"))) int not_a_nanscope_plugin() {
  return 0;
}
#endif
