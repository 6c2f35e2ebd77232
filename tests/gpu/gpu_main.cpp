// GPU test runner: exit 77 (CTest "skipped") when the machine has no CUDA device or no NVIDIA
// driver at all; any other failure to reach the device (a driver too old for the runtime, a device
// the driver cannot initialise) fails the tests with the runtime's reason instead of hiding it.
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdio>

namespace {
bool driver_installed() {
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (driver) dlclose(driver);
  return driver != nullptr;
}
}  // namespace

int main(int argc, char** argv) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  const bool no_driver = e == cudaErrorInsufficientDriver && !driver_installed();
  if (e == cudaErrorNoDevice || no_driver || (e == cudaSuccess && count == 0)) {
    std::printf("no CUDA device%s: GPU tests skipped\n", no_driver ? " (no NVIDIA driver)" : "");
    return 77;
  }
  if (e != cudaSuccess) {
    std::fprintf(stderr, "GPU tests: the CUDA device cannot be reached: %s (%s)\n",
                 cudaGetErrorName(e), cudaGetErrorString(e));
    return 1;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
