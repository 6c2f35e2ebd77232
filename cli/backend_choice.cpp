#include "backend_choice.h"

#include <fmt/format.h>

#include <cstdio>

#include "core/errors.h"
#ifdef NANSCOPE_HAVE_CUDA
#include "device_probe.h"
#endif

namespace nanscope::cli {

std::unique_ptr<Backend> choose_backend(const std::string& choice, const Config& config, bool say) {
  std::string device_note = "no CUDA library in this build";
#ifdef NANSCOPE_HAVE_CUDA
  auto probe = cuda::probe_devices();
  device_note = probe.count > 0 ? "CUDA device " + probe.name : "no usable CUDA device: " + probe.error;
#endif
  if (choice == "cuda")
    throw DeviceError(fmt::format("--backend cuda: the CUDA trainer backend is not in this "
                                  "version of nanscope ({})", device_note));
  if (choice == "auto" && say)
    fmt::print(stderr, "nanscope-run: backend auto -> cpu ({}; no CUDA trainer in this version)\n",
               device_note);
  return make_cpu_backend(config);
}

}  // namespace nanscope::cli
