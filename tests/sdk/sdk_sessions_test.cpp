// Sessions are independent: two trainers in one process, each on its own thread, write the run
// files and dumps each writes alone. Linked to libnanscope through its header only; the files are
// read back with nanscope's own readers and compared field by field (the creation time aside).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "io/dump_file.h"
#include "io/run_file.h"
#include "nanscope/nanscope.h"
#include "sdk_test_util.h"

namespace {

namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() /
                     ("nanscope_sdk_sessions_" + name + "_" + std::to_string(getpid()));
  fs::remove_all(d);
  return d;
}

// A trainer of `slots` host buffers that goes wrong at its own moment: a NaN enters slot
// `entry` at (fold 1, step `fire_step`) and travels to the slots after it. Returns "" or what
// failed (called from several threads, so no gtest assertion inside).
struct Trainer {
  std::string name;
  int slots = 0, entry = 0, fire_step = 0;
};

std::string train(const Trainer& t, const fs::path& dir) {
  const std::string run_dir = dir.string();
  ns_session_options o{};
  o.struct_size = sizeof o;
  o.run_dir = run_dir.c_str();
  o.trainer = t.name.c_str();
  o.folds = 2;
  o.guard = 1;
  o.health = 1;
  o.capture = 1;
  o.overwrite = 1;
  ns_session s{};
  const auto fail = [&](const char* call) {
    std::string why = std::string(call) + ": " + ns_last_error();
    if (s.id) ns_session_close(s);
    return why;
  };
  if (ns_session_open(&o, &s) != NS_OK) return fail("ns_session_open");
  std::vector<std::vector<float>> buffers(static_cast<std::size_t>(t.slots));
  std::vector<std::string> names(static_cast<std::size_t>(t.slots));
  std::vector<std::int32_t> ids(static_cast<std::size_t>(t.slots), -1);
  for (int i = 0; i < t.slots; ++i) {
    const auto k = static_cast<std::size_t>(i);
    buffers[k].assign(32, 0.25f * static_cast<float>(i % 7));
    names[k] = t.name + "." + std::to_string(i);
    ns_slot_desc d{};
    d.struct_size = sizeof d;
    d.name = names[k].c_str();
    d.phase = "forward";
    d.order = i;
    d.count = 32;
    d.dtype = NS_F32;
    d.memory = NS_HOST;
    d.address = reinterpret_cast<std::uint64_t>(buffers[k].data());
    d.state = NS_SLOT_CHECKED;
    if (ns_slot_register(s, &d, &ids[k]) != NS_OK) return fail("ns_slot_register");
  }
  for (int fold = 0; fold < 2; ++fold) {
    if (ns_fold_begin(s, fold) != NS_OK) return fail("ns_fold_begin");
    for (int step = 0; step < 12; ++step) {
      for (int i = 0; i < t.slots; ++i) {
        const bool bad = fold == 1 && step >= t.fire_step && i >= t.entry;
        buffers[static_cast<std::size_t>(i)][3] =
            bad ? std::numeric_limits<float>::quiet_NaN() : 0.5f * static_cast<float>(step);
      }
      if (ns_step_begin(s, step, nullptr) != NS_OK) return fail("ns_step_begin");
      if (ns_check(s, ids.data(), t.slots, nullptr) != NS_OK) return fail("ns_check");
      ns_step_result r = blank_result();
      if (ns_step_end(s, &r) != NS_OK) return fail("ns_step_end");
    }
    if (ns_fold_end(s, fold) != NS_OK) return fail("ns_fold_end");
  }
  const ns_status closed = ns_session_close(s);
  s = ns_session{};
  return closed == NS_OK ? "" : fail("ns_session_close");
}

