// What the tests of the SDK's C API share: a fresh run directory, a session's options with
// health, guard and capture on, and a host slot's description.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <string>

#include "nanscope/nanscope.h"

namespace sdk_api_test {

namespace fs = std::filesystem;

inline fs::path fresh_dir(const std::string& name) {
  const fs::path d =
      fs::temp_directory_path() / ("nanscope_sdk_api_" + name + "_" + std::to_string(getpid()));
  fs::remove_all(d);
  return d;
}

inline ns_session_options options(const std::string& dir) {
  static std::string keep;
  keep = dir;
  ns_session_options o{};
  o.struct_size = sizeof o;
  o.run_dir = keep.c_str();
  o.trainer = "api_test";
  o.guard = 1;
  o.health = 1;
  o.capture = 1;
  o.overwrite = 1;
  return o;
}

inline ns_slot_desc desc(const char* name, int order, const float* buffer, std::int64_t count) {
  ns_slot_desc d{};
  d.struct_size = sizeof d;
  d.name = name;
  d.phase = "forward";
  d.order = order;
  d.count = count;
  d.dtype = NS_F32;
  d.memory = NS_HOST;
  d.address = reinterpret_cast<std::uint64_t>(buffer);
  d.state = buffer ? NS_SLOT_CHECKED : NS_SLOT_ABSENT;
  return d;
}

}  // namespace sdk_api_test
