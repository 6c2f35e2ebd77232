// The SDK's device path: the CUDA plugin's checks of device buffers (backend_choice/
// sdk_device_api.h, the CUDA backend's own device bank), loaded on the first device slot. Every
// failure inside CUDA comes back as an Error with NS_ERR_DEVICE and CUDA's message.
#pragma once

#include <memory>
#include <string>

#include <fmt/format.h>

#include "sdk_device_api.h"
#include "sdk_session.h"

namespace nanscope::sdk {

// The plugin's device checks; NS_ERR_UNSUPPORTED saying why when there is no usable plugin or
// device (`call` names the SDK call that needed it).
std::unique_ptr<SdkDeviceChecks> open_device_path(const char* call);

// Runs `f()` with what CUDA threw turned into NS_ERR_DEVICE naming `call`.
template <class F>
auto on_device(const char* call, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    throw Error(NS_ERR_DEVICE, fmt::format("{}: CUDA: {}", call, e.what()));
  }
}

}  // namespace nanscope::sdk
