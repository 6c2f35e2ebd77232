// The SDK session's device-path accounting where there is no GPU: libnanscope with a CUDA plugin
// that simulates the device bank in host memory (tests/plugin/simulated_device_plugin.cpp), its
// "captures" and "replays" driven by the test. What it checks is the session's own logic (replays
// accounted one by one or together, folds, the guard's result, captures refused or kept), the
// same on a real device (tests/sdk/sdk_device_test.cu runs the like there).
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "core/slot_table.h"
#include "io/dump_file.h"
#include "io/run_file.h"
#include "nanscope/nanscope.h"
#include "sdk_test_util.h"

namespace {

namespace fs = std::filesystem;

using CaptureFn = void (*)(void*, int);
using ReplayFn = void (*)(void*);

class SimulatedDevice : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("NANSCOPE_CUDA_PLUGIN", SIMULATED_PLUGIN, 1);  // before libnanscope's first device slot
    plugin_ = dlopen(SIMULATED_PLUGIN, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(plugin_, nullptr) << dlerror();
    capture_ = reinterpret_cast<CaptureFn>(dlsym(plugin_, "nanscope_sim_capture"));
    replay_ = reinterpret_cast<ReplayFn>(dlsym(plugin_, "nanscope_sim_replay"));
    ASSERT_TRUE(capture_ && replay_);
    dir_ = fs::temp_directory_path() / ("nanscope_sdk_sim_" + std::to_string(getpid()));
    fs::remove_all(dir_);
    keep_ = dir_.string();
    ns_session_options o{};
    o.struct_size = sizeof o;
    o.run_dir = keep_.c_str();
    o.trainer = "simulated";
    o.guard = 1;
    o.capture = 1;
    o.halt_on_nan = 1;
    o.overwrite = 1;
    NS_OK_(ns_session_open(&o, &s_));
    NS_OK_(add("a", 0, "b", a_.data(), &ia_));
    NS_OK_(add("b", 1, nullptr, b_.data(), &ib_));
  }
  void TearDown() override {
    if (s_.id) {
      EXPECT_EQ(ns_session_close(s_), NS_OK) << ns_last_error();
    }
    fs::remove_all(dir_);
    if (plugin_) dlclose(plugin_);
  }
  ns_status add(const char* name, int order, const char* consumers, const float* p,
                std::int32_t* id) {
    ns_slot_desc d{};
    d.struct_size = sizeof d;
    d.name = name;
    d.order = order;
    d.consumers = consumers;
    d.count = 8;
    d.dtype = NS_F32;
    d.memory = NS_DEVICE;
    d.address = reinterpret_cast<std::uint64_t>(p);
    return ns_slot_register(s_, &d, id);
  }
  // A step's calls on `stream`: begin, check a and b.
  ns_status step_calls(int step) {
    if (ns_status st = ns_step_begin(s_, step, stream_)) return st;
    const std::int32_t ids[] = {ia_, ib_};
    return ns_check(s_, ids, 2, stream_);
  }
  void poison(bool on) { a_[3] = on ? std::numeric_limits<float>::quiet_NaN() : 1.0f; }
  // Captures one step (the graph), as the trainer would inside cudaStreamBeginCapture.
  void capture(int step) {
    capture_(stream_, 1);
    ASSERT_EQ(step_calls(step), NS_OK) << ns_last_error();
    ns_step_result r = blank_result();
    ASSERT_EQ(ns_step_end(s_, &r), NS_OK) << ns_last_error();
    EXPECT_EQ(r.fired, -1);
    capture_(stream_, 0);
  }
  nanscope::RunFileData run_file() { return nanscope::read_run_file((dir_ / "run.h5").string()); }

  void* plugin_ = nullptr;
  CaptureFn capture_ = nullptr;
  ReplayFn replay_ = nullptr;
  fs::path dir_;
  std::string keep_;
  ns_session s_{};
  std::vector<float> a_ = std::vector<float>(8, 1.0f), b_ = std::vector<float>(8, 2.0f);
  std::int32_t ia_ = -1, ib_ = -1;
  void* stream_ = reinterpret_cast<void*>(0x5157);
};

