// The sentinels on the CUDA backend against the CPU backend: the sentinel issue's injection tests
// and the contract's scenario truth table give the same entry point, backward entry, halt, per-step
// flags, fold records (kinds, first step, count, execution position) and events on both.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "core/config_io.h"
#include "cuda_backend.h"
#include "io/dump_file.h"
#include "session/replay.h"
#include "session/scenarios.h"
#include "session/session.h"
#include "unit/session_checks.h"

using namespace nanscope;

namespace {

struct Case {
  std::string name;
  Config config;
  std::vector<std::string> injections;
  std::set<int> breaks;
};

std::unique_ptr<Session> run_on(std::unique_ptr<Backend> b, const Case& k,
                                const std::string& out = "", bool graph = false) {
  SessionOptions o;
  for (const auto& i : k.injections) o.injections.push_back(parse_injection(i));
  o.breakpoints = k.breaks;
  o.out_dir = out;
  o.graph = graph;
  auto s = std::make_unique<Session>(k.config, std::move(b), o);
  s->run();
  return s;
}

// Every kind of every slot at every step, the entry, the halt, the folds' records and the events.
// In an overflow blow-up the kinds a layer leaves (+Inf or NaN) depend on where its sums overflow:
// the CUDA backend's small layers sum as the CPU's Eigen products do (cuda/layer_gemm.h; not all
// of its products: the backward's stay with cuBLAS), and on lr-explosion every kind is the CPU's
// (observed on an H100; before the fused layers aux_pred_nb's differed at step 1).
void expect_same_sentinels(const Session& cpu, const Session& gpu, double loss_tolerance = 1e-4) {
  auto e1 = cpu.entry(), e2 = gpu.entry();
  ASSERT_EQ(e1.has_value(), e2.has_value());
  if (e1) {
    EXPECT_EQ(e2->slot, e1->slot) << builtin_slot(e2->slot).name << " vs "
                                  << builtin_slot(e1->slot).name;
    EXPECT_EQ(e2->fold, e1->fold);
    EXPECT_EQ(e2->step, e1->step);
  }
  auto b1 = cpu.backward_entry(), b2 = gpu.backward_entry();
  ASSERT_EQ(b1.has_value(), b2.has_value());
  if (b1) {
    EXPECT_EQ(b2->slot, b1->slot);
    EXPECT_EQ(b2->step, b1->step);
  }
  ASSERT_EQ(cpu.halt().has_value(), gpu.halt().has_value());
  if (cpu.halt()) {
    EXPECT_EQ(gpu.halt()->kind, cpu.halt()->kind);
    EXPECT_EQ(gpu.halt()->fold, cpu.halt()->fold);
    EXPECT_EQ(gpu.halt()->step, cpu.halt()->step);
    EXPECT_EQ(gpu.halt()->entry_slot, cpu.halt()->entry_slot);
  }
  ASSERT_EQ(gpu.history().size(), cpu.history().size());
  for (std::size_t i = 0; i < cpu.history().size(); ++i) {
    const auto &a = cpu.history()[i], &g = gpu.history()[i];
    for (int s = 0; s < kBuiltinSlotCount; ++s)
      EXPECT_EQ(g.flags[s], a.flags[s])
          << "step " << i << " slot " << s << " " << builtin_slot(s).name;
    EXPECT_EQ(g.updated, a.updated) << i;
    EXPECT_EQ(std::isfinite(g.losses.total), std::isfinite(a.losses.total)) << i;
    if (std::isfinite(a.losses.total) && std::isfinite(g.losses.total)) {
      EXPECT_NEAR(g.losses.total, a.losses.total,
                  loss_tolerance * std::max(1.0, std::abs(a.losses.total)))
          << i;
    }
  }
  ASSERT_EQ(gpu.folds().size(), cpu.folds().size());
  for (std::size_t f = 0; f < cpu.folds().size(); ++f)
    for (int s = 0; s < kBuiltinSlotCount; ++s) {
      const SlotRecord &a = cpu.folds()[f].flags.slots[s], &g = gpu.folds()[f].flags.slots[s];
      EXPECT_EQ(g.state, a.state) << "fold " << f << " slot " << s;
      EXPECT_EQ(g.kinds, a.kinds) << "fold " << f << " slot " << s;
      EXPECT_EQ(g.first_step, a.first_step) << "fold " << f << " slot " << s;
      EXPECT_EQ(g.count, a.count) << "fold " << f << " slot " << s;
      EXPECT_EQ(g.exec_position, a.exec_position) << "fold " << f << " slot " << s;
    }
  ASSERT_EQ(gpu.events().size(), cpu.events().size());
  for (std::size_t i = 0; i < cpu.events().size(); ++i) {
    EXPECT_EQ(gpu.events()[i].kind, cpu.events()[i].kind);
    EXPECT_EQ(gpu.events()[i].step, cpu.events()[i].step);
    EXPECT_EQ(gpu.events()[i].entry_slot, cpu.events()[i].entry_slot);
  }
}

Config small(const std::vector<std::string>& sets = {}) {
  return test::sentinel_config(sets);
}
Config scenario(const std::string& name, int steps) {
  return test::scenario_config(name, steps);
}

class Parity : public ::testing::TestWithParam<Case> {};

}  // namespace

