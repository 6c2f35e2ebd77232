// The session's path with a bank that holds its records apart (checks counted and recorded where
// they run, outcomes handed over after the step or at the fold's end, first fires captured into a
// few areas, whole steps replayed as graphs, producers checking their own output) against the CPU
// backend's bank, which scans at the call site and reports every step: without a GPU, an emulated
// device backend wraps the CPU backend and keeps an emulated device bank, as the CUDA backend does.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "delegating_backend.h"
#include "io/run_file.h"
#include "model/check_bank.h"
#include "propagation_checks.h"
#include "session_checks.h"

using namespace nanscope;

namespace {

class EmulatedDeviceBackend final : public test::DelegatingBackend, public CheckBank {
 public:
  explicit EmulatedDeviceBackend(const Config& c)
      : DelegatingBackend(make_cpu_backend(c)), config_(c), setup_(slot_setup(c)), proxy_(*this) {
    inner_->set_observer(&proxy_);
  }
  ~EmulatedDeviceBackend() override { inner_->set_observer(nullptr); }

  // ---- Backend: the CPU backend's, with the observer and the bank kept here ----
  BackendKind kind() const override { return BackendKind::Cuda; }  // a device, emulated
  std::string device_name() const override { return "host"; }
  void load_fold(const TransitionSet& t) override {
    inner_->load_fold(t);
    captured_graph_ = false;  // the fold's data are part of a graph
  }
  // A device fault at this global step's backward.iqn (a CUDA error mid-work), or never.
  std::int64_t fail_at = -1;

  void run_phase(Phase phase, const StepKey& key) override {
    if (key.global_step == fail_at && phase == Phase::BackwardIqn)
      throw DeviceError(
          "backward.cu:290: cublasSgemm(iqn_dpsi): an illegal memory access was encountered",
          ErrorKind::DeviceFault);
    inner_->run_phase(phase, key);
  }
  void run_step(const StepKey& key) override {
    // A step whose observer writes a buffer runs live; otherwise a graph is captured when there is
    // none for this fold's data and checked set, and replayed after (the calls are the same here).
    if (graph_ && !(outer_ && outer_->writes_this_step())) {
      const SlotSet checked = setup_.checked_set();
      if (!captured_graph_ || checked != captured_checked_) {
        captured_graph_ = true;
        captured_checked_ = checked;
        ++captures_;
      }
    }
    for (int p = 0; p < kPhaseCount; ++p) run_phase(static_cast<Phase>(p), key);
  }
  bool supports_step_graph() const override { return true; }
  void set_step_graph(bool on) override { graph_ = on; }
  int step_graph_captures() const override { return captures_; }
  std::int64_t device_to_host_copies() const override { return copies_; }
  SlotView slot(int i) override {
    ++copies_;
    return inner_->slot(i);
  }
  void set_observer(SlotObserver* o) override { outer_ = o; }
  CheckBank& checks() override { return *this; }

  // ---- CheckBank: records kept here, handed over as outcomes ----
  void begin_fold(const SlotSetup& setup) override {
    setup_ = setup;
    inner_->checks().begin_fold(setup);  // the CPU backend's guard reads its own checks
    held_.clear();
    first_.clear();
  }
  void set_checked(int slot, bool on) override {
    setup_.set_checked(slot, on);
    inner_->checks().set_checked(slot, on);
  }
  // First-fire capture, as the CUDA backend does it (few areas, so runs hand over mid-fold).
  static constexpr std::size_t kAreas = 2;
  void set_capture(bool on) override { capture_ = on; }
  void set_report_each_step(bool on) override { report_each_ = on; }
  void begin_step(const StepKey& key) override {
    inner_->checks().begin_step(key);
    now_ = StepOutcome{};
    now_.step = key.step;
    now_.global_step = key.global_step;
    exec_ = 0;
    in_producer_ = 0;
    if (capture_) inner_->read_state(before_);  // the optimizer's shadow on the device
  }
  std::vector<StepOutcome> end_step() override {
    // The update as the guard decided it before it ran (the device's AdamGuard::updated word).
    const std::vector<StepOutcome> inner = inner_->checks().end_step();
    now_.losses = inner_->losses();
    now_.updated = inner.empty() || inner.back().updated;
    if (capture_ && now_.context) now_.context->batch = inner_->batch_context();
    held_.push_back(std::move(now_));
    now_ = StepOutcome{};
    if (report_each_ || (capture_ && held_.size() >= kAreas)) return hand_over();
    return {};
  }
  std::vector<StepOutcome> take_held() override { return hand_over(); }
  void check_now(int slot) override { proxy_.check(slot); }