TEST_F(SimulatedDevice, ReplaysAccountedTogetherKeepTheirFireFirstFireAndHalt) {
  NS_OK_(ns_fold_begin(s_, 0));
  ASSERT_NO_FATAL_FAILURE(capture(0));
  for (int i = 0; i < 4; ++i) {  // the NaN in the second replay only
    poison(i == 1);
    replay_(stream_);
  }
  ns_step_result r = blank_result();
  NS_OK_(ns_step_replayed(s_, stream_, &r));
  EXPECT_EQ(r.fired, 1);
  EXPECT_EQ(r.first_fire, 1);
  EXPECT_EQ(r.halt, NS_HALT_NAN);
  EXPECT_EQ(r.entry_slot, ia_);
  EXPECT_EQ(r.entry_step, 1);
  EXPECT_EQ(r.updated, 1) << "the last replay was clean";
  // Two replays left to ns_fold_end; then nothing left to account.
  replay_(stream_);
  replay_(stream_);
  NS_OK_(ns_fold_end(s_, 0));
  NS_OK_(ns_session_close(s_));
  s_ = ns_session{};
  const nanscope::RunFileData run = run_file();
  ASSERT_EQ(run.steps.size(), 6u);
  for (std::size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(run.steps[i].step, static_cast<int>(i));
    EXPECT_EQ(run.steps[i].flags[0], i == 1 ? 1 : 0) << "step " << i;
  }
  EXPECT_EQ(run.folds[0].entry_step.value_or(-1), 1);
  EXPECT_EQ(run.folds[0].slots[0].count, 1);
  ASSERT_EQ(run.events.size(), 2u) << "the first fire and the halt";
  EXPECT_TRUE(fs::exists(dir_ / "dumps" / "fold000_step00000001_a.h5"));
}

TEST_F(SimulatedDevice, ARoleSlotCheckedAtAnotherBufferGivesThatBuffersValue) {
  // An eager framework's loss lives somewhere else each step (ns_check_at): the run's loss is read
  // where the step checked it, never from the buffer the slot was registered with.
  std::vector<float> registered(1, 111.0f);
  std::int32_t il = -1;
  ns_slot_desc d = NS_SLOT_DESC_INIT;
  d.name = "loss";
  d.order = 2;
  d.count = 1;
  d.memory = NS_DEVICE;
  d.role = NS_ROLE_LOSS;
  d.address = reinterpret_cast<std::uint64_t>(registered.data());
  NS_OK_(ns_slot_register(s_, &d, &il));
  NS_OK_(ns_fold_begin(s_, 0));
  std::vector<std::vector<float>> losses = {{2.5f}, {3.5f}, {4.5f}};
  for (int step = 0; step < 3; ++step) {
    NS_OK_(ns_step_begin(s_, step, stream_));
    const std::uint64_t at[] = {reinterpret_cast<std::uint64_t>(losses[step].data())};
    NS_OK_(ns_check_at(s_, &il, at, 1, stream_));
    ns_step_result r = blank_result();
    NS_OK_(ns_step_end(s_, &r));
  }
  NS_OK_(ns_fold_end(s_, 0));
  NS_OK_(ns_session_close(s_));
  s_ = ns_session{};
  const nanscope::RunFileData run = run_file();
  ASSERT_EQ(run.steps.size(), 3u);
  for (int step = 0; step < 3; ++step)
    EXPECT_EQ(run.steps[step].losses.total, losses[step][0]) << "step " << step;
}

