// The run file's budget at scale (bench/NOTES.md, "The run file at 1,000 slots"): an SDK trainer of
// S host slots of E floats each, health on, T steps, one NaN entering one slot half-way through.
// The same steps run twice:
//   recording: folds of F steps, so the run file is rewritten at each of T / F fold ends while the
//              trainer steps on;
//   one fold:  all T steps in one fold, so nothing is written while the steps are timed.
// Prints the median and worst step (begin, one ns_check of every slot, end), the time of each
// fold's end on the trainer's thread, the ratio of the two runs' total times, the run file's size
// per 10,000 steps and the process's peak resident memory.
//   bench_sdk_run_file [S slots, default 1000] [E floats, default 64] [T steps, default 10000]
//                      [F steps per fold, default 1000]
// bench_sdk_run_file_device (built where CUDA is) is the same trainer with device buffers (views
// of one allocation) checked on a CUDA stream: the SDK's device path, its bank as wide as the
// table.
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#ifdef NANSCOPE_BENCH_DEVICE
#include <cuda_runtime_api.h>
#endif

#include "bench_util.h"
#include "nanscope/nanscope.h"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

struct Timing {
  std::vector<double> step_ms, fold_end_ms;
  double total_ms = 0;
  std::uintmax_t file_bytes = 0;
};

bool refused(const char* what) {
  std::fprintf(stderr, "bench_sdk_run_file: %s: %s\n", what, ns_last_error());
  return false;
}

// The trainer's buffers: host vectors, or views of one device allocation written on its stream.
struct Buffers {
  int floats = 0;
  std::vector<std::vector<float>> host;
#ifdef NANSCOPE_BENCH_DEVICE
  float* device = nullptr;
  cudaStream_t stream = nullptr;
  float staged[2] = {NAN, 0.5f};  // what the fired element becomes (pageable: copied at once)
#endif
  Buffers(int slots, int n) : floats(n), host(static_cast<std::size_t>(slots)) {
    for (int i = 0; i < slots; ++i) {
      auto& b = host[static_cast<std::size_t>(i)];
      b.resize(static_cast<std::size_t>(floats));
      for (int k = 0; k < floats; ++k)
        b[static_cast<std::size_t>(k)] = std::sin(0.1f * static_cast<float>(i * floats + k));
    }
#ifdef NANSCOPE_BENCH_DEVICE
    const std::size_t bytes = static_cast<std::size_t>(floats) * sizeof(float);
    cudaStreamCreate(&stream);
    cudaMalloc(reinterpret_cast<void**>(&device), bytes * host.size());
    for (std::size_t i = 0; i < host.size(); ++i)
      cudaMemcpy(device + i * static_cast<std::size_t>(floats), host[i].data(), bytes,
                 cudaMemcpyHostToDevice);
#endif
  }
  ~Buffers() {
#ifdef NANSCOPE_BENCH_DEVICE
    cudaFree(device);
    cudaStreamDestroy(stream);
#endif
  }
  Buffers(const Buffers&) = delete;
  Buffers& operator=(const Buffers&) = delete;
  std::uint64_t address(int i) {
#ifdef NANSCOPE_BENCH_DEVICE
    return reinterpret_cast<std::uint64_t>(device + static_cast<std::size_t>(i) * floats);
#else
    return reinterpret_cast<std::uint64_t>(host[static_cast<std::size_t>(i)].data());
#endif
  }
  ns_memory memory() const {
#ifdef NANSCOPE_BENCH_DEVICE
    return NS_DEVICE;
#else
    return NS_HOST;
#endif
  }
  void* step_stream() {
#ifdef NANSCOPE_BENCH_DEVICE
    return stream;
#else
    return nullptr;
#endif
  }
  // The step's work: every buffer's first element (host), and the fired slot's second element.
  void step_work(int g, int fire_slot, bool fired) {
#ifdef NANSCOPE_BENCH_DEVICE
    (void)g;
    cudaMemcpyAsync(device + static_cast<std::size_t>(fire_slot) * floats + 1,
                    &staged[fired ? 0 : 1], sizeof(float), cudaMemcpyHostToDevice, stream);
#else
    for (auto& b : host) b[0] = 1e-3f * static_cast<float>(g % 97);
    host[static_cast<std::size_t>(fire_slot)][1] = fired ? NAN : 0.5f;
#endif
  }
};

