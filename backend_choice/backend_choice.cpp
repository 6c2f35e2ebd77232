#include "backend_choice.h"

#include <fmt/format.h>

#include <cstdio>

#include "core/errors.h"
#ifdef NANSCOPE_HAVE_CUDA
#include "cuda_backend.h"
#include "device_probe.h"
#endif

namespace nanscope {

std::unique_ptr<Backend> choose_backend(const std::string& choice, const Config& config, bool say) {
  if (choice == "cpu") return make_cpu_backend(config);
#ifdef NANSCOPE_HAVE_CUDA
  if (choice == "cuda") return cuda::make_cuda_backend(config);
  const auto probe = cuda::probe_devices();
  if (probe.count > 0 && config.model.precision == Precision::Float32) {
    if (say) fmt::print(stderr, "nanscope: backend auto -> cuda ({})\n", probe.name);
    return cuda::make_cuda_backend(config);
  }
  if (say)
    fmt::print(stderr, "nanscope: backend auto -> cpu ({})\n",
               probe.count > 0 ? "model.precision = float64 is the CPU backend's"
                               : "no usable CUDA device: " + probe.error);
#else
  if (choice == "cuda")
    throw DeviceError(
        "--backend cuda: this build of nanscope has no CUDA library (configure with "
        "NANSCOPE_CUDA=ON)");
  if (say) fmt::print(stderr, "nanscope: backend auto -> cpu (this build has no CUDA library)\n");
#endif
  return make_cpu_backend(config);
}

std::string cuda_description() {
#ifdef NANSCOPE_HAVE_CUDA
  const auto probe = cuda::probe_devices();
  return fmt::format("CUDA runtime {}, {}", probe.runtime.empty() ? "?" : probe.runtime,
                     probe.count > 0 ? probe.name : probe.error);
#else
  return "no CUDA in this build";
#endif
}

}  // namespace nanscope