TEST_P(Parity, SameSentinelsOnCudaAsOnCpu) {
  const Case& k = GetParam();
  auto cpu = run_on(make_cpu_backend(k.config), k);
  auto gpu = run_on(cuda::make_cuda_backend(k.config), k);
  std::printf("%s: entry %s, backward entry %s, halt %s, %zu steps\n", k.name.c_str(),
              cpu->entry() ? std::string(builtin_slot(cpu->entry()->slot).name).c_str() : "none",
              cpu->backward_entry()
                  ? std::string(builtin_slot(cpu->backward_entry()->slot).name).c_str()
                  : "none",
              cpu->halt() ? std::string(name_of(cpu->halt()->kind)).c_str() : "none",
              cpu->history().size());
  expect_same_sentinels(*cpu, *gpu);
}

INSTANTIATE_TEST_SUITE_P(
    Injections, Parity,
    ::testing::Values(
        Case{"aux_param", small(), {"param:aux.w2@0:2"}, {}},
        Case{"iqn_param", small(), {"param:iqn.out.w@0:2:posinf"}, {}},
        Case{"bn_d_concat", small(), {"slot:bn_d_concat@0:3"}, {}},
        Case{"aux_loss_sticky", small(), {"slot:aux_loss@0:1:neginf"}, {}},
        Case{"no_iqn", small({"loss.lambda_iqn=0"}), {"param:aux.w2@0:1"}, {}},
        Case{"deferred31", small(), {"slot:ensemble_d_logits@0:1"}, {}},
        Case{"undeferred31", small({"sentinel.undefer=[31]"}), {"slot:ensemble_d_logits@0:1"}, {}},
        Case{"disabled18", small({"sentinel.disabled=[18]"}), {"slot:aux_loss@0:1"}, {}},
        Case{"guard", small({"guard.enabled=true"}), {"slot:aux_loss@0:2"}, {}},
        Case{"breakpoint",
             small({"halt.on_fire=\"step\""}),
             {"slot:aux_loss@0:1", "slot:aux_dh_s2_nb@1:2"},
             {kAuxDHS2Nb}},
        Case{"halt_step", small({"halt.on_fire=\"step\""}), {"slot:aux_loss@0:2"}, {}},
        Case{"halt_fold_end", small({"halt.on_fire=\"fold_end\""}), {"slot:aux_loss@0:2"}, {}},
        Case{"h_s1_all", small(), {"slot:h_s1@0:1:nan:all"}, {}},
        Case{"bw_aux_elem", small(), {"slot:bw_d_h_s2.aux@0:1:posinf:12"}, {}},
        Case{"batch_elem", small(), {"slot:batch@1:2:nan:3"}, {}},
        Case{"grad_norm", small(), {"slot:grad_norm@0:2"}, {}},
        Case{"q_expected", small(), {"slot:q_expected@1:2:posinf"}, {}},
        // Slots checked by their producer kernels on the device (iqn_phi, adam_moments,
        // params): fired there, and injected after the producer (checked at the site).
        Case{"iqn_phi_param", small(), {"param:iqn.phi.w@0:1"}, {}},
        Case{"params_slot", small(), {"slot:params@0:2"}, {}},
        Case{"moments_slot", small({"guard.enabled=true"}), {"slot:adam_moments@1:1:posinf"}, {}},
        Case{"iqn_phi_slot", small(), {"slot:iqn_phi@0:1:nan:5"}, {}}),
    [](const auto& info) { return info.param.name; });

INSTANTIATE_TEST_SUITE_P(
    TruthTable, Parity,
    ::testing::Values(Case{"healthy", scenario("healthy", 8), {}, {}},
                      Case{"corrupt_bar", scenario("corrupt-bar", 8), {}, {}},
                      Case{"log_zero", scenario("log-zero", 8), {}, {}},
                      Case{"aux_blowup", scenario("aux-blowup", 8), {}, {}},
                      Case{"iqn_blowup", scenario("iqn-blowup", 8), {}, {}},
                      Case{"lr_explosion", scenario("lr-explosion", 8), {}, {}},
                      Case{"grad_collapse", scenario("grad-collapse", 60), {}, {}}),
    [](const auto& info) { return info.param.name; });

