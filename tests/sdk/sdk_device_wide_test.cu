// The SDK's device path at width: a session of a thousand device slots, every one checked in one
// ns_check (one launch), eager and captured in a graph at its first step; the run files, flags and
// the first fire's dump agree, bit for bit (part of sdk_device_tests).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "io/dump_file.h"
#include "io/run_file.h"
#include "nanscope/nanscope.h"
#include "sdk_device_util.h"
#include "sdk_test_util.h"

namespace {

__global__ void tick(int* counter) {
  ++*counter;
}

constexpr int kWide = 1000, kWideN = 64;

// Every slot's buffer (a view of one pool) depends on the step counter; `poison` names a slot
// whose element 7 becomes NaN (an even slot) or +Inf (an odd one), -1 none.
__global__ void fill_wide(float* pool, const int* counter, const int* poison) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= kWide * kWideN) return;
  pool[i] = cosf(0.001f * i + 0.5f * *counter);
  const int p = *poison;
  if (p >= 0 && i == p * kWideN + 7)
    pool[i] = p % 2 ? __int_as_float(0x7f800000) : __int_as_float(0x7fc00000);
}

struct WideRun {
  std::vector<ns_step_result> results;
  std::vector<std::vector<float>> fired_buffers;  // the pool after each poisoned step
};

// Eight steps of one fold, every slot checked in one ns_check; slot 776 poisoned (NaN) at step 3
// and slot 999 (+Inf) at step 5 (history rows that are not word multiples, slots past any 36-wide
// bank).
void run_wide(const fs::path& dir, bool graphed, WideRun& out) {
  float* pool = nullptr;
  int *counter = nullptr, *poison = nullptr, *poison_host = nullptr;
  cudaStream_t s = nullptr;
  CUDA_OK(cudaMalloc(&pool, kWide * kWideN * sizeof(float)));
  CUDA_OK(cudaMalloc(&counter, sizeof(int)));
  CUDA_OK(cudaMalloc(&poison, sizeof(int)));
  CUDA_OK(cudaMallocHost(&poison_host, sizeof(int)));
  CUDA_OK(cudaMemset(counter, 0, sizeof(int)));
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const std::string run_dir = dir.string();
  ns_session_options o{};
  o.struct_size = sizeof o;
  o.run_dir = run_dir.c_str();
  o.trainer = "device_wide";
  o.folds = 1;
  o.health = 1;
  o.capture = 1;
  o.overwrite = 1;
  ns_session session{};
  NS_OK_(ns_session_open(&o, &session));
  std::vector<std::int32_t> ids(kWide);
  for (int k = 0; k < kWide; ++k) {
    const std::string name = "w" + std::to_string(k);
    ns_slot_desc d{};
    d.struct_size = sizeof d;
    d.name = name.c_str();
    d.phase = "step";
    d.order = k;
    d.count = kWideN;
    d.dtype = NS_F32;
    d.memory = NS_DEVICE;
    d.address = reinterpret_cast<std::uint64_t>(pool + k * kWideN);
    NS_OK_(ns_slot_register(session, &d, &ids[static_cast<std::size_t>(k)]));
  }
  NS_OK_(ns_fold_begin(session, 0));
  auto enqueue = [&](int step) {
    if (ns_status st = ns_step_begin(session, step, s)) return st;
    cudaMemcpyAsync(poison, poison_host, sizeof(int), cudaMemcpyHostToDevice, s);
    fill_wide<<<(kWide * kWideN + 255) / 256, 256, 0, s>>>(pool, counter, poison);
    tick<<<1, 1, 0, s>>>(counter);
    return ns_check(session, ids.data(), kWide, s);
  };
  cudaGraphExec_t exec = nullptr;
  for (int step = 0; step < 8; ++step) {
    CUDA_OK(cudaStreamSynchronize(s));
    *poison_host = step == 3 ? 776 : step == 5 ? 999 : -1;
    ns_step_result r = blank_result();
    if (!graphed) {
      NS_OK_(enqueue(step));
      NS_OK_(ns_step_end(session, &r));
    } else {
      if (!exec) {  // captured at the first step: the check's table is first met in the capture
        cudaGraph_t g;
        CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
        NS_OK_(enqueue(step));
        ns_step_result pending = blank_result();
        NS_OK_(ns_step_end(session, &pending));
        CUDA_OK(cudaStreamEndCapture(s, &g));
        CUDA_OK(cudaGraphInstantiate(&exec, g, 0));
        cudaGraphDestroy(g);
      }
      CUDA_OK(cudaGraphLaunch(exec, s));
      NS_OK_(ns_step_replayed(session, s, &r));
    }
    out.results.push_back(r);
    if (step == 3 || step == 5) {
      std::vector<float> v(kWide * kWideN);
      CUDA_OK(cudaMemcpy(v.data(), pool, v.size() * sizeof(float), cudaMemcpyDeviceToHost));
      out.fired_buffers.push_back(std::move(v));
    }
  }
  NS_OK_(ns_fold_end(session, 0));
  if (exec) cudaGraphExecDestroy(exec);
  NS_OK_(ns_session_close(session));
  cudaStreamDestroy(s);
  cudaFree(pool), cudaFree(counter), cudaFree(poison), cudaFreeHost(poison_host);
}

