#include "device_path.h"

#include <dlfcn.h>

#include <filesystem>
#include <mutex>

#include "cuda_plugin.h"
#include "nanscope/nanscope.h"

namespace nanscope::sdk {

namespace fs = std::filesystem;

namespace {

// Where this library is: the plugin is looked for beside it (the build tree's lib/nanscope, the
// package's NANSCOPE_SDK_TO_PLUGIN), then where the programs look.
std::vector<std::string> candidates() {
  std::vector<std::string> out;
  Dl_info info{};
  if (!std::getenv("NANSCOPE_CUDA_PLUGIN") &&
      dladdr(reinterpret_cast<const void*>(&ns_abi_version), &info) && info.dli_fname) {
    const fs::path dir = fs::absolute(info.dli_fname).parent_path();
    for (const char* rel : {"../lib/nanscope", NANSCOPE_SDK_TO_PLUGIN}) {
      const fs::path p = (dir / rel / kCudaPluginFile).lexically_normal();
      std::error_code ec;
      if (fs::exists(p, ec)) out.push_back(p.string());
    }
  }
  for (std::string& c : cuda_plugin_candidates()) out.push_back(std::move(c));
  return out;
}

const CudaPlugin& plugin() {
  static std::once_flag once;
  static CudaPlugin p;
  std::call_once(once, [] { p = load_cuda_plugin(candidates()); });
  return p;
}

}  // namespace

std::unique_ptr<SdkDeviceChecks> open_device_path(const char* call) {
  const CudaPlugin& p = plugin();
  if (!p.api || !p.api->make_sdk_device_checks)
    throw Error(NS_ERR_UNSUPPORTED,
                fmt::format("{}: device buffers are checked by nanscope's CUDA plugin, and {}",
                            call, p.api ? "this plugin has no SDK device path" : p.why));
  const CudaPluginProbe probe = p.api->probe();
  if (probe.count < 1)
    throw Error(NS_ERR_UNSUPPORTED,
                fmt::format("{}: device buffers need a CUDA device: {}", call, probe.error));
  return on_device(call, [&] { return p.api->make_sdk_device_checks(); });
}

}  // namespace nanscope::sdk
