// Which code a sanitizer (or libFuzzer) report from a contained read blames: the fuzz harnesses'
// classifier (hdf5_fuzz.h), kept apart so a unit test holds it to real report texts.
#pragma once

#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace nanscope::fuzz {

namespace report_detail {
enum class Owner { Libhdf5, Nanscope, None };

struct Frame {
  std::string line, function, where;  // the function's first word; the object or source file
};

// The next stack in `lines`: its frames up to the first line that is not one.
inline std::vector<Frame> next_stack(std::istream& lines) {
  static const std::regex frame(R"(^\s+#(\d+) 0x[0-9a-f]+\s+(?:in (\S+)\s+)?\(?([^\s)+]+))");
  std::vector<Frame> stack;
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (!std::regex_search(line, m, frame)) {
      if (!stack.empty()) break;
      continue;
    }
    stack.push_back({line, m[2], m[3]});
  }
  return stack;
}

// Whose code the next stack in `lines` is: its first frame outside the sanitizer's runtime (its
// interceptors, malloc, strdup, memcpy, ..., and its own checks, __asan::..., which report a heap
// chunk an uninstrumented writer overwrote when libhdf5 frees it) and outside libFuzzer (whose
// malloc hook reports an allocation above -malloc_limit_mb in the child as "out-of-memory
// (malloc(N))").
inline const std::regex& interceptor_name() {
  static const std::regex interceptor(
      R"(^(__interceptor_)?(malloc|calloc|realloc|free|strdup|strndup|strlen|memcpy|memmove|memset|memcmp|strcmp|strncpy|strcpy|operator)$)");
  return interceptor;
}

// Whether ASan's SUMMARY line puts the fault in one of its own interceptors ("... in
// __interceptor_memcpy"). That name comes from the symbol table; the top frame's name comes from
// the debug information, which can call the interceptor's code by an inlined function of the
// harness's (clang 14 printed "std::string::append" for the memcpy libhdf5 called).
inline bool summary_in_interceptor(const std::string& report) {
  static const std::regex summary(R"(SUMMARY: AddressSanitizer: \S+ .* in (\S+))");
  std::smatch m;
  if (!std::regex_search(report, m, summary)) return false;
  const std::string function = m[1];
  return function.rfind("__asan", 0) == 0 || std::regex_match(function, interceptor_name());
}

inline Owner stack_owner(std::istream& lines, bool skip_top = false) {
  const std::regex& interceptor = interceptor_name();
  std::vector<Frame> stack = next_stack(lines);
  if (skip_top && !stack.empty()) stack.erase(stack.begin());
  for (const Frame& f : stack) {
    if (f.where.find("libhdf5") != std::string::npos) return Owner::Libhdf5;
    // A chunk found overwritten when the contained child recycles the chunks freed during and
    // before its read (hdf5_fuzz.h): nanscope's stores and copies are checked where they happen
    // (replace_intrin=1), so the writer is the uninstrumented library.
    if (f.function.rfind("nanscope::fuzz::recycle_chunks_freed_in_read", 0) == 0)
      return Owner::Libhdf5;
    if (f.function.rfind("__asan", 0) == 0 || f.function.rfind("__sanitizer", 0) == 0 ||
        f.function.rfind("fuzzer::", 0) == 0 || std::regex_match(f.function, interceptor))
      continue;
    return Owner::Nanscope;  // a frame of nanscope's (or the C library's)
  }
  return Owner::None;
}

}  // namespace report_detail

// Whether a sanitizer report blames libhdf5: its first stack is libhdf5's. An allocation of the
// out-of-memory size asked by nanscope's own code is nanscope's bug: its sizes from a file are
// bounded by the file (io/h5.cpp). The report's "allocated by" stack does not say whose buffer a
// write of libhdf5's overran: it names the chunk nearest the bad address, which a wild write of
// the library's can land beside (a campaign's found one of libFuzzer's, and one of nanscope's would
// look the same).
inline bool report_is_libhdf5s(const std::string& report) {
  std::istringstream lines(report);
  return report_detail::stack_owner(lines, report_detail::summary_in_interceptor(report)) ==
         report_detail::Owner::Libhdf5;
}

}  // namespace nanscope::fuzz
