// Which code a sanitizer (or libFuzzer) report from a contained read blames: the fuzz harnesses'
// classifier (hdf5_fuzz.h), kept apart so a unit test holds it to real report texts.
#pragma once

#include <regex>
#include <sstream>
#include <string>

namespace nanscope::fuzz {

// Whether a sanitizer report's first stack is libhdf5's: its first frame outside the sanitizer's
// runtime (its interceptors, malloc, strdup, memcpy, ..., and its own checks, __asan::..., which
// report a heap chunk an uninstrumented writer overwrote when libhdf5 frees it) and outside
// libFuzzer (whose malloc hook reports an allocation above -malloc_limit_mb in the child as
// "out-of-memory (malloc(N))") lies in libhdf5. An allocation that size asked by nanscope's own
// code is nanscope's bug: its sizes from a file are bounded by the file (io/h5.cpp).
inline bool report_is_libhdf5s(const std::string& report) {
  static const std::regex frame(R"(^\s+#(\d+) 0x[0-9a-f]+\s+(?:in (\S+)\s+)?\(?([^\s)+]+))");
  static const std::regex interceptor(
      R"(^(__interceptor_)?(malloc|calloc|realloc|free|strdup|strndup|strlen|memcpy|memmove|memset|memcmp|strcmp|strncpy|strcpy|operator)$)");
  std::istringstream lines(report);
  int seen = 0;
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (!std::regex_search(line, m, frame)) {
      if (seen > 0) break;  // the end of the first stack
      continue;
    }
    ++seen;
    const std::string fn = m[2], where = m[3];
    if (where.find("libhdf5") != std::string::npos) return true;
    // A chunk found overwritten when the contained child recycles the chunks freed during the read
    // (hdf5_fuzz.h): nanscope's stores are instrumented and reported where they happen, so the
    // writer is the uninstrumented library.
    if (fn == "__sanitizer_purge_allocator") return true;
    if (fn.rfind("__asan", 0) == 0 || fn.rfind("__sanitizer", 0) == 0 ||
        fn.rfind("fuzzer::", 0) == 0)
      continue;
    if (!std::regex_match(fn, interceptor))
      return false;  // a frame of nanscope's (or the C library's)
  }
  return false;
}

}  // namespace nanscope::fuzz
