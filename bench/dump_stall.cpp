// bench/dump_stall: what a first-fire dump costs the training thread. The same default-config run
// twice in one process — without a run directory, and with one — where a transient fault at step 8
// makes ~30 slots fire for the first time (one dump); the firing steps' times are compared. The
// dump file is written by a worker thread; the training thread pays for the copies at the fire.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <vector>

#include "session/session.h"

using namespace nanscope;

namespace {
std::vector<double> step_times(bool record, const std::string& dir) {
  Config c;
  c.run.folds = 1;
  c.run.steps_per_fold = 12;
  c.halt.on_fire = HaltOnFire::Never;
  SessionOptions o;
  if (record) {
    o.out_dir = dir;
    std::filesystem::remove_all(dir);
  }
  o.injections.push_back(parse_injection("slot:h_s1@0:8:nan:all"));
  Session s(c, make_cpu_backend(c), o);
  std::vector<double> t;
  for (int i = 0; i < 12; ++i) {
    const auto a = std::chrono::steady_clock::now();
    s.step();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count() * 1e3);
  }
  s.write_run_file();
  if (record) std::filesystem::remove_all(dir);
  return t;
}
}  // namespace

int main(int argc, char** argv) {
  const std::string dir =
      argc > 1 ? argv[1]
               : (std::filesystem::temp_directory_path() / "nanscope_dump_stall").string();
  const auto off = step_times(false, dir);
  const auto on = step_times(true, dir);
  std::printf(
      "bench dump_stall: default config, fault at step 8 (h_s1, all elements), CPU backend\n");
  std::printf("%-6s %12s %12s %10s\n", "step", "no files ms", "recording ms", "extra ms");
  for (int i = 5; i < 12; ++i)
    std::printf("%-6d %12.1f %12.1f %+10.1f%s\n", i, off[i], on[i], on[i] - off[i],
                i == 8 ? "   <- first fires, dump queued" : "");
  return 0;
}
