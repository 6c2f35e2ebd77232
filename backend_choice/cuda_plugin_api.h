// The contract between nanscope's programs and the CUDA backend plugin, libnanscope-cuda.so: the
// one C entry point the plugin exports and the table it returns. The programs never link CUDA; they
// load the plugin at run time (backend_choice/cuda_plugin.cpp) and build the CUDA backend through
// this table. Plugin and programs come from one source tree and one compiler, so the table passes
// C++ types (Config, Backend); a plugin is accepted only when its ABI number and its nanscope
// version both match the program's, and then only when the layout of what crosses dlopen
// (CudaPluginLayout: the slot table each side compiled in, the size of Config and of this table,
// the C++ library's string) is the program's, so that a plugin built from another tree of the same
// version is refused, naming both sides, never misread. The first two fields keep their place in
// every ABI.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "core/config.h"
#include "core/slot_table.h"
#include "model/backend.h"
#include "sdk_device_api.h"

namespace nanscope {

inline constexpr int kCudaPluginAbi = 4;
inline constexpr const char* kCudaPluginFile = "libnanscope-cuda.so";
inline constexpr const char* kCudaPluginEntry = "nanscope_cuda_plugin";

// What the CUDA runtime says of the machine's devices.
struct CudaPluginProbe {
  int count = 0;        // usable devices
  std::string name;     // the first device's name
  std::string error;    // why there is none (driver missing, no device, ...)
  std::string runtime;  // the CUDA runtime's version, "13.0"
};

// What each side was built with, of the types the table passes.
struct CudaPluginLayout {
  std::uint32_t slot_count = 0;        // kBuiltinSlotCount
  std::uint64_t slot_table = 0;        // builtin_slot_table_fingerprint()
  std::uint32_t config_bytes = 0;      // sizeof(Config)
  std::uint32_t api_bytes = 0;         // sizeof(CudaPluginApi)
  std::uint32_t std_string_bytes = 0;  // sizeof(std::string): the C++ library's ABI
  std::uint32_t sdk_device_bytes = 0;  // sizeof(SdkDeviceShape) + sizeof(SdkDeviceRead)
  bool operator==(const CudaPluginLayout&) const = default;
};

struct CudaPluginApi {
  int abi;                       // kCudaPluginAbi of the plugin's build
  const char* version;           // nanscope's version of the plugin's build
  CudaPluginLayout (*layout)();  // this_build_layout() of the plugin's build
  CudaPluginProbe (*probe)();
  // Throws DeviceError when no usable device is present, ConfigError for float64.
  std::unique_ptr<Backend> (*make_backend)(const Config& config);
  // The SDK's device path (libnanscope's checks of a trainer's device buffers). Throws DeviceError
  // when CUDA refuses.
  std::unique_ptr<SdkDeviceChecks> (*make_sdk_device_checks)();
};

// The layout this binary was compiled with (the plugin's build returns its own through `layout`).
inline CudaPluginLayout this_build_layout() {
  return {static_cast<std::uint32_t>(kBuiltinSlotCount),
          builtin_slot_table_fingerprint(),
          static_cast<std::uint32_t>(sizeof(Config)),
          static_cast<std::uint32_t>(sizeof(CudaPluginApi)),
          static_cast<std::uint32_t>(sizeof(std::string)),
          static_cast<std::uint32_t>(sizeof(SdkDeviceShape) + sizeof(SdkDeviceRead))};
}

inline std::string describe_layout(const CudaPluginLayout& l) {
  return fmt::format(
      "{} slots, slot table {:016x}, Config {} bytes, plugin table {} bytes, "
      "std::string {} bytes, SDK device types {} bytes",
      l.slot_count, l.slot_table, l.config_bytes, l.api_bytes, l.std_string_bytes,
      l.sdk_device_bytes);
}

}  // namespace nanscope

// The plugin's entry point, looked up by name (kCudaPluginEntry).
extern "C" using NanscopeCudaPluginEntry = const nanscope::CudaPluginApi * (*)();

// Defines a plugin's entry point, returning `api` (a CudaPluginApi of static storage).
#define NANSCOPE_CUDA_PLUGIN_ENTRY(api)                                            \
  extern "C" __attribute__((visibility("default"))) const nanscope::CudaPluginApi* \
  nanscope_cuda_plugin() {                                                         \
    return &(api);                                                                 \
  }
