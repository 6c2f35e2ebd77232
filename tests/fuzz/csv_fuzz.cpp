// libFuzzer harness: the CSV bar reader (data.csv). Bad input is a nanscope::Error; anything else
// (a crash, a sanitizer report, a hang) is a bug.
#include "core/errors.h"
#include "data/bars.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const bool keep = size > 0 && (data[0] & 1);  // both data.keep_bad_rows settings
  const std::string path = nanscope::fuzz::as_file(data, size, ".csv");
  try {
    (void)nanscope::load_csv_bars(path, keep);
  } catch (const nanscope::Error&) {
  }
  return 0;
}