// Graph mode: the same step as one captured graph gives the ungraphed run's sentinels bit for bit
// and its losses to float32 rounding.
TEST_P(Parity, GraphModeGivesTheUngraphedSentinels) {
  const Case& k = GetParam();
  auto plain = run_on(cuda::make_cuda_backend(k.config), k);
  auto graphed = run_on(cuda::make_cuda_backend(k.config), k, "", true);
  expect_same_sentinels(*plain, *graphed, 1e-6);
  double worst = 0;
  for (std::size_t i = 0; i < plain->history().size() && i < graphed->history().size(); ++i) {
    const double a = plain->history()[i].losses.total, g = graphed->history()[i].losses.total;
    if (std::isfinite(a) && std::isfinite(g))
      worst = std::max(worst, std::abs(a - g) / std::max(1.0, std::abs(a)));
  }
  const int captures = graphed->backend().step_graph_captures();
  std::printf(
      "%s: graph vs ungraphed, max relative total-loss difference %.3g, %d graph captures\n",
      k.name.c_str(), worst, captures);
  EXPECT_GE(captures, 1);
  EXPECT_LE(captures, k.config.run.folds);  // once per fold (the fold's data), not per step
}

// Run mode without per-step needs: the fold's records are read back at its end, with the same
// result as reading every step.
TEST_P(Parity, FoldEndReadbackGivesThePerStepReadback) {
  Case k = GetParam();
  if (k.config.halt.on_fire == HaltOnFire::Step || !k.breaks.empty() || k.name == "grad_collapse")
    GTEST_SKIP();
  k.config.halt.collapse_patience = 0;
  for (bool graph : {false, true}) {
    auto per_step = run_on(cuda::make_cuda_backend(k.config), k,
                           test::temp_dir("rb_" + k.name).string(), graph);
    auto deferred = run_on(cuda::make_cuda_backend(k.config), k, "", graph);
    expect_same_sentinels(*per_step, *deferred, 0.0);
  }
}

TEST(CudaGraph, RunModeMakesNoDeviceToHostCopyPerStep) {
  Config c;
  c.run.folds = 1;
  c.run.steps_per_fold = 400;
  c.halt.collapse_patience = 0;  // fold-end halting, no per-step watch, no recording
  for (bool graph : {false, true}) {
    SessionOptions o;
    o.graph = graph;
    Session s(c, cuda::make_cuda_backend(c), o);
    const Backend* ds = &s.backend();
    RunUntil n;
    n.kind = RunUntil::Kind::Steps;
    n.steps = 10;
    s.run(n);  // fold set-up, capture
    const auto a = ds->device_to_host_copies();
    s.run(n);  // 10 steps and the readback of their records
    const auto ten = ds->device_to_host_copies() - a;
    n.steps = 200;
    s.run(n);  // 200 steps and the same readback
    const auto two_hundred = ds->device_to_host_copies() - a - ten;
    std::printf(
        "graph %d: copies for 10 steps %lld, for 200 steps %lld (the readback when run() "
        "returns)\n",
        graph, static_cast<long long>(ten), static_cast<long long>(two_hundred));
    EXPECT_EQ(two_hundred, ten);  // none per step
    EXPECT_LE(ten, 4);
    EXPECT_EQ(s.history().size(), 220u);
    EXPECT_EQ(ds->step_graph_captures(), graph ? 1 : 0);
  }
}

TEST(CudaGraph, RecapturedWhenTheCheckedSlotsChange) {
  Config c = small();
  c.run.folds = 1;
  c.run.steps_per_fold = 12;
  SessionOptions o;
  o.graph = true;
  Session s(c, cuda::make_cuda_backend(c), o);
  const Backend* ds = &s.backend();
  s.step();
  s.step();
  EXPECT_EQ(ds->step_graph_captures(), 1);
  s.set_checked(kAuxLoss, false);
  s.step();
  EXPECT_EQ(ds->step_graph_captures(), 2);
  s.step();
  EXPECT_EQ(ds->step_graph_captures(), 2);
}

TEST(CudaGuard, SkippedUpdateLeavesParametersAdamAndTBitIdentical) {
  test::expect_guard_skips_bit_exact([](const Config& c) { return cuda::make_cuda_backend(c); });
}

TEST(CudaGuard, SkippedUpdateIsBitExactInsideAReplayedGraph) {
  test::expect_graphed_guard_skips_bit_exact(
      [](const Config& c) { return cuda::make_cuda_backend(c); });
}