// Everything a run file holds but the moment it was made.
void expect_same_run(const fs::path& a, const fs::path& b) {
  SCOPED_TRACE(a.string() + " against " + b.string());
  const nanscope::RunFileData x = nanscope::read_run_file((a / "run.h5").string());
  const nanscope::RunFileData y = nanscope::read_run_file((b / "run.h5").string());
  EXPECT_EQ(x.table->fingerprint(), y.table->fingerprint());
  EXPECT_EQ(x.table->trainer(), y.table->trainer());
  ASSERT_EQ(x.folds.size(), y.folds.size());
  for (std::size_t f = 0; f < x.folds.size(); ++f) {
    EXPECT_EQ(x.folds[f].entry_slot, y.folds[f].entry_slot) << "fold " << f;
    EXPECT_EQ(x.folds[f].entry_step, y.folds[f].entry_step) << "fold " << f;
    ASSERT_EQ(x.folds[f].slots.size(), y.folds[f].slots.size());
    for (std::size_t i = 0; i < x.folds[f].slots.size(); ++i) {
      const auto &p = x.folds[f].slots[i], &q = y.folds[f].slots[i];
      EXPECT_TRUE(p.state == q.state && p.kinds == q.kinds && p.first_step == q.first_step &&
                  p.count == q.count)
          << "fold " << f << " slot " << i;
    }
  }
  ASSERT_EQ(x.steps.size(), y.steps.size());
  for (std::size_t i = 0; i < x.steps.size(); ++i) {
    EXPECT_EQ(x.steps[i].flags, y.steps[i].flags) << "step row " << i;
    EXPECT_EQ(x.steps[i].checked, y.steps[i].checked) << "step row " << i;
    ASSERT_EQ(x.steps[i].health.size(), y.steps[i].health.size());
    for (std::size_t k = 0; k < x.steps[i].health.size(); ++k)
      for (int h = 0; h < nanscope::kHealthFieldCount; ++h) {
        const float u = x.steps[i].health[k][static_cast<std::size_t>(h)];
        const float v = y.steps[i].health[k][static_cast<std::size_t>(h)];
        EXPECT_TRUE(u == v || (std::isnan(u) && std::isnan(v))) << "row " << i << " slot " << k;
      }
  }
  ASSERT_EQ(x.events.size(), y.events.size());
  for (std::size_t i = 0; i < x.events.size(); ++i) {
    EXPECT_EQ(x.events[i].kind, y.events[i].kind);
    EXPECT_EQ(x.events[i].entry_slot, y.events[i].entry_slot);
    EXPECT_EQ(x.events[i].dump, y.events[i].dump);
    if (x.events[i].dump.empty()) continue;
    const nanscope::DumpData d = nanscope::read_dump((a / x.events[i].dump).string());
    const nanscope::DumpData e = nanscope::read_dump((b / y.events[i].dump).string());
    EXPECT_EQ(d.flags, e.flags);
    ASSERT_EQ(d.slots.size(), e.slots.size());
    for (std::size_t k = 0; k < d.slots.size(); ++k) {
      EXPECT_EQ(d.slots[k].index, e.slots[k].index);
      EXPECT_EQ(0, std::memcmp(d.slots[k].values.data(), e.slots[k].values.data(),
                               d.slots[k].values.size() * sizeof(float)));
    }
  }
}

TEST(SdkSessions, TwoSessionsOnTwoThreadsWriteWhatEachWritesAlone) {
  const fs::path base = fresh_dir("two");
  // Two trainers unlike each other: widths on either side of a 64-slot word, different entries.
  const Trainer a{"left", 40, 17, 5}, b{"right", 300, 250, 2};
  ASSERT_EQ(train(a, base / "a_alone"), "");
  ASSERT_EQ(train(b, base / "b_alone"), "");
  std::string ra, rb;
  std::thread ta([&] { ra = train(a, base / "a_beside"); });
  std::thread tb([&] { rb = train(b, base / "b_beside"); });
  ta.join();
  tb.join();
  ASSERT_EQ(ra, "");
  ASSERT_EQ(rb, "");
  expect_same_run(base / "a_alone", base / "a_beside");
  expect_same_run(base / "b_alone", base / "b_beside");
  // And what each wrote is its own: its table, its entry.
  const nanscope::RunFileData left =
      nanscope::read_run_file((base / "a_beside" / "run.h5").string());
  const nanscope::RunFileData right =
      nanscope::read_run_file((base / "b_beside" / "run.h5").string());
  EXPECT_EQ(left.table->size(), 40);
  EXPECT_EQ(right.table->size(), 300);
  EXPECT_EQ(left.folds[1].entry_slot.value_or(-1), 17);
  EXPECT_EQ(left.folds[1].entry_step.value_or(-1), 5);
  EXPECT_EQ(right.folds[1].entry_slot.value_or(-1), 250);
  EXPECT_EQ(right.folds[1].entry_step.value_or(-1), 2);
  EXPECT_EQ(right.folds[1].slots[299].first_step, 2) << "the NaN reaches the last slot too";
  fs::remove_all(base);
}

}  // namespace
