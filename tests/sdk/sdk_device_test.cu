// The SDK's device path as a CUDA trainer uses it: device buffers checked on the trainer's stream,
// the step captured into the trainer's own graph and replayed, the guard word read by its
// optimizer kernel. A graphed run must give what the ungraphed run gives (flags, entry point,
// results, health, dumps, bit for bit); the device health must be the host path's within float32
// rounding; misuse of the device path is refused with a status and a message, and a refused call
// inside a capture leaves the capture usable. Linked to libnanscope through its header; run files
// read back with nanscope's own reader. Exits 77 (skipped) without a CUDA device.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "io/dump_file.h"
#include "io/run_file.h"
#include "model/host_check.h"
#include "nanscope/nanscope.h"
#include "sdk_device_util.h"
#include "sdk_test_util.h"

namespace {

constexpr int kN = 4096, kParams = 512;

// The toy trainer's kernels: a depends on a device step counter (so replays differ), with a NaN at
// index 5 when the poison word is set; b = 2a + 1; the update skips when the guard word is set.
__global__ void produce(float* a, int* counter, const int* poison) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const int t = *counter;
  __syncthreads();
  if (i < kN) a[i] = sinf(0.01f * i + 0.1f * t) * (1.0f + 0.001f * t);
  if (i == 5 && *poison) a[i] = __int_as_float(0x7fc00000);
}
__global__ void tick(int* counter) {
  ++*counter;
}
__global__ void derive(const float* a, float* b) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < kN) b[i] = 2.0f * a[i] + 1.0f;
}
__global__ void update(float* params, const float* b, const std::uint32_t* guard) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < kParams && *guard == 0) params[i] -= 0.01f * b[i];
}

struct Toy {
  float *a = nullptr, *b = nullptr, *params = nullptr;
  int *counter = nullptr, *poison = nullptr, *poison_host = nullptr;
  cudaStream_t s = nullptr;
  ns_session session{};
  std::int32_t ia = -1, ib = -1, ip = -1;
  std::uint32_t* guard = nullptr;

  void open(const fs::path& dir, bool health = true, bool halt_on_nan = false) {
    ASSERT_EQ(cudaMalloc(&a, kN * sizeof(float)), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&b, kN * sizeof(float)), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&params, kParams * sizeof(float)), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&counter, sizeof(int)), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&poison, sizeof(int)), cudaSuccess);
    ASSERT_EQ(cudaMallocHost(&poison_host, sizeof(int)), cudaSuccess);
    ASSERT_EQ(cudaMemset(counter, 0, sizeof(int)), cudaSuccess);
    ASSERT_EQ(cudaMemset(params, 0, kParams * sizeof(float)), cudaSuccess);
    ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
    *poison_host = 0;
    static std::string keep;
    keep = dir.string();
    ns_session_options o{};
    o.struct_size = sizeof o;
    o.run_dir = keep.c_str();
    o.trainer = "device_toy";
    o.folds = 2;
    o.guard = 1;
    o.health = health;
    o.capture = 1;
    o.overwrite = 1;
    o.halt_on_nan = halt_on_nan;
    ASSERT_EQ(ns_session_open(&o, &session), NS_OK) << ns_last_error();
    ASSERT_EQ(add("a", 0, "b", a, kN, &ia), NS_OK) << ns_last_error();
    ASSERT_EQ(add("b", 1, "params", b, kN, &ib), NS_OK) << ns_last_error();
    ASSERT_EQ(add("params", 2, nullptr, params, kParams, &ip), NS_OK) << ns_last_error();
  }
  ns_status add(const char* name, int order, const char* consumers, const void* p, std::int64_t n,
                std::int32_t* id, ns_memory memory = NS_DEVICE, ns_dtype dtype = NS_F32) {
    ns_slot_desc d{};
    d.struct_size = sizeof d;
    d.name = name;
    d.phase = "step";
    d.order = order;
    d.consumers = consumers;
    d.count = n;
    d.dtype = dtype;
    d.memory = memory;
    d.address = reinterpret_cast<std::uint64_t>(p);
    return ns_slot_register(session, &d, id);
  }
  // The step's work and checks on the stream (capturable).
  ns_status enqueue(int step) {
    if (ns_status st = ns_step_begin(session, step, s)) return st;
    cudaMemcpyAsync(poison, poison_host, sizeof(int), cudaMemcpyHostToDevice, s);
    produce<<<kN / 256, 256, 0, s>>>(a, counter, poison);
    derive<<<kN / 256, 256, 0, s>>>(a, b);
    const std::int32_t first[] = {ia, ib};
    if (ns_status st = ns_check(session, first, 2, s)) return st;
    update<<<kParams / 256, 256, 0, s>>>(params, b, guard);
    tick<<<1, 1, 0, s>>>(counter);
    return ns_check(session, &ip, 1, s);
  }
  void close() {
    if (session.id) EXPECT_EQ(ns_session_close(session), NS_OK) << ns_last_error();
    session = ns_session{};
    cudaStreamSynchronize(s);
    cudaFree(a), cudaFree(b), cudaFree(params), cudaFree(counter), cudaFree(poison);
    cudaFreeHost(poison_host);
    cudaStreamDestroy(s);
  }
};

