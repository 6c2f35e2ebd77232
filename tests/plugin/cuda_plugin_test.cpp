// The CUDA plugin as nanscope-run finds it: the build's own plugin (loaded; without a device the
// run falls back to the CPU with the runtime's reason), no plugin, a plugin of another version and
// a library that is not a plugin, each with --backend auto (one line, the CPU) and --backend cuda
// (exit 69, the reason).
#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "cli_runner.h"
#include "cuda_plugin_api.h"
#include "io/run_file.h"

namespace {

using namespace nanscope::test::cli;

Result run(const std::string& env, const std::string& args) {
  return run_env(env, args);
}

// The one line --backend auto prints.
std::string choice_line(const std::string& out) {
  std::smatch m;
  return std::regex_search(out, m, std::regex("nanscope: backend auto -> [^\n]*")) ? m.str() : "";
}

void expect_refused(const std::string& env, const std::string& reason) {
  const Result aut = run(env, "--backend auto " + kSmall);
  EXPECT_EQ(aut.code, 0) << aut.out;
  EXPECT_NE(choice_line(aut.out).find("backend auto -> cpu (" + reason), std::string::npos)
      << aut.out;
  const Result cuda = run(env, "--backend cuda " + kSmall);
  EXPECT_EQ(cuda.code, 69) << cuda.out;
  EXPECT_NE(cuda.out.find(reason), std::string::npos) << cuda.out;
}

TEST(CudaPlugin, NoPluginRunsOnTheCpuAndCudaIsUnavailable) {
  expect_refused("NANSCOPE_CUDA_PLUGIN=/nonexistent/libnanscope-cuda.so",
                 "no CUDA plugin (libnanscope-cuda.so not found: looked for "
                 "/nonexistent/libnanscope-cuda.so, named by NANSCOPE_CUDA_PLUGIN)");
}

TEST(CudaPlugin, APluginOfAnotherVersionIsRefused) {
  const std::string version =
      NANSCOPE_VERSION + std::string(" (ABI ") + std::to_string(nanscope::kCudaPluginAbi) + ")";
  expect_refused(std::string("NANSCOPE_CUDA_PLUGIN=") + FAKE_OTHER_VERSION,
                 std::string("the CUDA plugin ") + FAKE_OTHER_VERSION +
                     " is for nanscope 9.9.9 (plugin ABI " +
                     std::to_string(nanscope::kCudaPluginAbi) + "), this is nanscope " + version);
  // This version's number with another ABI number: refused too.
  expect_refused(std::string("NANSCOPE_CUDA_PLUGIN=") + FAKE_OTHER_ABI,
                 std::string("the CUDA plugin ") + FAKE_OTHER_ABI + " is for nanscope " +
                     NANSCOPE_VERSION + " (plugin ABI 99), this is nanscope " + version);
}

// A plugin of this version and ABI built from a tree with another slot table (one slot more) would
// misread every Config and slot it is passed: refused, naming both sides' layouts.
TEST(CudaPlugin, APluginOfAnotherLayoutIsRefusedNamingBothSides) {
  const auto mine = nanscope::this_build_layout();
  auto theirs = mine;
  theirs.slot_count += 1;
  theirs.slot_table ^= 0x5eed;
  expect_refused(std::string("NANSCOPE_CUDA_PLUGIN=") + FAKE_OTHER_LAYOUT,
                 std::string("the CUDA plugin ") + FAKE_OTHER_LAYOUT +
                     " was built for another layout of what it is passed (plugin: " +
                     nanscope::describe_layout(theirs) +
                     "; this program: " + nanscope::describe_layout(mine) + ")");
}

TEST(CudaPlugin, ALibraryWithoutTheEntryPointIsRefused) {
  expect_refused(std::string("NANSCOPE_CUDA_PLUGIN=") + FAKE_NO_ENTRY,
                 std::string(FAKE_NO_ENTRY) + " is not a nanscope CUDA plugin");
}

// A CUDA error in the middle of the work (a plugin whose backend fails at fold 0, step 2): exit 70,
// the failing call named, and the run file keeps the two steps that ran.
TEST(CudaPlugin, AFaultMidRunExits70AndTheRunFileKeepsTheStepsThatRan) {
  const auto dir = nanscope::test::temp_dir("plugin_fault");
  const std::string out = (dir / "run").string();
  const Result r = run(std::string("NANSCOPE_CUDA_PLUGIN=") + FAULTING_PLUGIN,
                       "--backend cuda --out " + out + " " + kSmall);
  EXPECT_EQ(r.code, 70) << r.out;
  EXPECT_NE(r.out.find("cudaMemcpyAsync(status record): an illegal memory access"),
            std::string::npos)
      << r.out;
  const nanscope::RunFileData file = nanscope::read_run_file(out + "/run.h5");
  ASSERT_EQ(file.steps.size(), 2u);
  EXPECT_EQ(file.steps[0].step, 0);
  EXPECT_EQ(file.steps[1].step, 1);
  EXPECT_EQ(run("", "validate " + out + "/run.h5").code, 0);
}

#ifdef NANSCOPE_PLUGIN_BUILT
// The build's plugin, found beside the program (lib/nanscope). With a device the run is on CUDA;
// without one (CI) the plugin still loads and the CPU takes over with the CUDA runtime's reason.
TEST(CudaPlugin, TheBuildsPluginLoadsAndNamesTheDeviceOrWhyThereIsNone) {
  const Result aut = run("", "--backend auto " + kSmall);
  EXPECT_EQ(aut.code, 0) << aut.out;
  const std::string line = choice_line(aut.out);
  const bool on_cuda = line.rfind("nanscope: backend auto -> cuda (", 0) == 0;
  if (!on_cuda) {
    EXPECT_TRUE(std::regex_match(
        line, std::regex(R"(nanscope: backend auto -> cpu \(no usable CUDA device: .+\))")))
        << aut.out;
    const Result cuda = run("", "--backend cuda " + kSmall);
    EXPECT_EQ(cuda.code, 69) << cuda.out;
    const std::string reason = line.substr(line.find("device: ") + 8);
    EXPECT_NE(cuda.out.find(reason.substr(0, reason.size() - 1)), std::string::npos) << cuda.out;
  }
}
#endif

}  // namespace
