#include <cuda_runtime.h>
#include <dlfcn.h>

#include <string>

#include "device_probe.h"

namespace nanscope::cuda {

DeviceProbe probe_devices() {
  DeviceProbe p;
  int runtime = 0;
  if (cudaRuntimeGetVersion(&runtime) == cudaSuccess)
    p.runtime = std::to_string(runtime / 1000) + "." + std::to_string(runtime % 1000 / 10);
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    p.error = cudaGetErrorString(err);
    // Without the driver at all the runtime says it is "insufficient": name what is missing.
    if (void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL))
      dlclose(driver);
    else
      p.error = "no NVIDIA driver (libcuda.so.1 not found; the CUDA runtime says: " + p.error + ")";
    cudaGetLastError();  // clear the sticky state left by a failed probe
    return p;
  }
  p.count = count;
  if (count > 0) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess) p.name = prop.name;
  } else {
    p.error = "no CUDA device";
  }
  return p;
}

}  // namespace nanscope::cuda
