#include "run_command.h"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>

#include "core/config_io.h"
#include "core/errors.h"
#include "core/version.h"
#include "session/session.h"
#ifdef NANSCOPE_HAVE_CUDA
#include "device_probe.h"
#endif

namespace nanscope::cli {
namespace {

Config resolve_config(const RunOptions& o) {
  ConfigBuilder builder;
  if (!o.config_file.empty()) builder.load_file(o.config_file);
  if (o.folds) builder.set(fmt::format("run.folds={}", *o.folds));
  if (o.steps_per_fold) builder.set(fmt::format("run.steps_per_fold={}", *o.steps_per_fold));
  if (o.seed) builder.set(fmt::format("run.seed={}", *o.seed));
  for (const auto& s : o.sets) builder.set(s);
  return builder.build();
}

// Only the CPU trainer backend exists in this version; `auto` says so when a GPU is present.
std::unique_ptr<Backend> make_backend(const std::string& choice, const Config& config, bool quiet) {
  std::string device_note = "no CUDA device";
#ifdef NANSCOPE_HAVE_CUDA
  auto probe = cuda::probe_devices();
  device_note = probe.count > 0 ? "CUDA device " + probe.name : probe.error;
#endif
  if (choice == "cuda")
    throw DeviceError(fmt::format("--backend cuda: the CUDA trainer backend is not in this "
                                  "version of nanscope ({})", device_note));
  if (choice == "auto" && !quiet)
    fmt::print(stderr, "nanscope-run: backend auto -> cpu ({}; CUDA trainer not in this version)\n",
               device_note);
  return make_cpu_backend(config);
}

}  // namespace

int run_command(const RunOptions& o) {
  const Config config = resolve_config(o);
  Session session(config, make_backend(o.backend, config, o.quiet));
  const bool tty = isatty(fileno(stderr)) && !o.quiet;
  if (!o.quiet)
    fmt::print(stderr, "nanscope-run {}: backend {} [{}], {} folds x {} steps, seed {}, bars: {} ({})\n",
               kVersion, session.backend().name(), session.backend().device_name(),
               config.run.folds, config.run.steps_per_fold, config.run.seed,
               session.bars().source, session.bars().bars.size());

  const auto start = std::chrono::steady_clock::now();
  session.run([&](const StepRecord& r) {
    if (tty && (r.step % 10 == 0 || r.step + 1 == config.run.steps_per_fold)) {
      const double secs =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      fmt::print(stderr, "\rfold {}/{} step {}/{} loss {:.4f} c51 {:.4f} ({:.1f} steps/s)   ",
                 r.fold, config.run.folds, r.step + 1, config.run.steps_per_fold, r.losses.total,
                 r.losses.c51, static_cast<double>(r.global_step + 1) / secs);
    }
    return false;
  });
  if (tty) fmt::print(stderr, "\n");
  if (!o.quiet) {
    fmt::print(stderr, "{:>4} {:>6} {:>12} {:>12} {:>10} {:>10}\n", "fold", "steps", "loss_first",
               "loss_last", "c51_first", "c51_last");
    for (const auto& f : session.folds())
      fmt::print(stderr, "{:>4} {:>6} {:>12.5f} {:>12.5f} {:>10.5f} {:>10.5f}\n", f.fold, f.steps,
                 f.loss_first, f.loss_last, f.c51_first, f.c51_last);
  }
  return 0;
}

}  // namespace nanscope::cli
