// The step is deterministic on the device: two runs of one seed leave the same losses, slot
// buffers, health rows and state bit for bit, and the captured graph (the step's independent
// branches on side lanes) leaves exactly what the one-stream step leaves. The graph's checks run
// beside the step where the step allows it. The backend the CUDA plugin builds (what the programs
// load) steps as the one linked here, bit for bit.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <vector>

#include "backend_choice.h"
#include "check_plan_checks.h"
#include "core/sentinel.h"
#include "cuda_backend.h"
#include "data/bars.h"
#include "model/check_bank.h"
#include "session/session.h"
#include "test_seams.h"

using namespace nanscope;

namespace {

// Everything a step leaves that a user sees: its outcome (losses, kinds, health rows) and every
// slot buffer, as bytes.
struct StepPicture {
  std::vector<StepOutcome> outcomes;
  std::vector<std::vector<unsigned char>> slots;
  std::vector<double> params;
};

std::vector<StepPicture> steps_of(const Config& c, bool graph, int steps, bool via_plugin = false) {
  auto b = via_plugin ? choose_backend(BackendChoice::Cuda, c, false) : cuda::make_cuda_backend(c);
  b->set_step_graph(graph);
  const auto bars = generate_synthetic_bars(c.data, c.run.seed, c.data.bars);
  const auto folds = plan_folds(c.data.bars, c.run.folds, c.data.n_step);
  b->load_fold(build_transitions(bars, folds[0], c));
  b->checks().begin_fold(slot_setup(c));
  std::vector<StepPicture> out;
  for (int st = 0; st < steps; ++st) {
    const StepKey key{c.run.seed, 0, st, st};
    b->checks().begin_step(key);
    b->run_step(key);
    StepPicture p;
    p.outcomes = b->checks().end_step();
    for (int s = 0; s < kBuiltinSlotCount; ++s) {
      const SlotView v = b->slot(s);
      const auto* bytes = static_cast<const unsigned char*>(v.data);
      p.slots.emplace_back(bytes, bytes + v.count * v.element_bytes());
    }
    for (const ParamEntry* e : b->layout().existing()) {
      const auto v = b->read_param(e->name, false);
      p.params.insert(p.params.end(), v.begin(), v.end());
    }
    out.push_back(std::move(p));
  }
  return out;
}

bool same_bits(const void* a, const void* b, std::size_t n) {
  return std::memcmp(a, b, n) == 0;
}

void expect_identical(const std::vector<StepPicture>& a, const std::vector<StepPicture>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t st = 0; st < a.size(); ++st) {
    ASSERT_EQ(a[st].outcomes.size(), 1u) << "step " << st;
    ASSERT_EQ(b[st].outcomes.size(), 1u) << "step " << st;
    const StepOutcome &x = a[st].outcomes[0], &y = b[st].outcomes[0];
    EXPECT_TRUE(same_bits(&x.losses.total, &y.losses.total, sizeof(double))) << "step " << st;
    EXPECT_TRUE(same_bits(&x.losses.c51, &y.losses.c51, sizeof(double))) << "step " << st;
    EXPECT_TRUE(same_bits(&x.losses.grad_norm, &y.losses.grad_norm, sizeof(double)))
        << "step " << st;
    EXPECT_EQ(x.kinds, y.kinds) << "step " << st;
    EXPECT_TRUE(same_bits(x.health.data(), y.health.data(), sizeof(x.health))) << "step " << st;
    for (int s = 0; s < kBuiltinSlotCount; ++s)
      EXPECT_TRUE(a[st].slots[static_cast<std::size_t>(s)] ==
                  b[st].slots[static_cast<std::size_t>(s)])
          << "step " << st << " slot " << builtin_slot(s).name;
    ASSERT_EQ(a[st].params.size(), b[st].params.size());
    EXPECT_TRUE(
        same_bits(a[st].params.data(), b[st].params.data(), a[st].params.size() * sizeof(double)))
        << "step " << st << ": parameters";
  }
}

Config small_sync() {
  Config c;
  c.optim.target_sync = 2;  // the target network moves within the test
  return c;
}

}  // namespace

TEST(CudaDeterminism, TwoGraphedRunsOfOneSeedAreBitIdentical) {
  const Config c = small_sync();
  const auto a = steps_of(c, true, 5);
  const auto b = steps_of(c, true, 5);
  expect_identical(a, b);
  // The runs trained: the loss moved (a test of two frozen runs would pass on nothing).
  EXPECT_NE(a.front().outcomes[0].losses.total, a.back().outcomes[0].losses.total);
}

