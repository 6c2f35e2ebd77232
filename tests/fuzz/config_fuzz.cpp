// libFuzzer harness: the config loader. The input's first line picks the path: TOML text (the rest
// of the input, as --config gives it), --set assignments or --inject specs (one per line, as the
// command line gives them), each then built into a checked Config as the CLI does.
#include <sstream>

#include "core/config_io.h"
#include "core/errors.h"
#include "session/injection.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const std::size_t nl = text.find('\n');
  const std::string mode = text.substr(0, nl),
                    rest = nl == std::string::npos ? "" : text.substr(nl + 1);
  try {
    nanscope::ConfigBuilder b;
    if (mode == "toml") {
      b.load_text(rest, "fuzz.toml");
    } else {
      std::istringstream lines(rest);
      for (std::string line; std::getline(lines, line);) {
        if (mode == "set")
          b.set(line);
        else
          (void)nanscope::parse_injection(line);
      }
    }
    (void)b.build();
  } catch (const nanscope::Error&) {
  }
  return 0;
}