 private:
  std::vector<StepOutcome> hand_over() {
    if (held_.empty()) return {};
    copies_ += capture_ ? 3 : 2;
    std::vector<StepOutcome> out;
    out.swap(held_);
    for (auto& o : out)
      for (auto& c : o.captured) copies_ += c.values.empty() ? 0 : 1;
    return out;
  }
  // The device's check of a slot, at its call site or in its producer: the step's kinds, the first
  // fire's count and execution position, and with capture on the buffer and context.
  void scan(int slot, int exec) {
    const SlotView v = inner_->slot(slot);
    const ScanResult r = scan_nonfinite(static_cast<const float*>(v.data), v.count);
    if (!r.kinds) return;
    const auto i = static_cast<std::size_t>(slot);
    now_.kinds[i] |= r.kinds;
    if (first_.count(slot)) return;
    first_.insert(slot);
    now_.first_count[i] = r.count;
    now_.first_exec[i] = exec;
    if (!capture_) return;
    const auto* p = static_cast<const float*>(v.data);
    now_.captured.push_back(CapturedSlot{slot, v.shape, std::vector<float>(p, p + v.count), r, {}});
    if (!now_.context) now_.context = StepContext{before_, {}};
  }

  // The CPU backend's call sites: injections forwarded to the session's observer, checks made
  // here. The slots the CUDA backend's own kernels check as they write them (iqn_phi,
  // adam_moments, params) are checked right after their producer, before any injection, unless an
  // injection overwrites them at this step; their check site then does nothing, as on the device.
  struct Proxy final : SlotObserver {
    explicit Proxy(EmulatedDeviceBackend& b) : b(b) {}
    void produced(int slot) override {
      const bool producer_checkable = slot == kIqnPhi || slot == kAdamMoments || slot == kParams;
      if (producer_checkable && b.setup_.checked(slot) &&
          !(b.outer_ && b.outer_->overwrites(slot))) {
        b.scan(slot, b.exec_++);
        b.in_producer_ |= std::uint64_t{1} << slot;
        ++b.producer_checked_;
      }
      if (b.outer_) b.outer_->produced(slot);
    }
    void check(int slot) override {
      const std::uint64_t bit = std::uint64_t{1} << slot;
      if (b.in_producer_ & bit) {
        b.in_producer_ &= ~bit;
      } else {
        const int exec = b.exec_++;
        if (b.setup_.checked(slot)) b.scan(slot, exec);
      }
      if (b.outer_) b.outer_->check(slot);
    }
    EmulatedDeviceBackend& b;
  };

  Config config_;
  SlotSetup setup_;
  Proxy proxy_;
  SlotObserver* outer_ = nullptr;
  StepOutcome now_;
  std::vector<StepOutcome> held_;
  std::set<int> first_;  // slots that fired in the fold
  bool capture_ = false, report_each_ = true, graph_ = false, captured_graph_ = false;
  int exec_ = 0;
  std::uint64_t in_producer_ = 0;
  StateSnapshot before_;
  SlotSet captured_checked_;
  int captures_ = 0;
  std::int64_t copies_ = 0;