// Two folds of six steps, a NaN written into a at fold 1 step 3; graphed: the step captured once
// (in fold 0) and replayed at every step. Each step's result, and the device copy of the
// parameters after every step (the guard's effect).
struct ToyRun {
  std::vector<ns_step_result> results;
  std::vector<std::vector<float>> params;
};

void run_toy(const fs::path& dir, bool graphed, ToyRun& out) {
  Toy t;
  t.open(dir);
  cudaGraphExec_t exec = nullptr;
  for (int fold = 0; fold < 2; ++fold) {
    NS_OK_(ns_fold_begin(t.session, fold));
    std::uint64_t word = 0;
    NS_OK_(ns_guard_word(t.session, &word));
    t.guard = reinterpret_cast<std::uint32_t*>(word);
    for (int step = 0; step < 6; ++step) {
      CUDA_OK(cudaStreamSynchronize(t.s));
      *t.poison_host = fold == 1 && step == 3;
      ns_step_result r = blank_result();
      if (!graphed) {
        NS_OK_(t.enqueue(step));
        NS_OK_(ns_step_end(t.session, &r));
      } else {
        if (!exec) {
          cudaGraph_t g;
          CUDA_OK(cudaStreamBeginCapture(t.s, cudaStreamCaptureModeGlobal));
          NS_OK_(t.enqueue(step));
          ns_step_result pending = blank_result();
          NS_OK_(ns_step_end(t.session, &pending));
          EXPECT_EQ(pending.fired, -1) << "a captured step has not run";
          CUDA_OK(cudaStreamEndCapture(t.s, &g));
          CUDA_OK(cudaGraphInstantiate(&exec, g, 0));
          cudaGraphDestroy(g);
        }
        CUDA_OK(cudaGraphLaunch(exec, t.s));
        NS_OK_(ns_step_replayed(t.session, t.s, &r));
      }
      out.results.push_back(r);
      std::vector<float> p(kParams);
      CUDA_OK(cudaMemcpy(p.data(), t.params, kParams * sizeof(float), cudaMemcpyDeviceToHost));
      out.params.push_back(p);
    }
    NS_OK_(ns_fold_end(t.session, fold));
  }
  if (exec) cudaGraphExecDestroy(exec);
  t.close();
}

