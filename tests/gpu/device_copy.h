// A host copy of `n` elements of device memory, after everything enqueued so far (the GPU tests
// read the sampler's and other pieces' buffers through it).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <vector>

#include "device_array.h"

namespace nanscope::test {

template <class T>
std::vector<T> device_copy(const T* dev, std::size_t n) {
  NANSCOPE_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<T> out(n);
  NANSCOPE_CUDA_CHECK(cudaMemcpy(out.data(), dev, n * sizeof(T), cudaMemcpyDeviceToHost));
  return out;
}

}  // namespace nanscope::test
