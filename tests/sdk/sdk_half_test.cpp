// The SDK's bfloat16 and float16 host buffers, the reduced types' watches and the loss scale, as a
// trainer uses them through the C API (docs/sdk.md, "Element types", "Watches", "Loss scaling");
// the run files are read back with nanscope's own reader.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "core/half_float.h"
#include "io/dump_file.h"
#include "io/run_file.h"
#include "nanscope/nanscope.h"
#include "sdk_api_util.h"
#include "sdk_test_util.h"

namespace {

using namespace sdk_api_test;

// A trainer's bfloat16 and float16 buffers, checked on the host path in their own type: each slot
// fires with the kinds its values hold, its health row is the one a float32 slot of the same
// values gets, bit for bit, and its dump keeps the values widened.
TEST(SdkApiHalf, HalfBuffersAreCheckedInTheirOwnTypeWithAFloat32SlotsHealth) {
  const fs::path dir = fresh_dir("half");
  const ns_session_options o = options(dir.string());
  ns_session s{};
  ASSERT_EQ(ns_session_open(&o, &s), NS_OK) << ns_last_error();
  // 1, -0, the largest finite value, a subnormal, 0.5, -3, then (at step 1) a NaN and -Inf.
  std::vector<std::uint16_t> bf = {0x3f80, 0x8000, 0x7f7f, 0x0001, 0x3f00, 0xc040, 0, 0};
  std::vector<std::uint16_t> hf = {0x3c00, 0x8000, 0x7bff, 0x0001, 0x3800, 0xc200, 0, 0};
  std::vector<float> bf_wide(bf.size()), hf_wide(hf.size());
  const auto widen = [&] {
    for (std::size_t i = 0; i < bf.size(); ++i) {
      bf_wide[i] = static_cast<float>(nanscope::BFloat16{bf[i]});
      hf_wide[i] = static_cast<float>(nanscope::Float16{hf[i]});
    }
  };
  widen();
  std::int32_t ids[4];
  const char* names[] = {"bf16", "fp16", "bf16_as_f32", "fp16_as_f32"};
  const void* buffers[] = {bf.data(), hf.data(), bf_wide.data(), hf_wide.data()};
  const ns_dtype types[] = {NS_BF16, NS_F16, NS_F32, NS_F32};
  for (int k = 0; k < 4; ++k) {
    ns_slot_desc d = desc(names[k], k, nullptr, 8);
    d.address = reinterpret_cast<std::uint64_t>(buffers[k]);
    d.state = NS_SLOT_CHECKED;
    d.dtype = types[k];
    NS_OK_(ns_slot_register(s, &d, &ids[k]));
  }
  NS_OK_(ns_fold_begin(s, 0));
  for (int step = 0; step < 2; ++step) {
    if (step == 1) {
      bf[6] = 0x7fc1;  // a NaN with a payload
      bf[7] = 0xff80;  // -Inf
      hf[6] = 0x7e01;
      hf[7] = 0xfc00;
      widen();
    }
    NS_OK_(ns_step_begin(s, step, nullptr));
    NS_OK_(ns_check(s, ids, 4, nullptr));
    ns_step_result r = blank_result();
    NS_OK_(ns_step_end(s, &r));
    EXPECT_EQ(r.fired, step);
    if (step == 1) {
      EXPECT_EQ(r.entry_slot, ids[0]) << "bf16 has the lowest order";
    }
  }
  NS_OK_(ns_fold_end(s, 0));
  NS_OK_(ns_session_close(s));

  const nanscope::RunFileData run = nanscope::read_run_file((dir / "run.h5").string());
  ASSERT_EQ(run.folds.size(), 1u);
  for (int k = 0; k < 4; ++k) {
    EXPECT_EQ(run.folds[0].slots[static_cast<std::size_t>(k)].kinds,
              nanscope::kKindNaN | nanscope::kKindNegInf)
        << names[k];
    EXPECT_EQ(run.folds[0].slots[static_cast<std::size_t>(k)].first_step, 1) << names[k];
  }
  EXPECT_NE((*run.table)[0].buffer.find("bfloat16"), std::string::npos) << (*run.table)[0].buffer;
  EXPECT_NE((*run.table)[1].buffer.find("float16"), std::string::npos) << (*run.table)[1].buffer;
  ASSERT_EQ(run.steps.size(), 2u);
  for (const nanscope::RunStepRow& row : run.steps) {
    ASSERT_EQ(row.health.size(), 4u);
    // Every field but the margin and the underflow share (the 16-bit type's own) bit for bit.
    for (int k = 0; k < 2; ++k)
      for (int f = 0; f < nanscope::kHealthFieldCount; ++f) {
        if (f == nanscope::kHealthOverflowMargin || f == nanscope::kHealthUnderflowShare) continue;
        EXPECT_EQ(std::bit_cast<std::uint32_t>(
                      row.health[static_cast<std::size_t>(k)][static_cast<std::size_t>(f)]),
                  std::bit_cast<std::uint32_t>(
                      row.health[static_cast<std::size_t>(k + 2)][static_cast<std::size_t>(f)]))
            << names[k] << " at step " << row.step << ": " << nanscope::kHealthFieldNames[f];
      }
  }
  EXPECT_EQ(run.steps[0].health[0][nanscope::kHealthMax], 0x1.fep127f) << "bfloat16's largest";
  EXPECT_EQ(run.steps[0].health[1][nanscope::kHealthMax], 65504.f) << "float16's largest";
  EXPECT_EQ(run.steps[1].health[1][nanscope::kHealthNonfinite], 2.f);
  // float16's largest value: no margin left; float32's copy of it: log2(3.4e38 / 65504).
  EXPECT_EQ(run.steps[0].health[1][nanscope::kHealthOverflowMargin], 0.f);
  EXPECT_EQ(run.steps[0].health[3][nanscope::kHealthOverflowMargin],
            static_cast<float>(std::log2(3.4028234663852886e38) - std::log2(65504.0)));
  // The float16 subnormal (0x0001) is one of 8 values; in float32 it is a normal number.
  EXPECT_EQ(run.steps[0].health[1][nanscope::kHealthUnderflowShare], 1.f / 8);
  EXPECT_EQ(run.steps[0].health[3][nanscope::kHealthUnderflowShare], 0.f);

  const nanscope::DumpData dump =
      nanscope::read_dump((dir / "dumps" / "fold000_step00000001_bf16.h5").string());
  ASSERT_FALSE(dump.slots.empty());
  const auto& fp = dump.slots[0];
  EXPECT_EQ(fp.scan.first_bad_index, 6);
  ASSERT_EQ(fp.values.size(), 8u);
  for (std::size_t i = 0; i < 6; ++i) EXPECT_EQ(fp.values[i], bf_wide[i]) << i;
  EXPECT_TRUE(std::isnan(fp.values[6]));
  EXPECT_EQ(fp.values[7], -std::numeric_limits<float>::infinity());
  fs::remove_all(dir);
}

// The reduced types' watches and the loss scale (docs/sdk.md, "Watches" and "Loss scaling"): a
// float16 activation growing toward 65504 trips the overflow margin at the step it comes within
// the factor, before it overflows and fires; a buffer of subnormals trips the underflow share; the
// scaler's skipped step is an event naming the first slot that overflowed; the scale is a series
// of the run file, and its collapse trips the floor.
TEST(SdkApiHalf, TheMarginWatchTripsBeforeTheFireAndASkippedStepNamesTheOverflow) {
  const fs::path dir = fresh_dir("margin");
  ns_session_options o = options(dir.string());
  o.guard = 0;
  o.watch_overflow_margin = 16;  // within a factor of 16 of 65504: above 4094
  o.watch_underflow_share = 0.5;
  o.watch_loss_scale_floor = 1;
  ns_session s{};
  ASSERT_EQ(ns_session_open(&o, &s), NS_OK) << ns_last_error();
  std::vector<std::uint16_t> act(8, 0x3c00);   // float16 1.0
  std::vector<std::uint16_t> tiny(8, 0x0001);  // float16's smallest subnormal
  std::vector<std::uint16_t> grad(8, 0x3c00);
  std::int32_t ids[3];
  const char* names[] = {"blocks.0.attn.scores", "blocks.0.tiny", "blocks.0.attn.grad"};
  std::vector<std::uint16_t>* buffers[] = {&act, &tiny, &grad};
  for (int k = 0; k < 3; ++k) {
    ns_slot_desc d = desc(names[k], k, nullptr, 8);
    d.address = reinterpret_cast<std::uint64_t>(buffers[k]->data());
    d.state = NS_SLOT_CHECKED;
    d.dtype = NS_F16;
    NS_OK_(ns_slot_register(s, &d, &ids[k]));
  }
  NS_OK_(ns_fold_begin(s, 0));
  // The scores double each step from 1024 (2^10): 2048, 4096 (within 16 of 65504 from here),
  // ..., 32768, then 65536 overflows to +Inf at step 6. The scaler halves its scale at the
  // overflow and skips the update; the scale falls below the floor at step 7.
  double scale = 4;
  for (int step = 0; step < 8; ++step) {
    const int e = 10 + step;  // 2^e
    act[3] = e < 16 ? static_cast<std::uint16_t>((e + 15) << 10) : 0x7c00;
    grad[5] = e < 16 ? 0x3c00 : 0xfc00;  // its gradient overflows with it
    NS_OK_(ns_step_begin(s, step, nullptr));
    NS_OK_(ns_check(s, ids, 3, nullptr));
    const bool overflow = e >= 16;
    if (overflow) scale /= 4;
    NS_OK_(ns_loss_scale(s, scale, overflow ? 1 : 0));
    ns_step_result r = blank_result();
    NS_OK_(ns_step_end(s, &r));
    EXPECT_EQ(r.fired, overflow ? 1 : 0) << step;
  }
  // Refused: a scale that is no scale, and a report outside a step.
  NS_OK_(ns_step_begin(s, 8, nullptr));
  EXPECT_REFUSED(ns_loss_scale(s, 0.0, 0), NS_ERR_ARGUMENT, "ns_loss_scale: scale 0");
  EXPECT_REFUSED(ns_loss_scale(s, std::nan(""), 0), NS_ERR_ARGUMENT, "not a finite positive");
  NS_OK_(ns_step_end(s, nullptr));
  EXPECT_REFUSED(ns_loss_scale(s, 2.0, 0), NS_ERR_STATE, "outside a step");
  NS_OK_(ns_fold_end(s, 0));
  NS_OK_(ns_session_close(s));

  const nanscope::RunFileData run = nanscope::read_run_file((dir / "run.h5").string());
  ASSERT_EQ(run.steps.size(), 9u);
  // The margin in bits at each step: log2(65504) - e, the float64 reference.
  for (int step = 0; step < 6; ++step)
    EXPECT_EQ(run.steps[static_cast<std::size_t>(step)].health[0][nanscope::kHealthOverflowMargin],
              static_cast<float>(std::log2(65504.0) - (10 + step)))
        << step;
  EXPECT_EQ(run.steps[0].health[1][nanscope::kHealthUnderflowShare], 1.f);
  EXPECT_EQ(run.steps[3].losses.loss_scale, 4.0);
  EXPECT_EQ(run.steps[7].losses.loss_scale, 0.25);
  EXPECT_TRUE(std::isnan(run.steps[8].losses.loss_scale)) << "not reported at step 8";
  // The events in order: the underflow share at step 0, the margin at step 2 (2^12 = 4096 is
  // within 16 of 65504), the first fire at step 6 with the skipped step naming the scores (order
  // 0, before their gradient), then at step 7 the floor and the second skip.
  std::vector<std::string> seen;
  for (const nanscope::RunEventRow& e : run.events)
    seen.push_back(fmt::format("{}@{}:{}", nanscope::name_of(e.kind), e.step, e.entry_slot));
  EXPECT_EQ(seen,
            (std::vector<std::string>{"watch@0:1", "watch@2:0", "first_fire@6:0",
                                      "loss_scale_skip@6:0", "watch@7:-1", "loss_scale_skip@7:0"}))
      << fmt::format("{}", fmt::join(seen, " "));
  ASSERT_EQ(run.watches.size(), 3u);
  EXPECT_EQ(run.watches[0].condition, nanscope::WatchCondition::UnderflowShare);
  EXPECT_EQ(run.watches[1].condition, nanscope::WatchCondition::OverflowMargin);
  EXPECT_NEAR(run.watches[1].value, 65504.0 / 4096.0, 1e-4);
  EXPECT_EQ(run.watches[1].threshold, 16.0);
  EXPECT_EQ(run.watches[2].condition, nanscope::WatchCondition::LossScaleFloor);
  EXPECT_EQ(run.watches[2].value, 0.25);
  fs::remove_all(dir);
}

TEST(SdkApiHalf, TheWatchOptionsAreChecked) {
  const fs::path dir = fresh_dir("watch_options");
  ns_session_options o = options(dir.string());
  ns_session s{};
  o.watch_overflow_margin = 0.5;
  EXPECT_REFUSED(ns_session_open(&o, &s), NS_ERR_ARGUMENT, "watch_overflow_margin");
  o.watch_overflow_margin = 0;
  o.watch_underflow_share = 1.5;
  EXPECT_REFUSED(ns_session_open(&o, &s), NS_ERR_ARGUMENT, "watch_underflow_share");
  o.watch_underflow_share = 0.1;
  o.health = 0;
  EXPECT_REFUSED(ns_session_open(&o, &s), NS_ERR_ARGUMENT, "set options.health too");
  o.health = 1;
  o.watch_loss_scale_floor = -1;
  EXPECT_REFUSED(ns_session_open(&o, &s), NS_ERR_ARGUMENT, "watch_loss_scale_floor");
  // A caller built against ABI 1's first header (no watch fields) is still served.
  o.watch_loss_scale_floor = 0;
  o.watch_underflow_share = 0;
  o.struct_size = offsetof(ns_session_options, watch_overflow_margin);
  ASSERT_EQ(ns_session_open(&o, &s), NS_OK) << ns_last_error();
  NS_OK_(ns_session_close(s));
  fs::remove_all(dir);
}

}  // namespace
