// Asks the CUDA runtime for a usable device, without exposing CUDA headers.
#pragma once

#include <string>

namespace nanscope::cuda {

struct DeviceProbe {
  int count = 0;        // usable devices
  std::string name;     // the first device's name
  std::string error;    // why there is none (driver missing, no device, ...)
  std::string runtime;  // the CUDA runtime's version, "13.0"
};

DeviceProbe probe_devices();

}  // namespace nanscope::cuda