TEST(SdkDevice, AGraphedRunGivesTheUngraphedRunBitForBit) {
  const fs::path eager_dir = fresh_dir("eager"), graph_dir = fresh_dir("graph");
  ToyRun eager, graph;
  ASSERT_NO_FATAL_FAILURE(run_toy(eager_dir, false, eager));
  ASSERT_NO_FATAL_FAILURE(run_toy(graph_dir, true, graph));
  ASSERT_EQ(eager.results.size(), 12u);
  ASSERT_EQ(graph.results.size(), 12u);
  for (std::size_t i = 0; i < 12; ++i) {
    const ns_step_result &e = eager.results[i], &g = graph.results[i];
    SCOPED_TRACE("step row " + std::to_string(i));
    const bool poisoned = i == 9;  // fold 1 step 3
    EXPECT_EQ(e.fired, poisoned ? 1 : 0);
    EXPECT_EQ(e.first_fire, poisoned ? 1 : 0);
    EXPECT_EQ(e.updated, poisoned ? 0 : 1) << "the guard word skips the poisoned step's update";
    EXPECT_EQ(e.entry_slot, i >= 9 ? 0 : -1);
    EXPECT_EQ(e.entry_step, i >= 9 ? 3 : -1);
    EXPECT_EQ(std::memcmp(&e, &g, sizeof e), 0) << "graphed result differs";
    EXPECT_TRUE(same_bits(eager.params[i].data(), graph.params[i].data(), kParams));
  }
  EXPECT_TRUE(same_bits(eager.params[8].data(), eager.params[9].data(), kParams))
      << "the skipped update left the parameters as they were";

  const nanscope::RunFileData re = nanscope::read_run_file((eager_dir / "run.h5").string());
  const nanscope::RunFileData rg = nanscope::read_run_file((graph_dir / "run.h5").string());
  EXPECT_EQ(re.backend, "sdk-cuda");
  ASSERT_EQ(re.folds.size(), 2u);
  ASSERT_EQ(rg.folds.size(), 2u);
  EXPECT_FALSE(re.folds[0].entry_slot.has_value());
  EXPECT_EQ(re.folds[1].entry_slot.value_or(-1), 0) << "a, of the lowest order";
  EXPECT_EQ(re.folds[1].entry_step.value_or(-1), 3);
  EXPECT_EQ(re.folds[1].slots[0].kinds, 1);
  EXPECT_EQ(re.folds[1].slots[0].count, 1);
  EXPECT_EQ(re.folds[1].slots[1].kinds, 1) << "b = 2a + 1 carries the NaN";
  EXPECT_EQ(re.folds[1].slots[2].kinds, 0) << "the guard kept params finite";
  for (int f = 0; f < 2; ++f)
    for (int s = 0; s < 3; ++s) {
      EXPECT_EQ(re.folds[f].slots[s].kinds, rg.folds[f].slots[s].kinds);
      EXPECT_EQ(re.folds[f].slots[s].first_step, rg.folds[f].slots[s].first_step);
      EXPECT_EQ(re.folds[f].slots[s].count, rg.folds[f].slots[s].count);
    }
  ASSERT_EQ(re.steps.size(), 12u);
  ASSERT_EQ(rg.steps.size(), 12u);
  for (std::size_t i = 0; i < 12; ++i) {
    EXPECT_EQ(re.steps[i].flags, rg.steps[i].flags) << "row " << i;
    EXPECT_EQ(re.steps[i].checked.members(), (std::vector<int>{0, 1, 2})) << "row " << i;
    EXPECT_EQ(rg.steps[i].checked.members(), (std::vector<int>{0, 1, 2})) << "row " << i;
    for (int s = 0; s < 3; ++s)
      EXPECT_TRUE(same_bits(re.steps[i].health[s].data(), rg.steps[i].health[s].data(),
                            nanscope::kHealthFieldCount))
          << "health of slot " << s << " at row " << i;
  }
  // The first fire's dump: a and b as the checks saw them, the NaN at a[5].
  const std::string name = "dumps/fold001_step00000003_a.h5";  // slot 0 is a
  ASSERT_TRUE(fs::exists(eager_dir / name)) << name;
  ASSERT_TRUE(fs::exists(graph_dir / name)) << name;
  const nanscope::DumpData de = nanscope::read_dump((eager_dir / name).string());
  const nanscope::DumpData dg = nanscope::read_dump((graph_dir / name).string());
  EXPECT_EQ(de.backend, "sdk-cuda");
  ASSERT_EQ(de.slots.size(), 2u);
  ASSERT_EQ(dg.slots.size(), 2u);
  for (std::size_t k = 0; k < 2; ++k) {
    ASSERT_EQ(de.slots[k].values.size(), static_cast<std::size_t>(kN));
    EXPECT_EQ(de.slots[k].index, dg.slots[k].index);
    EXPECT_TRUE(same_bits(de.slots[k].values.data(), dg.slots[k].values.data(), kN));
    EXPECT_TRUE(std::isnan(de.slots[k].values[5]));
    EXPECT_TRUE(std::isfinite(de.slots[k].values[4]));
  }
  fs::remove_all(eager_dir);
  fs::remove_all(graph_dir);
}