 public:
  int producer_checked_ = 0;  // how many checks the producers took (tests)
};

struct Case {
  const char* name;
  std::vector<std::string> sets;
  std::vector<std::string> injections;
  std::set<int> breaks;
};

std::unique_ptr<Session> run_case(const Case& r, bool device, bool graph, bool watch) {
  std::vector<std::string> sets = r.sets;
  if (!watch) sets.push_back("halt.collapse_patience=0");
  const Config c = test::sentinel_config(sets);
  SessionOptions o;
  for (const auto& i : r.injections) o.injections.push_back(parse_injection(i));
  o.breakpoints = r.breaks;
  o.graph = graph;
  auto s = std::make_unique<Session>(
      c,
      device ? std::unique_ptr<Backend>(std::make_unique<EmulatedDeviceBackend>(c))
             : make_cpu_backend(c),
      o);
  s->run();
  return s;
}

void expect_same(const Session& a, const Session& b) {
  ASSERT_EQ(a.history().size(), b.history().size());
  for (std::size_t i = 0; i < a.history().size(); ++i) {
    EXPECT_EQ(a.history()[i].flags, b.history()[i].flags) << "step " << i;
    EXPECT_EQ(a.history()[i].updated, b.history()[i].updated) << "step " << i;
    const double x = a.history()[i].losses.total, y = b.history()[i].losses.total;
    EXPECT_TRUE(x == y || (std::isnan(x) && std::isnan(y)))
        << "step " << i << ": " << x << " vs " << y;
  }
  ASSERT_EQ(a.folds().size(), b.folds().size());
  for (std::size_t f = 0; f < a.folds().size(); ++f)
    for (int s = 0; s < kBuiltinSlotCount; ++s) {
      const SlotRecord &x = a.folds()[f].flags.slots[s], &y = b.folds()[f].flags.slots[s];
      EXPECT_EQ(x.state, y.state) << f << " " << s;
      EXPECT_EQ(x.kinds, y.kinds) << f << " " << s;
      EXPECT_EQ(x.first_step, y.first_step) << f << " " << s;
      EXPECT_EQ(x.count, y.count) << f << " " << s;
      EXPECT_EQ(x.exec_position, y.exec_position) << f << " " << s;
    }
  ASSERT_EQ(a.events().size(), b.events().size());
  for (std::size_t i = 0; i < a.events().size(); ++i) {
    EXPECT_EQ(a.events()[i].kind, b.events()[i].kind);
    EXPECT_EQ(a.events()[i].step, b.events()[i].step);
    EXPECT_EQ(a.events()[i].entry_slot, b.events()[i].entry_slot);
  }
  EXPECT_EQ(a.halt().has_value(), b.halt().has_value());
}

class DevicePath : public ::testing::TestWithParam<Case> {};

}  // namespace

TEST_P(DevicePath, SameSentinelsAsTheHostPathPerStepDeferredAndGraphed) {
  const Case& r = GetParam();
  auto host = run_case(r, false, false, true);
  for (bool graph : {false, true})
    for (bool watch : {true, false}) {
      SCOPED_TRACE(std::string(graph ? "graph" : "ungraphed") +
                   (watch ? ", record every step" : ", fold-end readback"));
      const bool halts_at_step = !r.sets.empty() && r.sets[0] == "halt.on_fire=\"step\"";
      if (!watch && (!r.breaks.empty() || halts_at_step)) continue;  // those read every step anyway
      auto dev = run_case(r, true, graph, watch);
      auto ref = watch ? nullptr : run_case(r, false, false, false);
      expect_same(watch ? *host : *ref, *dev);
    }
}

