// The SDK's host check against the engine's own (bench/NOTES.md, "The SDK's host path"): one
// float32 buffer of N elements, with health on, checked K times through ns_check (a session, one
// slot, one step per check: the copy through the kernel, the scan and health of the copy, the
// fold's bookkeeping) and K times by check_host_buffer on the buffer itself (what the CPU
// backend's bank runs). Prints the medians and their ratio.
//   bench_sdk_check [N elements, default 4194304] [K, default 41]
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "bench_util.h"
#include "model/host_check.h"
#include "nanscope/nanscope.h"

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

int refused(const char* what) {
  std::fprintf(stderr, "bench_sdk_check: %s: %s\n", what, ns_last_error());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  const long n = argc > 1 ? std::atol(argv[1]) : 4194304;
  const int k = argc > 2 ? std::atoi(argv[2]) : 41;
  if (n < 1 || k < 1) {
    std::fprintf(stderr, "usage: bench_sdk_check [N elements] [K checks]\n");
    return 2;
  }
  std::vector<float> buffer(static_cast<std::size_t>(n));
  for (long i = 0; i < n; ++i)
    buffer[static_cast<std::size_t>(i)] = 1e-3f * static_cast<float>(i % 1000);

  const std::string dir =
      (std::filesystem::temp_directory_path() / ("nanscope_bench_sdk_" + std::to_string(getpid())))
          .string();
  ns_session_options o{};
  o.struct_size = sizeof o;
  o.run_dir = dir.c_str();
  o.trainer = "bench";
  o.health = 1;
  o.overwrite = 1;
  ns_session s{};
  if (ns_session_open(&o, &s) != NS_OK) return refused("ns_session_open");
  ns_slot_desc d{};
  d.struct_size = sizeof d;
  d.name = "buffer";
  d.count = n;
  d.dtype = NS_F32;
  d.address = reinterpret_cast<std::uint64_t>(buffer.data());
  std::int32_t id = -1;
  if (ns_slot_register(s, &d, &id) != NS_OK) return refused("ns_slot_register");
  if (ns_fold_begin(s, 0) != NS_OK) return refused("ns_fold_begin");

  std::vector<double> sdk_ms, engine_ms;
  nanscope::SlotView view;
  view.data = buffer.data();
  view.count = static_cast<std::size_t>(n);
  view.shape = {n};
  nanscope::HealthRow row{};
  for (int i = 0; i < k; ++i) {  // alternating, so that both see the same machine
    ns_step_result r{};
    r.struct_size = sizeof r;
    if (ns_step_begin(s, i, nullptr) != NS_OK) return refused("ns_step_begin");
    auto t0 = std::chrono::steady_clock::now();
    if (ns_check(s, &id, 1, nullptr) != NS_OK) return refused("ns_check");
    sdk_ms.push_back(ms_since(t0));
    if (ns_step_end(s, &r) != NS_OK) return refused("ns_step_end");
    t0 = std::chrono::steady_clock::now();
    const auto c = nanscope::check_host_buffer(view, true, row);
    engine_ms.push_back(ms_since(t0));
    if (c.nonfinite != 0 || r.fired) return refused("a clean buffer fired");
  }
  if (ns_fold_end(s, 0) != NS_OK || ns_session_close(s) != NS_OK) return refused("closing");
  std::filesystem::remove_all(dir);
  const double a = nanscope::bench::median(sdk_ms), b = nanscope::bench::median(engine_ms);
  std::printf(
      "bench sdk_check: %ld float32 elements (%.1f MiB), health on, median of %d: ns_check %.3f "
      "ms, check_host_buffer %.3f ms; the SDK's host path costs %.2fx the engine's check\n",
      n, static_cast<double>(n) * 4 / 1048576.0, k, a, b, a / b);
  return 0;
}
