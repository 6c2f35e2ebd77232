// Shared by the libFuzzer harnesses: the input as a file (the readers take paths), and the
// sanitizers' options.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

namespace nanscope::fuzz {

// The fuzz input written to a file of this process's own (overwritten per input).
inline std::string as_file(const std::uint8_t* data, std::size_t size, const char* ext) {
  static const std::string path = "/tmp/nanscope_fuzz_" + std::to_string(::getpid()) + ext;
  if (FILE* f = std::fopen(path.c_str(), "wb")) {
    if (size) std::fwrite(data, 1, size, f);
    std::fclose(f);
  }
  return path;
}

}  // namespace nanscope::fuzz
