// Every slot is the buffer its consumers read, on the CUDA backend too, graphed and ungraphed: one
// NaN injected into a slot fires exactly its documented closure, the same set as on the CPU
// backend; and a dump made by an injection replays its own step on CUDA (within the parity
// tolerance with the injection made again, a clean step and "transient" without it).
#include <gtest/gtest.h>

#include "cuda_backend.h"
#include "unit/propagation_checks.h"

using namespace nanscope;
using namespace nanscope::test;

namespace {

const MakeBackend kCuda = [](const Config& c) { return cuda::make_cuda_backend(c); };
const MakeBackend kCpu = [](const Config& c) { return make_cpu_backend(c); };

void expect_cuda_fires_the_closures_and_the_cpu_sets(bool iqn, bool graph) {
  const Config c = propagation_config(iqn);
  const auto gpu = expect_probes_fire_their_closures(c, kCuda, graph);
  // The CPU backend with the same probes (the probe element is the CPU's active trunk unit too:
  // both compute the same h_s2 up to rounding, far from 0 at a unit's switch).
  const std::size_t trunk = active_trunk_element(c, kCpu);
  EXPECT_EQ(trunk, active_trunk_element(c, kCuda));
  const std::uint64_t present = present_slots(c);
  for (int slot = 0; slot < kBuiltinSlotCount; ++slot) {
    if (!(present >> slot & 1)) continue;
    const std::uint64_t cpu =
        fired_at_probe_step(c, kCpu, false, probe_injections(slot, Dims::from(c), trunk));
    EXPECT_EQ(slot_list(gpu[static_cast<std::size_t>(slot)]), slot_list(cpu))
        << "slot " << slot << " " << builtin_slot(slot).name;
  }
}

}  // namespace

TEST(CudaPropagation, EveryInjectionFiresItsClosureAsOnTheCpu_Ungraphed) {
  expect_cuda_fires_the_closures_and_the_cpu_sets(true, false);
}

TEST(CudaPropagation, EveryInjectionFiresItsClosureAsOnTheCpu_Graphed) {
  expect_cuda_fires_the_closures_and_the_cpu_sets(true, true);
}

TEST(CudaPropagation, EveryInjectionFiresItsClosureAsOnTheCpu_WithoutTheIqnHead) {
  expect_cuda_fires_the_closures_and_the_cpu_sets(false, true);
}

TEST(CudaReplay, EveryInjectedSlotsDumpReplaysItsOwnStep_Ungraphed) {
  expect_dumps_replay_their_own_step(propagation_config(true), kCuda, false, 1e-5,
                                     "cuda_replay_plain");
}

TEST(CudaReplay, EveryInjectedSlotsDumpReplaysItsOwnStep_Graphed) {
  expect_dumps_replay_their_own_step(propagation_config(true), kCuda, true, 1e-5,
                                     "cuda_replay_graphed");
}
