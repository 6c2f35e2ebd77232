// bench/dump_write: a first-fire dump of the default config's slot set (every checked slot's
// buffer) plus the replay context, written uncompressed to a local disk, against a plain write of
// the same number of bytes to the same directory in the same run (the disk's ceiling here).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <vector>

#include "core/config_io.h"
#include "core/sentinel.h"
#include "core/version.h"
#include "io/dump_file.h"
#include "session/session.h"

#include "bench_util.h"

using namespace nanscope;
using nanscope::bench::median;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

int main(int argc, char** argv) {
  const std::string dir =
      argc > 1 ? argv[1] : (fs::temp_directory_path() / "nanscope_bench_dump").string();
  const int reps = argc > 2 ? std::atoi(argv[2]) : 9;
  fs::create_directories(dir);
  Config config;
  config.run.folds = 1;
  config.run.steps_per_fold = 2;
  Session session(config, make_cpu_backend(config));
  session.step();
  Backend& b = session.backend();

  DumpData d;
  d.config_toml = to_toml(config);
  d.backend = b.name();
  d.nanscope_version = kVersion;
  std::vector<double> capture_s;
  const SlotSetup setup = slot_setup(config);
  for (int r = 0; r < reps; ++r) {
    auto t0 = Clock::now();
    d.slots.clear();
    for (int s = 0; s < kBuiltinSlotCount; ++s) {
      if (!setup.checked(s)) continue;
      SlotView v = b.slot(s);
      DumpSlot ds;
      ds.index = s;
      ds.shape.assign(v.shape.begin(), v.shape.end());
      ds.values.assign(static_cast<const float*>(v.data),
                       static_cast<const float*>(v.data) + v.count);
      d.slots.push_back(std::move(ds));
    }
    b.read_state(d.state);
    d.batch = b.batch_context();
    capture_s.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  for (const ParamEntry* e : b.layout().existing()) {
    d.param_names.push_back(e->name);
    d.param_shapes.emplace_back(e->shape.begin(), e->shape.end());
  }

  const std::string path = dir + "/bench_dump.h5";
  std::vector<double> write_s, raw_s;
  std::uintmax_t bytes = 0;
  for (int r = 0; r < reps; ++r) {
    auto t0 = Clock::now();
    write_dump(path, d);
    write_s.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    bytes = fs::file_size(path);
    std::vector<char> block(bytes, 'x');
    t0 = Clock::now();
    std::FILE* f = std::fopen((dir + "/bench_raw.bin").c_str(), "wb");
    std::fwrite(block.data(), 1, block.size(), f);
    std::fflush(f);
    std::fclose(f);
    raw_s.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  fs::remove(path);
  fs::remove(dir + "/bench_raw.bin");
  const double gb = static_cast<double>(bytes) / 1e9;
  fmt::print("bench dump_write: default config, {} slots + context, {} reps, dir {}\n",
             d.slots.size(), reps, dir);
  fmt::print("dump file size            {:.1f} MB\n", static_cast<double>(bytes) / 1e6);
  fmt::print("capture (host copies)     {:.2f} ms\n", 1e3 * median(capture_s));
  fmt::print("write_dump                {:.2f} ms = {:.2f} GB/s\n", 1e3 * median(write_s),
             gb / median(write_s));
  fmt::print("plain write, same bytes   {:.2f} ms = {:.2f} GB/s (ceiling, same run)\n",
             1e3 * median(raw_s), gb / median(raw_s));
  fmt::print("ratio                     {:.2f} of the plain write\n",
             median(raw_s) / median(write_s));
  return 0;
}