// bfloat16 and float16 device buffers go to the device as what they are (the plugin's item says
// the type): a float16 -Inf and a bfloat16 NaN fire with their kinds, the first fire's copy holds
// the values widened, and a bfloat16 loss slot's value is read in its type.
TEST_F(SimulatedDevice, SixteenBitDeviceBuffersAreCheckedInTheirTypeAndTheirLossReadSo) {
  std::vector<std::uint16_t> half(8, 0x3c00), brain(8, 0x3f80), loss(1, 0x4020);  // 1, 1, 2.5
  std::int32_t ih = -1, ibf = -1, il = -1;
  const struct {
    const char* name;
    std::vector<std::uint16_t>* buffer;
    std::int32_t dtype, role;
    std::int32_t* id;
  } slots[] = {{"half", &half, NS_F16, NS_ROLE_NONE, &ih},
               {"brain", &brain, NS_BF16, NS_ROLE_NONE, &ibf},
               {"loss16", &loss, NS_BF16, NS_ROLE_LOSS, &il}};
  int order = 2;
  for (const auto& slot : slots) {
    ns_slot_desc d = NS_SLOT_DESC_INIT;
    d.name = slot.name;
    d.order = order++;
    d.count = static_cast<std::int64_t>(slot.buffer->size());
    d.dtype = slot.dtype;
    d.role = slot.role;
    d.memory = NS_DEVICE;
    d.address = reinterpret_cast<std::uint64_t>(slot.buffer->data());
    NS_OK_(ns_slot_register(s_, &d, slot.id));
  }
  NS_OK_(ns_fold_begin(s_, 0));
  for (int step = 0; step < 2; ++step) {
    if (step == 1) {
      half[5] = 0xfc00;   // float16 -Inf
      brain[2] = 0x7fc1;  // a bfloat16 NaN
    }
    NS_OK_(ns_step_begin(s_, step, stream_));
    const std::int32_t ids[] = {ih, ibf, il};
    NS_OK_(ns_check(s_, ids, 3, stream_));
    ns_step_result r = blank_result();
    NS_OK_(ns_step_end(s_, &r));
    EXPECT_EQ(r.fired, step);
  }
  NS_OK_(ns_fold_end(s_, 0));
  NS_OK_(ns_session_close(s_));
  s_ = ns_session{};
  const nanscope::RunFileData run = run_file();
  EXPECT_EQ(run.folds[0].slots[static_cast<std::size_t>(ih)].kinds, nanscope::kKindNegInf);
  EXPECT_EQ(run.folds[0].slots[static_cast<std::size_t>(ibf)].kinds, nanscope::kKindNaN);
  EXPECT_EQ(run.steps[0].losses.total, 2.5);
  const nanscope::DumpData dump =
      nanscope::read_dump((dir_ / "dumps" / "fold000_step00000001_half.h5").string());
  bool seen = false;
  for (const auto& slot : dump.slots) {
    if (slot.index != ih) continue;
    seen = true;
    ASSERT_EQ(slot.values.size(), 8u);
    EXPECT_EQ(slot.values[0], 1.0f);
    EXPECT_EQ(slot.values[5], -std::numeric_limits<float>::infinity());
  }
  EXPECT_TRUE(seen) << "the float16 slot's first-fire copy is in the dump";
}

TEST_F(SimulatedDevice, AnUpdateAskedForInAnEagerStepDoesNotStickToLaterReplays) {
  NS_OK_(ns_fold_begin(s_, 0));
  ASSERT_NO_FATAL_FAILURE(capture(0));
  replay_(stream_);
  ns_step_result r = blank_result();
  NS_OK_(ns_step_replayed(s_, stream_, &r));
  // An eager step between replays, whose guard is asked for and says skip.
  poison(true);
  NS_OK_(step_calls(1));
  std::int32_t allowed = -1;
  NS_OK_(ns_guard_allows_update(s_, &allowed));
  EXPECT_EQ(allowed, 0) << "a fired: the guard says skip";
  NS_OK_(ns_step_end(s_, &r));
  EXPECT_EQ(r.updated, 0);
  // The graph again, clean: its update is the guard word's, not the eager step's answer.
  poison(false);
  replay_(stream_);
  NS_OK_(ns_step_replayed(s_, stream_, &r));
  EXPECT_EQ(r.fired, 0);
  EXPECT_EQ(r.updated, 1);
  NS_OK_(ns_fold_end(s_, 0));
}