INSTANTIATE_TEST_SUITE_P(
    Emulated, DevicePath,
    ::testing::Values(
        Case{"aux_param", {}, {"param:aux.w2@0:2"}, {}},
        Case{"bn_d_concat", {}, {"slot:bn_d_concat@0:3"}, {}},
        Case{"sticky", {}, {"slot:aux_loss@0:1:neginf"}, {}},
        Case{"undeferred31", {"sentinel.undefer=[31]"}, {"slot:ensemble_d_logits@0:1"}, {}},
        Case{"disabled18", {"sentinel.disabled=[18]"}, {"slot:aux_loss@0:1"}, {}},
        Case{"guard", {"guard.enabled=true"}, {"slot:aux_loss@0:2"}, {}},
        Case{"breakpoint",
             {"halt.on_fire=\"step\""},
             {"slot:aux_loss@0:1", "slot:aux_dh_s2_nb@1:2"},
             {kAuxDHS2Nb}},
        Case{"halt_fold_end", {"halt.on_fire=\"fold_end\""}, {"slot:aux_loss@0:2"}, {}},
        Case{"iqn_param", {}, {"param:iqn.out.w@1:2:posinf"}, {}},
        // Slots their producers check on the device: an injection must reach the check.
        Case{"params_slot", {}, {"slot:params@0:2"}, {}},
        Case{"moments_slot", {"guard.enabled=true"}, {"slot:adam_moments@1:1:posinf"}, {}},
        Case{"iqn_phi_slot", {}, {"slot:iqn_phi@0:1:nan:5"}, {}},
        Case{"iqn_phi_param", {}, {"param:iqn.phi.w@0:1"}, {}}),
    [](const auto& info) { return info.param.name; });

TEST(DevicePath, FoldEndReadbackMakesNoCopyPerStepAndGraphsAreCapturedOncePerFold) {
  Config c = test::sentinel_config({"halt.collapse_patience=0"});
  c.run.steps_per_fold = 40;
  for (bool graph : {false, true}) {
    SessionOptions o;
    o.graph = graph;
    Session s(c, std::make_unique<EmulatedDeviceBackend>(c), o);
    s.run();
    EXPECT_EQ(s.backend().device_to_host_copies(),
              2 * c.run.folds);  // one readback per fold, whatever its length
    EXPECT_EQ(s.backend().step_graph_captures(), graph ? c.run.folds : 0);
    EXPECT_EQ(s.history().size(), static_cast<std::size_t>(c.run.folds * c.run.steps_per_fold));
  }
}

// A device bank lets a producer check its slot except at a step where an injection writes the slot
// after it (then the check site must see the injected value).
TEST(DevicePath, ProducersCheckTheirSlotsUnlessAnInjectionWritesThem) {
  Config c = test::sentinel_config({"halt.collapse_patience=0"});
  c.run.folds = 1;
  c.run.steps_per_fold = 4;
  auto producer_checks = [&](const std::vector<std::string>& injections,
                             const std::vector<int>& disabled) {
    Config rc = c;
    rc.sentinel.disabled = disabled;
    SessionOptions o;
    for (const auto& i : injections) o.injections.push_back(parse_injection(i));
    auto b = std::make_unique<EmulatedDeviceBackend>(rc);
    const EmulatedDeviceBackend* seen = b.get();
    Session s(rc, std::move(b), o);
    s.run();
    return seen->producer_checked_;
  };
  EXPECT_EQ(producer_checks({}, {}), 3 * 4);                       // iqn_phi, adam_moments, params
  EXPECT_EQ(producer_checks({"slot:params@0:2"}, {}), 3 * 4 - 1);  // step 2's params at its site
  EXPECT_EQ(producer_checks({"slot:iqn_phi@0:0", "slot:adam_moments@0:3"}, {}), 3 * 4 - 2);
  EXPECT_EQ(producer_checks({}, {kParams}), 2 * 4);  // a disabled slot: no check at all
}

TEST(DevicePath, TheGuardIsTheBackendsAndBitExact) {
  test::expect_guard_skips_bit_exact(
      [](const Config& c) { return std::make_unique<EmulatedDeviceBackend>(c); });
}

