// The fuzz harnesses' classifier (tests/fuzz/libhdf5_report.h) on report texts shaped as clang 14's
// ASan and libFuzzer print them: libhdf5's faults are refusals, nanscope's own are crashes.
#include <gtest/gtest.h>

#include "../fuzz/libhdf5_report.h"

using nanscope::fuzz::report_is_libhdf5s;

namespace {
// libFuzzer's malloc hook in the contained child: the allocation, through ASan, asked by `caller`.
std::string oom_report(const std::string& caller) {
  return "==31028== ERROR: libFuzzer: out-of-memory (malloc(4398046511104))\n"
         "   To change the out-of-memory limit use -rss_limit_mb=<N>\n\n"
         "    #0 0x55a553eba381 in __sanitizer_print_stack_trace (/b/fuzz_dump+0x28f381)\n"
         "    #1 0x55a553e2ccd8 in fuzzer::PrintStackTrace() (/b/fuzz_dump+0x201cd8)\n"
         "    #2 0x55a553e125a3 in fuzzer::MallocHook(void const volatile*, unsigned long) "
         "(/b/fuzz_dump+0x1e75a3)\n"
         "    #3 0x55a553e9a1b2 in __sanitizer::RunMallocHooks(void*, unsigned long) "
         "(/b/fuzz_dump+0x26f1b2)\n"
         "    #4 0x55a553e01a10 in __asan::Allocator::Allocate(unsigned long, unsigned long, "
         "__sanitizer::BufferedStackTrace*, __asan::AllocType, bool) (/b/fuzz_dump+0x1d6a10)\n"
         "    #5 0x55a553e0f0c2 in malloc (/b/fuzz_dump+0x1e40c2)\n" +
         caller +
         "    #9 0x55a553eed76e in LLVMFuzzerTestOneInput /b/tests/fuzz/dump_fuzz.cpp:13:10\n\n"
         "SUMMARY: libFuzzer: out-of-memory\n";
}
}  // namespace

TEST(FuzzReport, AnAllocationLibhdf5AskedIsLibhdf5s) {
  EXPECT_TRUE(report_is_libhdf5s(oom_report(
      "    #6 0x7fa5ec1a2b3c in H5FL_blk_malloc "
      "(/lib/x86_64-linux-gnu/libhdf5_serial.so.103+0x12b3c)\n"
      "    #7 0x7fa5ec1a2000  (/lib/x86_64-linux-gnu/libhdf5_serial.so.103+0x12000)\n")));
}

TEST(FuzzReport, AnAllocationNanscopeAskedIsNanscopes) {
  EXPECT_FALSE(report_is_libhdf5s(oom_report(
      "    #6 0x55a553f0a1c0 in operator new(unsigned long) (/b/fuzz_dump+0x2df1c0)\n"
      "    #7 0x55a553f1b2d0 in nanscope::h5::read_attr_string(long, std::string const&, "
      "std::string const&) /b/engine/io/h5.cpp:384:15\n")));
}

TEST(FuzzReport, AnOverflowInNanscopesCodeIsNanscopes) {
  EXPECT_FALSE(report_is_libhdf5s(
      "==77==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x6020000000f4\n"
      "READ of size 4 at 0x6020000000f4 thread T0\n"
      "    #0 0x55d0c1 in nanscope::read_dump(std::string const&) "
      "/b/engine/io/dump_file.cpp:130:7\n"
      "    #1 0x55d0c2 in main /b/cli/main.cpp:10:3\n"));
  EXPECT_TRUE(report_is_libhdf5s(
      "==78==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x6020000000f4\n"
      "WRITE of size 8 at 0x6020000000f4 thread T0\n"
      "    #0 0x4a1b2c in __asan_memcpy (/b/fuzz_dump+0x4a1b2c)\n"
      "    #1 0x7f00aa in H5T__conv_s_s (/lib/x86_64-linux-gnu/libhdf5_serial.so.103+0x2f00aa)\n"));
}