// The device's health rows against the host path's measure of the same buffers.
TEST(SdkDevice, DeviceHealthIsTheHostPathsWithinFloatRounding) {
  const fs::path dir = fresh_dir("health");
  Toy t;
  ASSERT_NO_FATAL_FAILURE(t.open(dir));
  NS_OK_(ns_fold_begin(t.session, 0));
  std::uint64_t word = 0;
  NS_OK_(ns_guard_word(t.session, &word));
  t.guard = reinterpret_cast<std::uint32_t*>(word);
  std::vector<std::vector<float>> seen;  // a, b, params after each step
  for (int step = 0; step < 4; ++step) {
    NS_OK_(t.enqueue(step));
    ns_step_result r = blank_result();
    NS_OK_(ns_step_end(t.session, &r));
    for (auto [p, n] : {std::pair{t.a, kN}, {t.b, kN}, {t.params, kParams}}) {
      std::vector<float> h(static_cast<std::size_t>(n));
      CUDA_OK(cudaMemcpy(h.data(), p, h.size() * sizeof(float), cudaMemcpyDeviceToHost));
      seen.push_back(h);
    }
  }
  NS_OK_(ns_fold_end(t.session, 0));
  t.close();
  const nanscope::RunFileData run = nanscope::read_run_file((dir / "run.h5").string());
  ASSERT_EQ(run.steps.size(), 4u);
  int compared = 0;
  for (int step = 0; step < 4; ++step)
    for (int s = 0; s < 3; ++s) {
      const std::vector<float>& h = seen[static_cast<std::size_t>(step * 3 + s)];
      nanscope::SlotView v;
      v.data = h.data();
      v.count = h.size();
      v.shape = {static_cast<std::int64_t>(h.size())};
      nanscope::HealthRow host{};
      nanscope::check_host_buffer(v, true, host);
      const nanscope::HealthRow& dev = run.steps[static_cast<std::size_t>(step)].health[s];
      for (int f = 0; f < nanscope::kHealthFieldCount; ++f) {
        if (std::isnan(host[f])) {
          EXPECT_TRUE(std::isnan(dev[f])) << "step " << step << " slot " << s << " field " << f;
          continue;
        }
        const double scale = std::max({1.0, std::fabs(double(host[f]))});
        EXPECT_LE(std::fabs(double(dev[f]) - host[f]), 2e-5 * scale)
            << "step " << step << " slot " << s << " field " << f << ": device " << dev[f]
            << ", host " << host[f];
        ++compared;
      }
    }
  EXPECT_GT(compared, 24);
  fs::remove_all(dir);
}

