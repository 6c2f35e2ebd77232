// The SDK's device path over the CUDA backend's device bank (backend_choice/sdk_device_api.h).
#pragma once

#include <memory>

#include "sdk_device_api.h"

namespace nanscope::cuda {

// Throws DeviceError when CUDA refuses (no device, out of memory).
std::unique_ptr<SdkDeviceChecks> make_sdk_device_checks();

}  // namespace nanscope::cuda
