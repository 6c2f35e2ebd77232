#include "backend_choice.h"

#include <fmt/format.h>

#include <cstdio>

#include "core/errors.h"
#include "cuda_plugin.h"

namespace nanscope {

std::unique_ptr<Backend> choose_backend(BackendChoice choice, const Config& config, bool say) {
  if (choice == BackendChoice::Cpu) return make_cpu_backend(config);
  const CudaPlugin& plugin = cuda_plugin();
  if (choice == BackendChoice::Cuda) {
    if (!plugin.api) throw DeviceError("--backend cuda: " + plugin.why);
    return plugin.api->make_backend(config);
  }
  if (!plugin.api) {
    if (say) fmt::print(stderr, "nanscope: backend auto -> cpu ({})\n", plugin.why);
    return make_cpu_backend(config);
  }
  const CudaPluginProbe& probe = *cuda_probe();
  if (probe.count > 0 && config.model.precision == Precision::Float32) {
    if (say) fmt::print(stderr, "nanscope: backend auto -> cuda ({})\n", probe.name);
    return plugin.api->make_backend(config);
  }
  if (say)
    fmt::print(stderr, "nanscope: backend auto -> cpu ({})\n",
               probe.count > 0 ? "model.precision = float64 is the CPU backend's"
                               : "no usable CUDA device: " + probe.error);
  return make_cpu_backend(config);
}

std::string cuda_description() {
  const CudaPlugin& plugin = cuda_plugin();
  if (!plugin.api) return plugin.why;
  const CudaPluginProbe& probe = *cuda_probe();
  return fmt::format("CUDA plugin {}: CUDA runtime {}, {}", plugin.path,
                     probe.runtime.empty() ? "?" : probe.runtime,
                     probe.count > 0 ? probe.name : "no usable CUDA device: " + probe.error);
}

std::string cuda_summary() {
  const CudaPlugin& plugin = cuda_plugin();
  switch (plugin.status) {
    case CudaPlugin::Status::Absent:
      return "CUDA: no plugin";
    case CudaPlugin::Status::Unloadable:
      return "CUDA: plugin not loadable";
    case CudaPlugin::Status::Refused:
      return "CUDA: plugin refused";
    case CudaPlugin::Status::Loaded:
      break;
  }
  const CudaPluginProbe& probe = *cuda_probe();
  return probe.count > 0 ? "CUDA: " + probe.name : "CUDA: no device";
}

}  // namespace nanscope
