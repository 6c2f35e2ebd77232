// The CUDA runtime's plumbing for the backend's .cu and .cpp files: device memory as a move-only
// RAII object, the checked-call and launch-check macros (graph-capture aware), NVTX ranges,
// GraphExec, and the environment switches.
#pragma once

#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <cstddef>
#include <cstdlib>
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

// The debug switch NANSCOPE_SYNC_LAUNCHES=1 (environment): every kernel launch is followed by a
// device synchronisation, so an asynchronous fault is reported at the launch that made it, not at
// a later copy. Not while a step graph is being captured (launches are recorded, not run, then).
// An environment switch, read the same way for every one: unset or empty gives `fallback`, "0"
// turns it off, anything else on.
inline bool env_switch(const char* name, bool fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  return std::string(v) != "0";
}
inline bool sync_launches() {
  static const bool on = env_switch("NANSCOPE_SYNC_LAUNCHES", false);
  return on;
}
inline thread_local bool capturing_graph = false;
inline void check_launch(const char* file, int line) {
  check(cudaGetLastError(), "kernel launch", file, line);
  if (sync_launches() && !capturing_graph)
    check(cudaDeviceSynchronize(), "kernel (NANSCOPE_SYNC_LAUNCHES)", file, line);
}
// After every kernel launch.
#define NANSCOPE_LAUNCH_CHECK() ::nanscope::cuda::check_launch(__FILE__, __LINE__)

// An instantiated CUDA graph, destroyed with its owner (or when replaced).
class GraphExec {
 public:
  GraphExec() = default;
  GraphExec(const GraphExec&) = delete;
  GraphExec& operator=(const GraphExec&) = delete;
  ~GraphExec() { reset(); }
  void reset() {
    if (exec_) cudaGraphExecDestroy(exec_);
    exec_ = nullptr;
  }
  // Instantiates `graph` in place of the current one.
  void instantiate(cudaGraph_t graph) {
    reset();
    NANSCOPE_CUDA_CHECK(cudaGraphInstantiate(&exec_, graph, 0));
  }
  explicit operator bool() const { return exec_ != nullptr; }
  cudaGraphExec_t get() const { return exec_; }

 private:
  cudaGraphExec_t exec_ = nullptr;
};

// A named range for Nsight Systems around a phase of the step (free when no tool listens).
class NvtxRange {
 public:
  explicit NvtxRange(const char* name) { nvtxRangePushA(name); }
  ~NvtxRange() { nvtxRangePop(); }
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
};

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
