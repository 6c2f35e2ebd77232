// Device memory as a move-only RAII object (CUDA runtime only in the .cu files that use it).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <string>
#include <vector>

#include "core/errors.h"

namespace nanscope::cuda {

// Every CUDA runtime call and launch is checked; a failure is a DeviceError naming the call, the
// file and the line (the session then refuses work until it is reset).
inline void check(cudaError_t e, const char* what, const char* file, int line) {
  if (e == cudaSuccess) return;
  // No device (or none left): exit 69; any other failure mid-work: a device fault, exit 70.
  const bool gone = e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver ||
                    e == cudaErrorDevicesUnavailable || e == cudaErrorSystemNotReady ||
                    e == cudaErrorStubLibrary || e == cudaErrorInitializationError;
  throw DeviceError(
      std::string(file) + ":" + std::to_string(line) + ": " + what + ": " + cudaGetErrorString(e),
      gone ? ErrorKind::Device : ErrorKind::DeviceFault);
}
#define NANSCOPE_CUDA_CHECK(call) ::nanscope::cuda::check((call), #call, __FILE__, __LINE__)

template <class T>
class DeviceArray {
 public:
  DeviceArray() = default;
  explicit DeviceArray(std::size_t n) : n_(n) {
    if (n) NANSCOPE_CUDA_CHECK(cudaMalloc(&p_, n * sizeof(T)));
  }
  DeviceArray(DeviceArray&& o) noexcept : p_(o.p_), n_(o.n_) {
    o.p_ = nullptr;
    o.n_ = 0;
  }
  DeviceArray& operator=(DeviceArray&& o) noexcept {
    std::swap(p_, o.p_);
    std::swap(n_, o.n_);
    return *this;
  }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  ~DeviceArray() { cudaFree(p_); }

  T* get() { return p_; }
  const T* get() const { return p_; }
  std::size_t size() const { return n_; }  // the element count checks use
  void upload(const std::vector<T>& h) {
    if (h.size() != n_) throw InternalError("DeviceArray::upload: size mismatch");
    if (n_) NANSCOPE_CUDA_CHECK(cudaMemcpy(p_, h.data(), n_ * sizeof(T), cudaMemcpyHostToDevice));
  }
  std::vector<T> download() const {
    std::vector<T> h(n_);
    if (n_) NANSCOPE_CUDA_CHECK(cudaMemcpy(h.data(), p_, n_ * sizeof(T), cudaMemcpyDeviceToHost));
    return h;
  }

 private:
  T* p_ = nullptr;
  std::size_t n_ = 0;
};

}  // namespace nanscope::cuda
