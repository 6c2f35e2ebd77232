// Finds and loads the CUDA backend plugin (libnanscope-cuda.so) once per process, and says why
// when there is none: not installed, a library it needs is missing, or it is of another version.
#pragma once

#include <string>
#include <vector>

#include "cuda_plugin_api.h"

namespace nanscope {

struct CudaPlugin {
  // Loaded; not found; found but not loadable (a library it needs is missing, a bad file); or
  // loaded but refused (not a plugin, another version).
  enum class Status { Loaded, Absent, Unloadable, Refused } status = Status::Absent;
  const CudaPluginApi* api = nullptr;  // null: no plugin, `why` says why
  std::string path;                    // the file loaded (or refused)
  std::string why;
};

// Where the plugin is looked for, in order: $NANSCOPE_CUDA_PLUGIN alone when it is set; otherwise
// lib/nanscope beside the program's folder (the build tree and the package), then the dynamic
// linker's search path (LD_LIBRARY_PATH, ld.so.conf).
std::vector<std::string> cuda_plugin_candidates();

// Tries the candidates in order; the first file that exists decides (loaded or refused).
CudaPlugin load_cuda_plugin(const std::vector<std::string>& candidates);

// The process's plugin, loaded on first use (thread-safe); never unloaded.
const CudaPlugin& cuda_plugin();

// The plugin's probe of the devices, made once; nullptr without a plugin.
const CudaPluginProbe* cuda_probe();

}  // namespace nanscope
