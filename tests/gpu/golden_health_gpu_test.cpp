// The CUDA backend's slot health and flags, bit for bit as a reference run left them: each run file
// in tests/gpu/golden/ was written on an H100 by nanscope-run (first from the code before the
// reductions moved to CUB, which matched them bit for bit; written again when the step's small
// layers moved to the fused layer kernel, whose sums are the CPU's and not cuBLAS's: the same flags
// at every step but lr-explosion's aux_pred_nb at step 1, now the CPU's kinds; bench/NOTES.md
// "The step's layers in one launch"; and again when the IQN greedy and target passes' output
// layer, the branch concat's gradient and the trunk's input gradient moved to sums in the CPU's
// order: the same flags at every step of all four, health at float rounding; bench/NOTES.md
// "The step's chain, part 3"), and each is run again here from
// its recorded config and injections, graphed as it was, and compared step by step. The fused
// check's grids follow the card's SM count, and so does the order of the health sums: the reference
// holds for 132-SM cards (H100 SXM, H200; the same sm_90 kernels give the same bits on both). The
// directory is found from the working directory (scripts/gpu-check.sh runs from the source tree) or
// $NANSCOPE_GOLDEN_DIR; a missing file fails. The references hold nanscope's first 36 slots: slot
// 36 (iqn_cos_features) came after them.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "core/config_io.h"
#include "cuda_backend.h"
#include "io/run_file.h"
#include "session/injection.h"
#include "session/session.h"
#include "unit/test_support.h"

namespace nanscope {
namespace {

std::filesystem::path golden_dir() {
  if (const char* d = std::getenv("NANSCOPE_GOLDEN_DIR")) return d;
  return "tests/gpu/golden";
}

struct Golden {
  const char* file;
  bool graph;
};

class GoldenHealth : public ::testing::TestWithParam<Golden> {};

TEST_P(GoldenHealth, HealthRowsAndFlagsAreTheReferenceBitForBit) {
  const std::filesystem::path path = golden_dir() / GetParam().file;
  ASSERT_TRUE(std::filesystem::exists(path)) << path << " is missing (run from the source tree)";
  const RunFileData golden = read_run_file(path.string());
  ConfigBuilder b;
  b.load_text(golden.config_toml, path.string());
  const Config c = b.build();
  SessionOptions o;
  for (const std::string& spec : c.inject.faults) o.injections.push_back(parse_injection(spec));
  o.graph = GetParam().graph;
  // Recorded as nanscope-run records (first-fire capture on), into a directory of its own.
  o.out_dir = test::temp_dir(std::string("golden_") + GetParam().file).string();
  Session s(c, cuda::make_cuda_backend(c), o);
  s.run();
  ASSERT_EQ(s.history().size(), golden.steps.size());
  int measured_rows = 0;
  for (std::size_t i = 0; i < golden.steps.size(); ++i) {
    const StepRecord& now = s.history()[i];
    const RunStepRow& then = golden.steps[i];
    EXPECT_EQ(now.flags, then.flags) << "step " << i;
    // The slots the reference stores (a slot added later has no reference row: the CPU parity
    // tests hold it).
    for (int slot = 0; slot < golden.stored_slots; ++slot) {
      const HealthRow& a = now.health[static_cast<std::size_t>(slot)];
      const HealthRow& g = then.health[static_cast<std::size_t>(slot)];
      // The fields the reference stores (the reduced types' three came after it: the CPU parity
      // tests and tests/gpu/half_gpu_test.cpp hold them).
      EXPECT_EQ(std::memcmp(a.data(), g.data(),
                            static_cast<std::size_t>(golden.health_fields) * sizeof(float)),
                0)
          << "step " << i << ", slot " << builtin_slot(slot).name;
      measured_rows += measured(a) ? 1 : 0;
    }
  }
  EXPECT_GT(measured_rows, 0);  // the reference has health to compare
}

INSTANTIATE_TEST_SUITE_P(Runs, GoldenHealth,
                         ::testing::Values(Golden{"healthy_graph.h5", true},
                                           Golden{"healthy_eager.h5", false},
                                           Golden{"lr_explosion.h5", true},
                                           Golden{"injected.h5", true}),
                         [](const auto& info) {
                           std::string n = info.param.file;
                           return n.substr(0, n.find('.'));
                         });

}  // namespace
}  // namespace nanscope