// Replays not yet accounted, then an eager step that reports its loss scale: ns_step_end accounts
// them all, and the scale and its skip belong to the eager step, the last one, alone.
TEST_F(SimulatedDevice, ALossScaleBelongsToTheStepThatReportedItNotToEarlierReplays) {
  NS_OK_(ns_fold_begin(s_, 0));
  ASSERT_NO_FATAL_FAILURE(capture(0));
  replay_(stream_);
  replay_(stream_);
  NS_OK_(step_calls(0));
  NS_OK_(ns_loss_scale(s_, 512.0, 1));
  ns_step_result r = blank_result();
  NS_OK_(ns_step_end(s_, &r));
  EXPECT_EQ(r.replays, 3);
  NS_OK_(ns_fold_end(s_, 0));
  NS_OK_(ns_session_close(s_));
  s_ = ns_session{};
  const nanscope::RunFileData run = run_file();
  ASSERT_EQ(run.steps.size(), 3u);
  EXPECT_TRUE(std::isnan(run.steps[0].losses.loss_scale));
  EXPECT_TRUE(std::isnan(run.steps[1].losses.loss_scale));
  EXPECT_EQ(run.steps[2].losses.loss_scale, 512.0);
  int skips = 0;
  for (const nanscope::RunEventRow& e : run.events)
    if (e.kind == nanscope::EventKind::LossScaleSkip) {
      ++skips;
      EXPECT_EQ(e.step, 2);
    }
  EXPECT_EQ(skips, 1);
}

TEST_F(SimulatedDevice, WhatACaptureWouldBreakIsRefusedAndTheSessionGoesOn) {
  NS_OK_(ns_fold_begin(s_, 0));
  // A step begun outside a capture cannot end, nor ask the guard, inside one.
  NS_OK_(step_calls(0));
  capture_(stream_, 1);
  ns_step_result r = blank_result();
  EXPECT_REFUSED(ns_step_end(s_, &r), NS_ERR_STATE, "outside a capture");
  std::int32_t allowed = -1;
  EXPECT_REFUSED(ns_guard_allows_update(s_, &allowed), NS_ERR_STATE, "captured");
  capture_(stream_, 0);
  NS_OK_(ns_step_end(s_, &r));
  // During a capture: folds, addresses, replays' accounting.
  ASSERT_NO_FATAL_FAILURE(capture(1));
  capture_(stream_, 1);
  EXPECT_REFUSED(ns_fold_end(s_, 0), NS_ERR_STATE, "being captured");
  EXPECT_REFUSED(ns_slot_set_address(s_, ia_, reinterpret_cast<std::uint64_t>(b_.data())),
                 NS_ERR_STATE, "being captured");
  EXPECT_REFUSED(ns_step_replayed(s_, stream_, &r), NS_ERR_STATE, "being captured");
  // Closing would wait for the stream and break the trainer's capture: refused, the session open.
  EXPECT_REFUSED(ns_session_close(s_), NS_ERR_STATE, "being captured");
  NS_OK_(step_calls(1));  // the capture and the session both go on
  NS_OK_(ns_step_end(s_, &r));
  EXPECT_EQ(r.fired, -1) << "a step of the capture";
  capture_(stream_, 0);
  ASSERT_NO_FATAL_FAILURE(capture(1));  // that capture held a step of its own: captured again
  replay_(stream_);
  NS_OK_(ns_step_replayed(s_, stream_, &r));
  EXPECT_REFUSED(ns_step_replayed(s_, stream_, &r), NS_ERR_STATE, "no step ran");
  // A buffer moved after the capture: the graph's replays are no longer accounted.
  std::vector<float> moved(8, 3.0f);
  NS_OK_(ns_slot_set_address(s_, ia_, reinterpret_cast<std::uint64_t>(moved.data())));
  replay_(stream_);
  EXPECT_REFUSED(ns_step_replayed(s_, stream_, &r), NS_ERR_STATE, "no step of this fold");
  NS_OK_(ns_fold_end(s_, 0));
  NS_OK_(ns_session_close(s_));
  s_ = ns_session{};
  EXPECT_EQ(run_file().steps.size(), 2u) << "the eager step and the one accounted replay";
}

