// What a config asks of memory, computed from its sizes before anything is allocated: the slot
// buffers, the IQN and trunk work buffers, parameters with their target, gradients and Adam
// state, and the bars and fold transitions. A backend is built only when the estimate fits the
// machine (or the documented bound), so a config of a few hundred gigabytes is refused in a
// moment with the keys that drive its size, not by an allocator failure minutes later.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/config.h"

namespace nanscope {

struct MemoryPart {
  std::string what;  // "IQN buffers", "slot buffers", ...
  std::string keys;  // the config keys that drive it, as a product
  double bytes = 0;
};

struct MemoryEstimate {
  std::vector<MemoryPart> parts;  // largest first
  double host_bytes = 0;          // the CPU backend's (and the session's) host memory
  double device_bytes = 0;        // the CUDA backend's device memory
};

MemoryEstimate estimate_memory(const Config& config);

// The host memory a run may use: this machine's physical memory, capped by the documented bound
// (NANSCOPE_MAX_HOST_GIB in the environment lowers it, for tests and shared machines).
double host_memory_budget();

// Throws ConfigError (exit 78) when the estimate exceeds `available` bytes, naming the largest
// parts, their keys and the estimate. `where`: "host" or "device (NAME)".
void require_memory(const Config& config, double estimate_bytes, double available,
                    const std::string& where);
// require_memory for the host, with host_memory_budget().
void require_host_memory(const Config& config);

}  // namespace nanscope