// Recording without a per-step readback: the device's first-fire capture (here two context areas,
// so the session also reads back mid-fold) gives the dumps of a run read every step.
TEST(DevicePath, FirstFireCaptureGivesTheDumpsOfAPerStepRun) {
  for (bool graph : {false, true}) {
    SCOPED_TRACE(graph ? "graph" : "ungraphed");
    test::expect_captured_dumps_match_per_step(
        [](const Config& c) { return std::make_unique<EmulatedDeviceBackend>(c); }, graph,
        graph ? "capture_graph" : "capture");
  }
}

TEST(DevicePath, TheGuardSkipsBitExactInsideAReplayedGraph) {
  test::expect_graphed_guard_skips_bit_exact(
      [](const Config& c) { return std::make_unique<EmulatedDeviceBackend>(c); });
}

// Through the session's device path (checks enqueued, results read back after the step, whole steps
// as graphs), one NaN injected into a slot fires the slot's closure, as on the host path.
TEST(DevicePath, EveryInjectionFiresItsClosureGraphedAndNot) {
  const test::MakeBackend make = [](const Config& c) {
    return std::make_unique<EmulatedDeviceBackend>(c);
  };
  for (bool graph : {false, true}) {
    SCOPED_TRACE(graph ? "graphed" : "ungraphed");
    test::expect_probes_fire_their_closures(test::propagation_config(true), make, graph);
  }
}

// A device fault in the middle of a recording run, graphed and ungraphed, deferred readback and
// first-fire capture on: the error names the call (exit 70), the run file holds the steps the
// session had read back, and every dump written so far reads.
TEST(DevicePath, ADeviceFaultMidRunLeavesReadableFilesGraphedAndNot) {
  for (bool graph : {false, true}) {
    SCOPED_TRACE(graph ? "graphed" : "ungraphed");
    Config c = test::sentinel_config({"guard.enabled=true", "halt.collapse_patience=0"});
    SessionOptions o;
    o.graph = graph;
    o.injections = {parse_injection("slot:batch@0:1"), parse_injection("slot:h_s1@1:0")};
    o.out_dir = test::temp_dir(graph ? "fault_graph" : "fault_plain").string();
    auto backend = std::make_unique<EmulatedDeviceBackend>(c);
    backend->fail_at = 9;  // fold 1, step 3
    Session s(c, std::move(backend), o);
    // At least fold 0 whole; the steps of fold 1 read back before the fault at most.
    test::expect_device_fault_keeps_files(s, "cublasSgemm(iqn_dpsi)", 6, 9, 2);
  }
}

// Watches evaluate finished outcomes: a bank that holds steps and hands them over at the fold's end
// trips the same conditions at the same steps with the same values as the host path.
TEST(DevicePath, WatchesTripAsOnTheHostPathWithHeldOutcomes) {
  Config c = test::scenario_config("healthy", 6);
  c.optim.lr_mult[6] = 100;  // the aux group's learning rate: its norm jumps at step 1
  c.watch.grad_explode = 5;
  c.halt.collapse_patience = 0;  // nothing needs a step's outcome at its end
  Session host(c, make_cpu_backend(c));
  host.run();
  SessionOptions o;
  o.graph = true;
  Session dev(c, std::make_unique<EmulatedDeviceBackend>(c), o);
  dev.run();
  ASSERT_FALSE(host.watch_trips().empty());
  ASSERT_EQ(host.watch_trips().size(), dev.watch_trips().size());
  for (std::size_t i = 0; i < host.watch_trips().size(); ++i) {
    const WatchTrip &a = host.watch_trips()[i], &b = dev.watch_trips()[i];
    EXPECT_EQ(a.condition, b.condition);
    EXPECT_EQ(a.group, b.group);
    EXPECT_EQ(a.step, b.step);
    EXPECT_EQ(a.value, b.value);
  }
  EXPECT_EQ(dev.backend().device_to_host_copies(), 2);  // one readback for the fold
}
