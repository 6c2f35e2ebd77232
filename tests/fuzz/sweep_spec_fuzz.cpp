// libFuzzer harness: the sweep spec reader (nanscope-run sweep SPEC.toml, and every task's and the
// sweep view's read of sweep.toml): a spec is resolved with its tasks and written back, or refused.
#include <string>

#include "core/errors.h"
#include "sweep/sweep_spec.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const nanscope::SweepSpec s = nanscope::parse_sweep_spec(text, "fuzz.toml");
    (void)nanscope::sweep_tasks(s);
    (void)nanscope::parse_sweep_spec(nanscope::sweep_spec_toml(s), "sweep.toml");
  } catch (const nanscope::Error&) {
  }
  return 0;
}