TEST(SdkDevice, AThousandSlotSessionFiresAndDumpsGraphedAsUngraphed) {
  const fs::path eager_dir = fresh_dir("wide_eager"), graph_dir = fresh_dir("wide_graph");
  WideRun eager, graph;
  ASSERT_NO_FATAL_FAILURE(run_wide(eager_dir, false, eager));
  ASSERT_NO_FATAL_FAILURE(run_wide(graph_dir, true, graph));
  ASSERT_EQ(eager.results.size(), 8u);
  ASSERT_EQ(graph.results.size(), 8u);
  for (std::size_t i = 0; i < 8; ++i) {
    SCOPED_TRACE("step " + std::to_string(i));
    const ns_step_result& e = eager.results[i];
    EXPECT_EQ(e.fired, i == 3 || i == 5 ? 1 : 0);
    EXPECT_EQ(e.first_fire, i == 3 || i == 5 ? 1 : 0);
    EXPECT_EQ(e.entry_slot, i >= 3 ? 776 : -1);
    EXPECT_EQ(std::memcmp(&e, &graph.results[i], sizeof e), 0) << "graphed result differs";
  }
  for (const fs::path& dir : {eager_dir, graph_dir}) {
    SCOPED_TRACE(dir.string());
    const nanscope::RunFileData run = nanscope::read_run_file((dir / "run.h5").string());
    ASSERT_EQ(run.table->size(), kWide);
    ASSERT_EQ(run.folds.size(), 1u);
    for (int k = 0; k < kWide; ++k) {
      const auto& rec = run.folds[0].slots[static_cast<std::size_t>(k)];
      EXPECT_EQ(rec.kinds, k == 776 ? 1 : k == 999 ? 2 : 0) << "slot " << k;
      EXPECT_EQ(rec.first_step, k == 776 ? 3 : k == 999 ? 5 : -1) << "slot " << k;
    }
    ASSERT_EQ(run.steps.size(), 8u);
    for (std::size_t i = 0; i < 8; ++i) {
      EXPECT_EQ(run.steps[i].checked.count(), kWide) << "row " << i;
      for (int k = 0; k < kWide; ++k) {
        const bool nan_here = k == 776 && i == 3, inf_here = k == 999 && i == 5;
        EXPECT_EQ(run.steps[i].flags[static_cast<std::size_t>(k)], nan_here   ? 1
                                                                   : inf_here ? 2
                                                                              : 0)
            << "row " << i << " slot " << k;
      }
    }
    // The fold's first fire is dumped: slot 776's copy, the buffer as the check saw it, bit for
    // bit (the later first fire of 999 is in the run file, not dumped).
    const std::string name = "dumps/fold000_step00000003_w776.h5";
    ASSERT_TRUE(fs::exists(dir / name)) << name;
    EXPECT_FALSE(fs::exists(dir / "dumps/fold000_step00000005_w999.h5"));
    const nanscope::DumpData d = nanscope::read_dump((dir / name).string());
    ASSERT_EQ(d.slots.size(), 1u);
    EXPECT_EQ(d.slots[0].index, 776);
    const std::vector<float>& pool = (dir == eager_dir ? eager : graph).fired_buffers[0];
    ASSERT_EQ(d.slots[0].values.size(), static_cast<std::size_t>(kWideN));
    EXPECT_TRUE(same_bits(d.slots[0].values.data(), pool.data() + 776 * kWideN, kWideN));
    EXPECT_TRUE(std::isnan(d.slots[0].values[7]));
  }
  fs::remove_all(eager_dir);
  fs::remove_all(graph_dir);
}

}  // namespace