TEST(SdkDevice, DeviceMisuseIsRefusedWithAMessage) {
  const fs::path dir = fresh_dir("misuse");
  Toy t;
  ASSERT_NO_FATAL_FAILURE(t.open(dir));
  std::vector<float> host(64);
  float* small = nullptr;
  float* freed = nullptr;
  CUDA_OK(cudaMalloc(&small, 64 * sizeof(float)));
  CUDA_OK(cudaMalloc(&freed, 64 * sizeof(float)));
  CUDA_OK(cudaFree(freed));
  std::int32_t id = -1;
  EXPECT_REFUSED(t.add("h", 3, nullptr, host.data(), 64, &id), NS_ERR_MEMORY, "not device memory");
  EXPECT_REFUSED(t.add("big", 3, nullptr, small, 65, &id), NS_ERR_MEMORY, "past the end");
  EXPECT_REFUSED(t.add("gone", 3, nullptr, freed, 64, &id), NS_ERR_MEMORY, "freed");
  EXPECT_REFUSED(t.add("d", 3, nullptr, small, 32, &id, NS_DEVICE, NS_F64), NS_ERR_UNSUPPORTED,
                 "float64");
  EXPECT_REFUSED(t.add("mixed", 3, nullptr, host.data(), 64, &id, NS_HOST), NS_ERR_UNSUPPORTED,
                 "not both");
  std::uint64_t word = 0;
  EXPECT_REFUSED(ns_guard_word(t.session, &word), NS_ERR_STATE, "first fold");

  NS_OK_(ns_fold_begin(t.session, 0));
  NS_OK_(ns_guard_word(t.session, &word));
  t.guard = reinterpret_cast<std::uint32_t*>(word);
  cudaStream_t other;
  CUDA_OK(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking));
  NS_OK_(ns_step_begin(t.session, 0, t.s));
  EXPECT_REFUSED(ns_check(t.session, &t.ia, 1, other), NS_ERR_ARGUMENT, "not the step's stream");
  ns_step_result r = blank_result();
  NS_OK_(ns_step_end(t.session, &r));
  EXPECT_REFUSED(ns_step_replayed(t.session, t.s, &r), NS_ERR_STATE, "no step of this fold");

  // Inside a capture: what would change the graph or synchronise is refused, and the capture
  // survives the refusals.
  cudaGraph_t g;
  CUDA_OK(cudaStreamBeginCapture(t.s, cudaStreamCaptureModeGlobal));
  NS_OK_(t.enqueue(1));
  EXPECT_REFUSED(ns_guard_allows_update(t.session, &id), NS_ERR_STATE, "captured");
  ns_step_result pending = blank_result();
  NS_OK_(ns_step_end(t.session, &pending));
  EXPECT_EQ(pending.fired, -1);
  EXPECT_REFUSED(t.add("late", 4, nullptr, small, 64, &id), NS_ERR_STATE, "before the first fold");
  EXPECT_REFUSED(ns_slot_set_address(t.session, t.ia, reinterpret_cast<std::uint64_t>(small)),
                 NS_ERR_STATE, "being captured");
  EXPECT_REFUSED(ns_step_replayed(t.session, t.s, &r), NS_ERR_STATE, "being captured");
  EXPECT_REFUSED(ns_fold_end(t.session, 1), NS_ERR_STATE, "being captured");
  // Closing would wait for the stream: refused, and the session and the capture go on.
  EXPECT_REFUSED(ns_session_close(t.session), NS_ERR_STATE, "being captured");
  CUDA_OK(cudaStreamEndCapture(t.s, &g));
  cudaGraphExec_t exec;
  CUDA_OK(cudaGraphInstantiate(&exec, g, 0));
  CUDA_OK(cudaGraphLaunch(exec, t.s));
  NS_OK_(ns_step_replayed(t.session, t.s, &r));
  EXPECT_EQ(r.fired, 0);
  EXPECT_EQ(r.updated, 1);
  EXPECT_EQ(r.replays, 1);
  EXPECT_REFUSED(ns_step_replayed(t.session, t.s, &r), NS_ERR_STATE, "no step ran");
  NS_OK_(ns_fold_end(t.session, 0));
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(g);
  cudaStreamDestroy(other);
  cudaFree(small);
  t.close();
  const nanscope::RunFileData run = nanscope::read_run_file((dir / "run.h5").string());
  EXPECT_EQ(run.steps.size(), 2u) << "the eager step and the one replay";
  fs::remove_all(dir);
}