TEST_F(SimulatedDevice, CloseAccountsTheReplaysLeftAndUndeferEndsTheGraphsAccounting) {
  std::vector<float> late(8, 1.0f);
  std::int32_t il = -1;
  ns_slot_desc d{};
  d.struct_size = sizeof d;
  d.name = "late";
  d.order = 2;
  d.count = 8;
  d.dtype = NS_F32;
  d.memory = NS_DEVICE;
  d.address = reinterpret_cast<std::uint64_t>(late.data());
  d.state = NS_SLOT_DEFERRED;
  NS_OK_(ns_slot_register(s_, &d, &il));
  NS_OK_(ns_fold_begin(s_, 0));
  ASSERT_NO_FATAL_FAILURE(capture(0));
  replay_(stream_);
  ns_step_result r = blank_result();
  NS_OK_(ns_step_replayed(s_, stream_, &r));
  capture_(stream_, 1);
  EXPECT_REFUSED(ns_slot_undefer(s_, il), NS_ERR_STATE, "being captured");
  capture_(stream_, 0);
  // Undeferred after the capture: the graph does not check it, so its replays are refused.
  NS_OK_(ns_slot_undefer(s_, il));
  EXPECT_REFUSED(ns_step_replayed(s_, stream_, &r), NS_ERR_STATE, "no step of this fold");
  // Captured again with it; two replays left for ns_session_close to account.
  ASSERT_NO_FATAL_FAILURE(capture(1));
  replay_(stream_);
  replay_(stream_);
  NS_OK_(ns_session_close(s_));
  s_ = ns_session{};
  const nanscope::RunFileData run = run_file();
  ASSERT_EQ(run.steps.size(), 3u) << "the first replay and the two left at close";
  EXPECT_EQ(run.steps[2].step, 2);
  EXPECT_EQ(run.steps[2].checked.members(), (std::vector<int>{0, 1}))
      << "the new graph's checks: a and b";
}

}  // namespace

