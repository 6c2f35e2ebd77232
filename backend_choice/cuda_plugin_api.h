// The contract between nanscope's programs and the CUDA backend plugin, libnanscope-cuda.so: the
// one C entry point the plugin exports and the table it returns. The programs never link CUDA; they
// load the plugin at run time (backend_choice/cuda_plugin.cpp) and build the CUDA backend through
// this table. Plugin and programs come from one source tree and one compiler, so the table passes
// C++ types (Config, Backend); a plugin is accepted only when its ABI number and its nanscope
// version both match the program's. The first two fields keep their place in every ABI.
#pragma once

#include <memory>
#include <string>

#include "model/backend.h"
#include "sdk_device_api.h"

namespace nanscope {

inline constexpr int kCudaPluginAbi = 2;
inline constexpr const char* kCudaPluginFile = "libnanscope-cuda.so";
inline constexpr const char* kCudaPluginEntry = "nanscope_cuda_plugin";

// What the CUDA runtime says of the machine's devices.
struct CudaPluginProbe {
  int count = 0;        // usable devices
  std::string name;     // the first device's name
  std::string error;    // why there is none (driver missing, no device, ...)
  std::string runtime;  // the CUDA runtime's version, "13.0"
};

struct CudaPluginApi {
  int abi;              // kCudaPluginAbi of the plugin's build
  const char* version;  // nanscope's version of the plugin's build
  CudaPluginProbe (*probe)();
  // Throws DeviceError when no usable device is present, ConfigError for float64.
  std::unique_ptr<Backend> (*make_backend)(const Config& config);
  // The SDK's device path (libnanscope's checks of a trainer's device buffers). Throws DeviceError
  // when CUDA refuses.
  std::unique_ptr<SdkDeviceChecks> (*make_sdk_device_checks)();
};

}  // namespace nanscope

// The plugin's entry point, looked up by name (kCudaPluginEntry).
extern "C" using NanscopeCudaPluginEntry = const nanscope::CudaPluginApi * (*)();

// Defines a plugin's entry point, returning `api` (a CudaPluginApi of static storage).
#define NANSCOPE_CUDA_PLUGIN_ENTRY(api)                                            \
  extern "C" __attribute__((visibility("default"))) const nanscope::CudaPluginApi* \
  nanscope_cuda_plugin() {                                                         \
    return &(api);                                                                 \
  }
