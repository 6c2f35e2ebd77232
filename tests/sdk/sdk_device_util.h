// What the SDK's device tests share (sdk_device_test.cu, sdk_device_wide_test.cu): a fresh
// directory per run, a checked CUDA call, bitwise equality of float arrays.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>

namespace fs = std::filesystem;

#define CUDA_OK(x) ASSERT_EQ((x), cudaSuccess) << #x

inline fs::path fresh_dir(const std::string& name) {
  const fs::path d =
      fs::temp_directory_path() / ("nanscope_sdk_device_" + name + "_" + std::to_string(getpid()));
  fs::remove_all(d);
  return d;
}

inline bool same_bits(const float* x, const float* y, std::size_t n) {
  return std::memcmp(x, y, n * sizeof(float)) == 0;
}