namespace {

// The device bank's rows are as wide as nanscope's own table: a 37th device slot is refused,
// naming the limit and the host path's, and the session goes on with its 36.
// A device session as wide as a host one: 600 slots, one of them fired in a replayed graph, absent
// slots after them; the session accounts every slot from the device's rows, and its dump holds the
// fired slot's copy.
TEST_F(SimulatedDevice, AWideDeviceSessionAccountsEverySlotOfItsReplays) {
  constexpr int kMore = 598, kN = 8;
  std::vector<float> pool(static_cast<std::size_t>(kMore) * kN, 0.5f);
  std::vector<std::int32_t> ids = {ia_, ib_};
  std::vector<std::string> names;
  for (int k = 0; k < kMore; ++k) names.push_back("w" + std::to_string(k + 2));
  for (int k = 0; k < kMore; ++k) {
    std::int32_t id = -1;
    NS_OK_(add(names[static_cast<std::size_t>(k)].c_str(), k + 2, nullptr,
               pool.data() + static_cast<std::size_t>(k) * kN, &id));
    ids.push_back(id);
  }
  for (const char* absent : {"gone0", "gone1", "gone2"}) {
    ns_slot_desc d{};
    d.struct_size = sizeof d;
    d.name = absent;
    d.count = 8;
    d.memory = NS_DEVICE;
    d.state = NS_SLOT_ABSENT;
    std::int32_t id = -1;
    NS_OK_(ns_slot_register(s_, &d, &id));
  }
  NS_OK_(ns_fold_begin(s_, 0));
  capture_(stream_, 1);
  NS_OK_(ns_step_begin(s_, 0, stream_));
  NS_OK_(ns_check(s_, ids.data(), static_cast<std::int32_t>(ids.size()), stream_));
  ns_step_result r = blank_result();
  NS_OK_(ns_step_end(s_, &r));
  capture_(stream_, 0);
  constexpr int kFired = 555;  // w555: slot 555, pool slot 553
  for (int step = 0; step < 4; ++step) {
    pool[static_cast<std::size_t>(kFired - 2) * kN + 5] =
        step == 2 ? std::numeric_limits<float>::infinity() : 0.5f;
    replay_(stream_);
    r = blank_result();
    NS_OK_(ns_step_replayed(s_, stream_, &r));
    EXPECT_EQ(r.fired, step == 2 ? 1 : 0) << step;
    EXPECT_EQ(r.entry_slot, step >= 2 ? kFired : -1) << step;
  }
  NS_OK_(ns_fold_end(s_, 0));
  NS_OK_(ns_session_close(s_));
  s_ = ns_session{};
  const nanscope::RunFileData run = run_file();
  ASSERT_EQ(run.table->size(), 2 + kMore + 3);
  ASSERT_EQ(run.steps.size(), 4u);
  EXPECT_EQ(run.steps[2].flags[kFired], 2);
  EXPECT_EQ(run.steps[2].checked.count(), 2 + kMore);
  EXPECT_EQ(run.folds[0].slots[kFired].first_step, 2);
  const fs::path dump = dir_ / "dumps" / "fold000_step00000002_w555.h5";
  ASSERT_TRUE(fs::exists(dump)) << dump;
  const nanscope::DumpData d = nanscope::read_dump(dump.string());
  ASSERT_EQ(d.slots.size(), 1u);
  EXPECT_EQ(d.slots[0].index, kFired);
  ASSERT_EQ(d.slots[0].values.size(), static_cast<std::size_t>(kN));
  EXPECT_TRUE(std::isinf(d.slots[0].values[5]));
  EXPECT_EQ(d.slots[0].values[4], 0.5f);
}

// The first-fire copies share one arena of NANSCOPE_SDK_CAPTURE_MB: a slot fired once it is spent
// is left out of the dumps (the run file still has its fire), and a bad value is refused by name.
TEST_F(SimulatedDevice, FirstFireCopiesPastTheBudgetAreLeftOutAndABadBudgetIsRefused) {
  constexpr int kBig = 200000;  // 800 kB: one fits in 1 MiB, two do not
  std::vector<float> c(kBig, 1.0f), d(kBig, 1.0f);
  std::int32_t ic = -1, id = -1;
  ns_slot_desc desc{};
  desc.struct_size = sizeof desc;
  desc.count = kBig;
  desc.dtype = NS_F32;
  desc.memory = NS_DEVICE;
  desc.name = "c";
  desc.order = 2;
  desc.address = reinterpret_cast<std::uint64_t>(c.data());
  NS_OK_(ns_slot_register(s_, &desc, &ic));
  desc.name = "d";
  desc.order = 3;
  desc.address = reinterpret_cast<std::uint64_t>(d.data());
  NS_OK_(ns_slot_register(s_, &desc, &id));
  setenv("NANSCOPE_SDK_CAPTURE_MB", "lots", 1);
  EXPECT_REFUSED(ns_fold_begin(s_, 0), NS_ERR_ARGUMENT, "NANSCOPE_SDK_CAPTURE_MB='lots'");
  setenv("NANSCOPE_SDK_CAPTURE_MB", "1", 1);
  const ns_status begun = ns_fold_begin(s_, 0);
  unsetenv("NANSCOPE_SDK_CAPTURE_MB");
  ASSERT_EQ(begun, NS_OK) << ns_last_error();
  const std::int32_t ids[] = {ic, id};
  for (int step = 0; step < 3; ++step) {  // both fire first at step 1: c is checked first
    c[10] = step == 1 ? std::numeric_limits<float>::quiet_NaN() : 1.0f;
    d[20] = step == 1 ? std::numeric_limits<float>::quiet_NaN() : 1.0f;
    NS_OK_(ns_step_begin(s_, step, stream_));
    NS_OK_(ns_check(s_, ids, 2, stream_));
    ns_step_result r = blank_result();
    NS_OK_(ns_step_end(s_, &r));
    EXPECT_EQ(r.first_fire, step == 1 ? 1 : 0) << step;
  }
  NS_OK_(ns_fold_end(s_, 0));
  NS_OK_(ns_session_close(s_));
  s_ = ns_session{};
  const fs::path kept = dir_ / "dumps" / "fold000_step00000001_c.h5";
  ASSERT_TRUE(fs::exists(kept)) << kept;
  const nanscope::DumpData dump = nanscope::read_dump(kept.string());
  ASSERT_EQ(dump.slots.size(), 1u) << "d fired once the arena was spent: no copy of it";
  EXPECT_EQ(dump.slots[0].index, ic);
  EXPECT_TRUE(std::isnan(dump.slots[0].values[10]));
  const nanscope::RunFileData run = run_file();
  EXPECT_EQ(run.folds[0].slots[static_cast<std::size_t>(id)].first_step, 1);
  EXPECT_EQ(run.folds[0].slots[static_cast<std::size_t>(ic)].first_step, 1);
}

}  // namespace