TEST(FuzzReport, AnInterceptorNamedByTheSummaryIsSkippedWhateverItsTopFrameSays) {
  // clang 14's report of a libhdf5 read beside a libFuzzer buffer (CI, fuzz_run_file): the top
  // frame, the memcpy interceptor's code, symbolised as an inlined std::string::append.
  const std::string report =
      "==7395==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x616000001950\n"
      "READ of size 16 at 0x616000001950 thread T0\n"
      "    #0 0x556363c52473 in std::__cxx11::basic_string<char, std::char_traits<char>, "
      "std::allocator<char> >::append(char const*, unsigned long) "
      "/usr/include/c++/12/bits/basic_string.h:1419\n"
      "    #1 0x7f2cf2790f18 in __interceptor_memcpy "
      "(/lib/x86_64-linux-gnu/libhdf5_serial.so.103+0x190f18)\n"
      "    #2 0x7f2cf27b4ca4  (/lib/x86_64-linux-gnu/libhdf5_serial.so.103+0x1b4ca4)\n"
      "    #5 0x556363da2a26 in H5Aexists (/b/tests/fuzz/fuzz_run_file+0x245a26)\n"
      "\n"
      "SUMMARY: AddressSanitizer: heap-buffer-overflow (/b/tests/fuzz/fuzz_run_file+0xf5473) in "
      "__interceptor_memcpy\n";
  EXPECT_TRUE(report_is_libhdf5s(report));
  // The same top frame with the fault in nanscope's own code (no interceptor in the summary).
  const std::string own =
      "==7396==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x616000001950\n"
      "READ of size 16 at 0x616000001950 thread T0\n"
      "    #0 0x556363c52473 in std::__cxx11::basic_string<char, std::char_traits<char>, "
      "std::allocator<char> >::append(char const*, unsigned long) "
      "/usr/include/c++/12/bits/basic_string.h:1419\n"
      "    #1 0x556363d5b5f4 in nanscope::h5::read_attr_string(long) /b/engine/io/h5.cpp:384:15\n"
      "\n"
      "SUMMARY: AddressSanitizer: heap-buffer-overflow "
      "/usr/include/c++/12/bits/basic_string.h:1419 "
      "in std::__cxx11::basic_string<char>::append(char const*, unsigned long)\n";
  EXPECT_FALSE(report_is_libhdf5s(own));
}

TEST(FuzzReport, AChunkFoundOverwrittenWhenTheChildRecyclesTheReadsFreedChunksIsLibhdf5s) {
  // clang 14's report when __sanitizer_purge_allocator recycles a freed chunk whose header an
  // uninstrumented store overwrote.
  const std::string check =
      "AddressSanitizer: CHECK failed: asan_allocator.cpp:210 \"((old_chunk_state)) == "
      "((CHUNK_QUARANTINE))\" (0x5a, 0x3) (tid=28048)\n"
      "    #0 0x55f3a1449a41 in __asan::CheckUnwind() asan_rtl.cpp.o\n"
      "    #1 0x55f3a14623d4 in __sanitizer::CheckFailed(char const*, int, char const*, unsigned "
      "long long, unsigned long long) (/b/fuzz_run_file+0xc63d4)\n"
      "    #2 0x55f3a13c24e2 in __asan::QuarantineCallback::Recycle(__asan::AsanChunk*) "
      "(/b/fuzz_run_file+0x264e2)\n"
      "    #3 0x55f3a13c1df9 in __sanitizer::Quarantine<__asan::QuarantineCallback, "
      "__asan::AsanChunk>::Recycle(unsigned long, __asan::QuarantineCallback) "
      "(/b/fuzz_run_file+0x25df9)\n";
  const std::string purge =
      "    #4 0x55f3a13c1462 in __sanitizer_purge_allocator (/b/fuzz_run_file+0x25462)\n";
  // Recycled after the contained read, from the harness's frame for it.
  EXPECT_TRUE(report_is_libhdf5s(
      check + purge +
      "    #5 0x55ee4b776565 in nanscope::fuzz::recycle_chunks_freed_in_read() "
      "/b/tests/fuzz/hdf5_fuzz.h:44:3\n"
      "    #6 0x55f3a147d583 in int nanscope::fuzz::read_contained<LLVMFuzzerTestOneInput::$_0>("
      "LLVMFuzzerTestOneInput::$_0&&) /b/tests/fuzz/hdf5_fuzz.h:77:5\n"));
  // The same check when nanscope's code frees a chunk is nanscope's to answer for.
  EXPECT_FALSE(report_is_libhdf5s(
      check +
      "    #4 0x55f3a13c1462 in operator delete(void*) (/b/fuzz_run_file+0x1996e5)\n"
      "    #5 0x55f3a147d583 in nanscope::read_run_file(std::string const&) "
      "/b/engine/io/run_file_read.cpp:200:1\n"));
}
