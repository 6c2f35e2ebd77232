#include "cuda_plugin.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>

#include "core/version.h"

namespace nanscope {
namespace fs = std::filesystem;

namespace {

std::string program_dir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : exe.parent_path().string();
}

// A bare file name goes to the dynamic linker's search; a path must exist to be tried.
bool is_bare(const std::string& candidate) {
  return candidate.find('/') == std::string::npos;
}

std::string dl_error() {
  const char* e = dlerror();
  return e ? e : "unknown dlopen error";
}

}  // namespace

std::vector<std::string> cuda_plugin_candidates() {
  if (const char* forced = std::getenv("NANSCOPE_CUDA_PLUGIN"); forced && *forced) return {forced};
  std::vector<std::string> out;
  if (const std::string dir = program_dir(); !dir.empty())
    out.push_back((fs::path(dir) / ".." / NANSCOPE_PLUGIN_SUBDIR / kCudaPluginFile)
                      .lexically_normal()
                      .string());
  out.push_back(kCudaPluginFile);
  return out;
}

CudaPlugin load_cuda_plugin(const std::vector<std::string>& candidates) {
  CudaPlugin p;
  std::vector<std::string> absent;
  for (const std::string& candidate : candidates) {
    std::error_code ec;
    if (!is_bare(candidate) && !fs::exists(candidate, ec)) {
      absent.push_back(candidate);
      continue;
    }
    void* handle = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const std::string e = dl_error();
      // Not found on the search path: keep looking. Anything else (a library the plugin needs is
      // missing, a corrupt file) is the answer.
      if (is_bare(candidate) && e.rfind(candidate + ":", 0) == 0) {
        absent.push_back(candidate + " on the library search path");
        continue;
      }
      p.path = candidate;
      p.status = CudaPlugin::Status::Unloadable;
      p.why = fmt::format("the CUDA plugin {} cannot be loaded: {}", candidate, e);
      return p;
    }
    p.path = candidate;
    p.status = CudaPlugin::Status::Refused;
    const auto entry = reinterpret_cast<NanscopeCudaPluginEntry>(dlsym(handle, kCudaPluginEntry));
    if (!entry) {
      p.why = fmt::format("{} is not a nanscope CUDA plugin (no {} entry point)", candidate,
                          kCudaPluginEntry);
      dlclose(handle);  // refused: nothing of it stays in the process
      return p;
    }
    const CudaPluginApi* api = entry();
    if (!api || api->abi != kCudaPluginAbi || !api->version ||
        std::strcmp(api->version, kVersion) != 0) {
      p.why = fmt::format(
          "the CUDA plugin {} is for nanscope {} (plugin ABI {}), this is nanscope {} (ABI {}): "
          "install the plugin of this version",
          candidate, api && api->version ? api->version : "?", api ? api->abi : 0, kVersion,
          kCudaPluginAbi);
      dlclose(handle);
      return p;
    }
    const CudaPluginLayout theirs = api->layout ? api->layout() : CudaPluginLayout{};
    if (!(theirs == this_build_layout())) {
      p.why = fmt::format(
          "the CUDA plugin {} was built for another layout of what it is passed (plugin: {}; this "
          "program: {}): rebuild the plugin from this program's source tree",
          candidate, describe_layout(theirs), describe_layout(this_build_layout()));
      dlclose(handle);
      return p;
    }
    p.api = api;
    p.status = CudaPlugin::Status::Loaded;
    return p;
  }
  const char* forced = std::getenv("NANSCOPE_CUDA_PLUGIN");
  p.why = fmt::format("no CUDA plugin ({} not found: looked for {}{})", kCudaPluginFile,
                      fmt::join(absent, ", "),
                      forced && *forced ? ", named by NANSCOPE_CUDA_PLUGIN" : "");
  return p;
}

const CudaPlugin& cuda_plugin() {
  static const CudaPlugin plugin = load_cuda_plugin(cuda_plugin_candidates());
  return plugin;
}

const CudaPluginProbe* cuda_probe() {
  static const std::optional<CudaPluginProbe> probe =
      cuda_plugin().api ? std::optional(cuda_plugin().api->probe()) : std::nullopt;
  return probe ? &*probe : nullptr;
}

}  // namespace nanscope