// One run of the trainer into `dir`, `per_fold` steps a fold.
bool run(int slots, int floats, int steps, int per_fold, const fs::path& dir, Timing& t) {
  fs::remove_all(dir);
  const std::string run_dir = dir.string();
  ns_session_options o{};
  o.struct_size = sizeof o;
  o.run_dir = run_dir.c_str();
  o.trainer = "bench_wide";
  o.health = 1;
  o.capture = 1;
  o.overwrite = 1;
  ns_session s{};
  if (ns_session_open(&o, &s) != NS_OK) return refused("ns_session_open");
  Buffers buffers(slots, floats);
  std::vector<std::string> names(static_cast<std::size_t>(slots));
  std::vector<std::int32_t> ids(static_cast<std::size_t>(slots));
  for (int i = 0; i < slots; ++i) {
    names[static_cast<std::size_t>(i)] = "layer" + std::to_string(i);
    ns_slot_desc d{};
    d.struct_size = sizeof d;
    d.name = names[static_cast<std::size_t>(i)].c_str();
    d.order = i;
    d.count = floats;
    d.dtype = NS_F32;
    d.memory = buffers.memory();
    d.address = buffers.address(i);
    if (ns_slot_register(s, &d, &ids[static_cast<std::size_t>(i)]) != NS_OK)
      return refused("ns_slot_register");
  }
  const int fire_at = steps / 2, fire_slot = slots / 3;
  const auto t_run = Clock::now();
  for (int g = 0; g < steps; ++g) {
    const int fold = g / per_fold, step = g % per_fold;
    if (step == 0 && ns_fold_begin(s, fold) != NS_OK) return refused("ns_fold_begin");
    buffers.step_work(g, fire_slot, g >= fire_at);
    const auto t0 = Clock::now();
    ns_step_result r{};
    r.struct_size = sizeof r;
    void* stream = buffers.step_stream();
    if (ns_step_begin(s, step, stream) != NS_OK ||
        ns_check(s, ids.data(), slots, stream) != NS_OK || ns_step_end(s, &r) != NS_OK)
      return refused("a step");
    t.step_ms.push_back(ms_since(t0));
    const bool last_of_fold = step == per_fold - 1 || g == steps - 1;
    if (last_of_fold && g != steps - 1) {  // the last fold ends after the timing, in both runs
      const auto t1 = Clock::now();
      if (ns_fold_end(s, fold) != NS_OK) return refused("ns_fold_end");
      t.fold_end_ms.push_back(ms_since(t1));
    }
  }
  t.total_ms = ms_since(t_run);
  if (ns_fold_end(s, (steps - 1) / per_fold) != NS_OK || ns_session_close(s) != NS_OK)
    return refused("closing");
  t.file_bytes = fs::file_size(dir / "run.h5");
  return true;
}

double worst(const std::vector<double>& v) {
  double w = 0;
  for (double x : v) w = std::max(w, x);
  return w;
}

}  // namespace

int main(int argc, char** argv) {
  const int slots = argc > 1 ? std::atoi(argv[1]) : 1000;
  const int floats = argc > 2 ? std::atoi(argv[2]) : 64;
  const int steps = argc > 3 ? std::atoi(argv[3]) : 10000;
  const int per_fold = argc > 4 ? std::atoi(argv[4]) : 1000;
  if (slots < 1 || floats < 2 || steps < 2 || per_fold < 1) {
    std::fprintf(stderr, "usage: bench_sdk_run_file [slots] [floats] [steps] [steps per fold]\n");
    return 2;
  }
  const fs::path base =
      fs::temp_directory_path() / ("nanscope_bench_run_file_" + std::to_string(getpid()));
  Timing rec, one;
  if (!run(slots, floats, steps, steps, base / "one_fold", one) ||
      !run(slots, floats, steps, per_fold, base / "recording", rec))
    return 1;
  fs::remove_all(base);
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  using nanscope::bench::median;
  const auto mb_per_10k = [steps](std::uintmax_t bytes) {
    return static_cast<double>(bytes) / 1e6 * 10000.0 / steps;
  };
#ifdef NANSCOPE_BENCH_DEVICE
  const char* where = "device";
#else
  const char* where = "host";
#endif
  std::printf("bench sdk_run_file: %d %s slots of %d floats, health on, %d steps\n", slots, where,
              floats, steps);
  std::printf("  one fold:  step median %.3f ms, worst %.3f ms; total %.0f ms\n",
              median(one.step_ms), worst(one.step_ms), one.total_ms);
  std::printf(
      "  recording: step median %.3f ms, worst %.3f ms; %zu fold ends of %d steps: median %.2f "
      "ms, worst %.2f ms; total %.0f ms\n",
      median(rec.step_ms), worst(rec.step_ms), rec.fold_end_ms.size(), per_fold,
      rec.fold_end_ms.empty() ? 0.0 : median(rec.fold_end_ms), worst(rec.fold_end_ms),
      rec.total_ms);
  std::printf("  recording vs one fold: %.3fx the time (%+.1f%%)\n", rec.total_ms / one.total_ms,
              100.0 * (rec.total_ms / one.total_ms - 1));
  std::printf("  run file: %.1f MB per 10,000 steps (%.1f MB written); peak resident %.0f MB\n",
              mb_per_10k(rec.file_bytes), static_cast<double>(rec.file_bytes) / 1e6,
              static_cast<double>(u.ru_maxrss) / 1024.0);
  return 0;
}