TEST(CudaDeterminism, TheGraphsSideLanesGiveTheOneStreamStepBitForBit) {
  const Config c = small_sync();
  expect_identical(steps_of(c, true, 5), steps_of(c, false, 5));
}

TEST(CudaPlugin, ThePluginsBackendStepsAsTheLinkedOneBitForBit) {
  const Config c = small_sync();
  auto plugin =
      choose_backend(BackendChoice::Cuda, c, false);  // throws, with the reason, without the plugin
  EXPECT_EQ(plugin->kind(), BackendKind::Cuda);
  for (bool graph : {true, false})
    expect_identical(steps_of(c, graph, 4, true), steps_of(c, graph, 4));
}

TEST(CudaDeterminism, WithoutTheIqnHeadToo) {
  Config c = small_sync();
  c.loss.lambda_iqn = 0;
  expect_identical(steps_of(c, true, 3), steps_of(c, false, 3));
}

// The kernels a captured step runs instead of several launches (bw_d_h_s2's sums, the logit
// gradients' backward, iqn_dh without phi) give the separate launches' values also where the
// values are NaN and Inf: two diverging runs (the lr-explosion and iqn-blowup scenarios' settings),
// graphed against ungraphed, every slot buffer's bytes equal (NaN payloads included).
TEST(CudaDeterminism, DivergingRunsGiveTheOneStreamStepBitForBitNonFiniteValuesIncluded) {
  Config lr = small_sync();
  lr.optim.lr = 1e12;
  Config iqn = small_sync();
  iqn.init.iqn_out_scale = 1.6e39;
  for (const Config& c : {lr, iqn}) {
    const auto graphed = steps_of(c, true, 4);
    expect_identical(graphed, steps_of(c, false, 4));
    // Not a comparison of finite runs: the last step's checks found non-finite values.
    int fired = 0;
    for (std::uint8_t k : graphed.back().outcomes[0].kinds) fired += k != 0;
    EXPECT_GT(fired, 3);
  }
}

TEST(CudaStepGraph, TheChecksBeforeTheUpdateRunBesideTheStep) {
  // In the captured step the forward's checks run beside the backward. With the guard on, 24-35
  // run beside the encoder backward and the gradient norm's check (the guard reads the norms
  // itself) goes with Adam's two slots after the update: no check launch stands before the
  // update. Without the guard (the default) 24-35 and 21 go with Adam's slots too. The graph has
  // parallel branches: its longest chain is well short of its nodes.
  for (bool guard : {false, true}) {
    Config c;
    c.guard.enabled = guard;
    SessionOptions o;
    o.graph = true;
    Session s(c, cuda::make_cuda_backend(c), o);
    cuda::StepCheckPlan plan;
    cuda::log_check_launches(s.backend(), &plan);
    s.step();  // the capture
    cuda::log_check_launches(s.backend(), nullptr);
    ASSERT_EQ(s.backend().step_graph_captures(), 1);
    ASSERT_EQ(plan.launches.size(), guard ? 3u : 2u);
    std::vector<int> seen(kBuiltinSlotCount, 0);
    for (const auto& launch : plan.launches)
      for (const auto& it : launch) ++seen[static_cast<std::size_t>(it.slot)];
    const SlotSetup setup = slot_setup(c);  // the ensemble's logits start deferred
    for (int slot = 0; slot < kBuiltinSlotCount; ++slot)
      EXPECT_EQ(seen[static_cast<std::size_t>(slot)], setup.checked(slot) ? 1 : 0)
          << builtin_slot(slot).name;
    // The first launch checks the sample's and the forward's slots, the later ones the rest.
    const auto forward = [](int slot) {
      const Phase p = builtin_slot(slot).phase;
      return p == Phase::Sample || p == Phase::Forward;
    };
    for (const auto& it : plan.launches[0]) EXPECT_TRUE(forward(it.slot)) << it.slot;
    for (std::size_t l = 1; l < plan.launches.size(); ++l)
      for (const auto& it : plan.launches[l]) EXPECT_FALSE(forward(it.slot)) << it.slot;
    test::expect_after_update_launch(plan, guard);
    const cuda::StepGraphShape g = cuda::step_graph_shape(s.backend());
    EXPECT_GT(g.kernels, 100);
    EXPECT_LT(2 * g.longest_path, g.nodes);
    EXPECT_GT(g.gemms.flops, 1e9);  // the default step's GEMMs: about 2 GFLOP
  }
}
