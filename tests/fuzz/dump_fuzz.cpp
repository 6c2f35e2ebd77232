// libFuzzer harness: the dump reader and replay (`nanscope-run replay` on the CPU backend),
// contained as the product contains libhdf5 (hdf5_fuzz.h). Replay runs only for models small enough
// to keep the fuzzer fast.
#include "fuzz_support.h"
#include "hdf5_fuzz.h"
#include "io/dump_file.h"
#include "model/backend.h"
#include "model/memory_estimate.h"
#include "session/replay.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = nanscope::fuzz::as_file(data, size, ".h5");
  return nanscope::fuzz::read_contained([&] {
    const nanscope::DumpData d = nanscope::read_dump(path);
    const nanscope::Config c = nanscope::dump_config(d);
    if (nanscope::estimate_memory(c).host_bytes > 64e6) return;
    auto backend = nanscope::make_cpu_backend(c);
    (void)nanscope::replay_dump(d, *backend);
  });
}