// Replays accounted together keep their fire, first fire and halt; ns_fold_end accounts the
// replays left; a moved buffer ends the old graph's accounting; a step begun before a capture
// cannot end inside it.
TEST(SdkDevice, ReplaysAccountedTogetherKeepTheirFiresAndHalt) {
  const fs::path dir = fresh_dir("together");
  Toy t;
  ASSERT_NO_FATAL_FAILURE(t.open(dir, true, true));
  NS_OK_(ns_fold_begin(t.session, 0));
  std::uint64_t word = 0;
  NS_OK_(ns_guard_word(t.session, &word));
  t.guard = reinterpret_cast<std::uint32_t*>(word);
  cudaGraph_t g;
  CUDA_OK(cudaStreamBeginCapture(t.s, cudaStreamCaptureModeGlobal));
  NS_OK_(t.enqueue(0));
  ns_step_result r = blank_result();
  NS_OK_(ns_step_end(t.session, &r));
  CUDA_OK(cudaStreamEndCapture(t.s, &g));
  cudaGraphExec_t exec;
  CUDA_OK(cudaGraphInstantiate(&exec, g, 0));
  // Four replays, the NaN in the second, then one account: steps 0-3.
  for (int i = 0; i < 4; ++i) {
    CUDA_OK(cudaStreamSynchronize(t.s));
    *t.poison_host = i == 1;
    CUDA_OK(cudaGraphLaunch(exec, t.s));
  }
  NS_OK_(ns_step_replayed(t.session, t.s, &r));
  EXPECT_EQ(r.fired, 1) << "the second replay fired, the last did not";
  EXPECT_EQ(r.first_fire, 1);
  EXPECT_EQ(r.halt, NS_HALT_NAN) << "halt_nan from the second replay";
  EXPECT_EQ(r.entry_slot, 0);
  EXPECT_EQ(r.entry_step, 1);
  EXPECT_EQ(r.updated, 1) << "the last replay updated";
  // Two more replays left for ns_fold_end to account.
  CUDA_OK(cudaStreamSynchronize(t.s));
  *t.poison_host = 0;
  CUDA_OK(cudaGraphLaunch(exec, t.s));
  CUDA_OK(cudaGraphLaunch(exec, t.s));
  NS_OK_(ns_fold_end(t.session, 0));
  // A step begun outside a capture cannot end inside one; the capture survives the refusal.
  NS_OK_(ns_fold_begin(t.session, 1));
  NS_OK_(ns_step_begin(t.session, 0, t.s));
  cudaGraph_t g2;
  CUDA_OK(cudaStreamBeginCapture(t.s, cudaStreamCaptureModeGlobal));
  EXPECT_REFUSED(ns_step_end(t.session, &r), NS_ERR_STATE, "outside a capture");
  std::int32_t allowed = -1;
  EXPECT_REFUSED(ns_guard_allows_update(t.session, &allowed), NS_ERR_STATE, "captured");
  CUDA_OK(cudaStreamEndCapture(t.s, &g2));
  cudaGraphDestroy(g2);
  NS_OK_(ns_step_end(t.session, &r));
  // A moved buffer: the old graph's replays are no longer accounted.
  float* moved = nullptr;
  CUDA_OK(cudaMalloc(&moved, kN * sizeof(float)));
  NS_OK_(ns_slot_set_address(t.session, t.ia, reinterpret_cast<std::uint64_t>(moved)));
  EXPECT_REFUSED(ns_step_replayed(t.session, t.s, &r), NS_ERR_STATE, "no step of this fold");
  NS_OK_(ns_fold_end(t.session, 1));
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(g);
  t.close();
  cudaFree(moved);
  const nanscope::RunFileData run = nanscope::read_run_file((dir / "run.h5").string());
  ASSERT_EQ(run.steps.size(), 7u) << "six replays in fold 0, one eager step in fold 1";
  EXPECT_EQ(run.steps[1].flags[0], 1);
  EXPECT_EQ(run.steps[2].flags[0], 0);
  EXPECT_EQ(run.steps[5].step, 5);
  EXPECT_EQ(run.folds[0].entry_step.value_or(-1), 1);
  fs::remove_all(dir);
}

}  // namespace

int main(int argc, char** argv) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("sdk_device_tests: no CUDA device, skipped\n");
    return 77;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