TEST(CudaDumps, AFirstFireDumpHoldsTheBufferAndReplaysOnBothBackends) {
  const auto dir = test::temp_dir("cuda_dump");
  Case k{"aux_blowup", scenario("aux-blowup", 8), {}, {}};
  auto gpu = run_on(cuda::make_cuda_backend(k.config), k, dir.string());
  ASSERT_FALSE(gpu->dump_paths().empty());
  const DumpData d = read_dump(gpu->dump_paths().front());
  EXPECT_EQ(d.backend, "cuda");
  ASSERT_FALSE(d.slots.empty());
  for (const DumpSlot& s :
       d.slots) {  // the captured buffer is the firing one: it holds non-finite values
    const auto first =
        std::find_if(s.values.begin(), s.values.end(), [](float v) { return !std::isfinite(v); });
    ASSERT_NE(first, s.values.end()) << s.index;
    EXPECT_EQ(s.scan.first_bad_index, first - s.values.begin()) << s.index;
    EXPECT_NE(s.scan.kinds, 0) << s.index;
  }
  const Config rc = dump_config(d);
  auto on_cpu = make_cpu_backend(rc);
  auto on_gpu = cuda::make_cuda_backend(rc);
  const ReplayResult a = replay_dump(d, *on_cpu), b = replay_dump(d, *on_gpu);
  EXPECT_EQ(a.verdict, Verdict::Reproducible);
  EXPECT_EQ(b.verdict, Verdict::Reproducible);
  EXPECT_EQ(a.replayed_flags, b.replayed_flags);
  std::filesystem::remove_all(dir);
}

// First-fire capture on the device: a recording run (reading back every few steps) writes the
// dumps of a run read every step, bit for bit, graphed or not; and a clean recording run reads back
// once per context-area count of steps, not every step.
TEST(CudaCapture, FirstFireCaptureGivesTheDumpsOfAPerStepRun) {
  for (bool graph : {false, true}) {
    SCOPED_TRACE(graph ? "graph" : "ungraphed");
    test::expect_captured_dumps_match_per_step(
        [](const Config& c) { return cuda::make_cuda_backend(c); }, graph,
        graph ? "cuda_capture_graph" : "cuda_capture");
  }
  const auto dir = test::temp_dir("cuda_capture_clean");
  Config c = small();
  c.run.folds = 1;
  c.run.steps_per_fold = 400;
  c.halt.collapse_patience = 0;
  SessionOptions o;
  o.graph = true;
  o.out_dir = dir.string();
  Session s(c, cuda::make_cuda_backend(c), o);
  const Backend* ds = &s.backend();
  RunUntil n;
  n.kind = RunUntil::Kind::Steps;
  n.steps = 32;
  s.run(n);
  const auto a = ds->device_to_host_copies();
  n.steps = 320;
  s.run(n);
  const double per_step = static_cast<double>(ds->device_to_host_copies() - a) / 320.0;
  std::printf("recording, clean: %.3f device-to-host copies per step\n", per_step);
  // A readback (records, history, status, the capture table: 5 copies) every 16 steps, the
  // context areas this configuration gets, instead of a record every step.
  EXPECT_LE(per_step, 5.0 / 16 + 1e-9);
  EXPECT_TRUE(s.dump_paths().empty());
  std::filesystem::remove_all(dir);
}

// Watch conditions on the CUDA backend's outcomes (read back at the fold's end, graphed): the same
// trips at the same steps as on the CPU, their values within the parity tolerance.
TEST(CudaWatch, TripsAsOnTheCpu) {
  Config c = scenario("healthy", 6);
  c.optim.lr_mult[6] = 100;  // the aux group's learning rate: the aux and encoder norms jump
  c.watch.grad_explode = 5;
  c.halt.collapse_patience = 0;
  Session cpu(c, make_cpu_backend(c));
  cpu.run();
  SessionOptions o;
  o.graph = true;
  Session gpu(c, cuda::make_cuda_backend(c), o);
  gpu.run();
  ASSERT_FALSE(cpu.watch_trips().empty());
  ASSERT_EQ(cpu.watch_trips().size(), gpu.watch_trips().size());
  // A trip's value (a gradient group's norm against its moving average) on CUDA against the CPU:
  // the largest relative difference measured on the H200 (2026-12-05, two runs) 5.32e-6, and a
  // tolerance about 10x that.
  constexpr double kWatchValueRelTol = 5e-5;
  double worst = 0;
  for (std::size_t i = 0; i < cpu.watch_trips().size(); ++i) {
    const WatchTrip &a = cpu.watch_trips()[i], &b = gpu.watch_trips()[i];
    EXPECT_EQ(a.condition, b.condition);
    EXPECT_EQ(a.group, b.group);
    EXPECT_EQ(a.step, b.step);
    const double rel = std::abs(b.value - a.value) / std::abs(a.value);
    worst = std::max(worst, rel);
    EXPECT_LE(rel, kWatchValueRelTol) << "trip " << i;
    std::printf("watch %s group %s step %d: CPU %.6g, CUDA %.6g\n",
                std::string(name_of(a.condition)).c_str(),
                kParamGroups[static_cast<std::size_t>(a.group)], a.step, a.value, b.value);
  }
  std::printf("watch values, CUDA against CPU: largest relative difference %.3g\n", worst);
}
