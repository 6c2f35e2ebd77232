// libFuzzer harness: the run-file reader (the workbench's offline open), its outline (a sweep's
// status) and its checkpoints (time travel, validate), contained as the product contains it
// (hdf5_fuzz.h).
#include "fuzz_support.h"
#include "hdf5_fuzz.h"
#include "io/run_file.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = nanscope::fuzz::as_file(data, size, ".h5");
  return nanscope::fuzz::read_contained([&] {
    const nanscope::RunFileData r = nanscope::read_run_file(path);
    for (std::size_t i = 0; i < r.checkpoints.size(); ++i)
      (void)nanscope::read_run_checkpoint(path, i);
    (void)nanscope::read_run_file_outline(path);
  });
}
