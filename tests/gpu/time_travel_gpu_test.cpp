// Time travel on the CUDA backend, graphed and not: any (fold, step, slot) recomputed from a
// checkpoint (the device ring's, and the run file's) equals, bit for bit, that slot's buffer in a
// fresh run halted after that step (tests/unit/time_travel_checks.h; the CPU test is
// tests/unit/time_travel_test.cpp).
#include <gtest/gtest.h>

#include "cuda_backend.h"
#include "unit/time_travel_checks.h"

namespace nanscope::test {
namespace {

std::unique_ptr<Backend> device(const Config& c) {
  return cuda::make_cuda_backend(c);
}

TEST(CudaTimeTravel, AnyStepRecomputedBitForBitGraphed) {
  expect_time_travel_bit_exact(device, true, "cuda_graph");
}

TEST(CudaTimeTravel, AnyStepRecomputedBitForBitUngraphed) {
  expect_time_travel_bit_exact(device, false, "cuda_ungraphed");
}

// The states kept near a recomputed cell (the device's bank reports its outcomes at a piece's
// end, so they are read between one-step pieces): each recomputes its step as the checkpoint does.
TEST(CudaTimeTravel, TheStatesKeptNearACellRecomputeItsNeighboursBitForBit) {
  expect_kept_states_exact(device, true, "cuda_graph");
  expect_kept_states_exact(device, false, "cuda_ungraphed");
}

// The ring lives in device memory: a checkpoint costs no copy to the host while the run goes on.
TEST(CudaTimeTravel, CheckpointsStayOnTheDevice) {
  Config c = time_travel_config();
  c.history.in_run_file = false;
  SessionOptions o;
  o.graph = true;
  Session run(c, device(c), o);
  run.run(RunUntil{RunUntil::Kind::Steps, 8, -1});
  const std::int64_t before = run.backend().device_to_host_copies();
  run.run(RunUntil{RunUntil::Kind::Steps, 9,
                   -1});  // through checkpoints at fold 0 step 8, fold 1 step 0 and 4
  EXPECT_EQ(run.checkpoints().size(), 5u);
  const std::int64_t during = run.backend().device_to_host_copies() - before;
  // The same nine steps without checkpoints read back as much.
  c.history.checkpoint_every = 0;
  Session plain(c, device(c), o);
  plain.run(RunUntil{RunUntil::Kind::Steps, 8, -1});
  const std::int64_t plain_before = plain.backend().device_to_host_copies();
  plain.run(RunUntil{RunUntil::Kind::Steps, 9, -1});
  EXPECT_EQ(during, plain.backend().device_to_host_copies() - plain_before);
}

}  // namespace
}  // namespace nanscope::test
