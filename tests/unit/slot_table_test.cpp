// Slot tables as values, and the files of nanscope 0.1.0 (tests/data/v0.1.0/) read at their own
// width: its 36-wide schema-1 and schema-2 run files, its dumps and its SDK trainer's files.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "core/sentinel.h"
#include "core/slot_table.h"
#include "io/dump_file.h"
#include "io/h5.h"
#include "io/run_file.h"

#include <optional>

namespace nanscope {
namespace {

std::string fixture(const std::string& name) {
  return std::string(NANSCOPE_SOURCE_DIR) + "/tests/data/v0.1.0/" + name;
}

std::vector<TrainerSlot> chain(int n) {
  std::vector<TrainerSlot> slots;
  for (int i = 0; i < n; ++i) {
    slots.push_back({fmt::format("s{}", i), "forward", "[4]", n - i,
                     i + 1 < n ? std::vector<int>{i + 1} : std::vector<int>{}});
  }
  return slots;
}

TEST(SlotTable, ATrainersTableIsCheckedAndHeldByItsOwners) {
  std::string why;
  const SlotTableRef wide = SlotTable::of_trainer("wide", chain(kMaxSlots), &why);
  ASSERT_TRUE(wide) << why;
  EXPECT_EQ(wide->size(), kMaxSlots);
  EXPECT_EQ(wide->find("s4095"), 4095);
  EXPECT_EQ(wide->find("4095"), 4095);
  EXPECT_EQ(wide->find("4096"), std::nullopt);
  // Past the limit, a consumer outside the table, a taken name: refused, naming the slot.
  EXPECT_FALSE(SlotTable::of_trainer("wide", chain(kMaxSlots + 1), &why));
  EXPECT_NE(why.find("1 to 4096 slots, not 4097"), std::string::npos) << why;
  auto bad = chain(3);
  bad[1].consumers = {3};
  EXPECT_FALSE(SlotTable::of_trainer("t", bad, &why));
  EXPECT_NE(why.find("slot 1 (s1): consumer 3 is outside the table"), std::string::npos) << why;
  bad = chain(3);
  bad[2].name = "s0";
  EXPECT_FALSE(SlotTable::of_trainer("t", bad, &why));
  EXPECT_NE(why.find("slot 2: the name 's0' is taken"), std::string::npos) << why;
  // Two tables at once: neither disturbs the other or nanscope's own.
  const SlotTableRef narrow = SlotTable::of_trainer("narrow", chain(3), &why);
  ASSERT_TRUE(narrow) << why;
  EXPECT_EQ(narrow->size(), 3);
  EXPECT_EQ(wide->size(), kMaxSlots);
  EXPECT_EQ(SlotTable::builtin()->size(), kBuiltinSlotCount);
  EXPECT_NE(narrow->fingerprint(), wide->fingerprint());
}

// The element type the Slots table and the inspector show: a trainer's slot's from its buffer
// text (an absent one's too), nanscope's own from the run's precision.
TEST(SlotTable, ASlotsTypeComesFromItsBufferTextOrTheRunsPrecision) {
  std::vector<TrainerSlot> slots = chain(4);
  slots[0].buffer = "[32, 16] bfloat16";
  slots[1].buffer = "[4] float16 (absent)";
  slots[2].buffer = "[8] float32";
  slots[3].buffer = "a buffer of a file before types";
  std::string why;
  const SlotTableRef t = SlotTable::of_trainer("typed", slots, &why);
  ASSERT_TRUE(t) << why;
  EXPECT_EQ(slot_type_name(*t, 0, "float32"), "bfloat16");
  EXPECT_EQ(slot_type_name(*t, 1, "float32"), "float16");
  EXPECT_EQ(slot_type_name(*t, 2, "float64"), "float32");
  EXPECT_EQ(slot_type_name(*t, 3, "float32"), "?");
  EXPECT_EQ(slot_type_name(*SlotTable::builtin(), kHS2, "float64"), "float64");
}

TEST(SlotTable, TheClosureCrossesWordsAndTheEntryIsTheLowestRank) {
  std::string why;
  const SlotTableRef t = SlotTable::of_trainer("wide", chain(200), &why);
  ASSERT_TRUE(t) << why;
  const SlotSet all = SlotSet::all(200);
  EXPECT_EQ(t->downstream_closure(190, all).members(),
            (std::vector<int>{190, 191, 192, 193, 194, 195, 196, 197, 198, 199}));
  SlotSet present = all;
  present.set(195, false);  // an absent slot passes its inputs on
  EXPECT_EQ(t->downstream_closure(194, present).members(),
            (std::vector<int>{194, 196, 197, 198, 199}));
  // Ranks run backwards in chain(): of two slots first firing together, the later index leads.
  SentinelBank bank(t, SlotSetup(200));
  bank.begin_step(0);
  EXPECT_TRUE(bank.record(70, ScanResult{kKindNaN, 1, 0}));
  EXPECT_TRUE(bank.record(130, ScanResult{kKindPosInf, 2, 0}));
  bank.end_step();
  const FoldFlags f = bank.readback();
  ASSERT_EQ(f.slots.size(), 200u);
  EXPECT_EQ(f.entry_slot, 130);
  EXPECT_EQ(bank.step_flags()[70], kKindNaN);
  // The next step's flags start clear.
  bank.begin_step(1);
  EXPECT_FALSE(any_fired(bank.step_flags()));
}

TEST(HealthKeeping, AWideTableKeepsAStrideAndTheWindowBeforeTheFirstFire) {
  std::string why;
  EXPECT_EQ(HealthKeeping::for_table(*SlotTable::builtin()).stride, 1);  // 1,152 bytes a step
  EXPECT_EQ(HealthKeeping::for_table(*SlotTable::of_trainer("t", chain(100), &why)).stride, 1);
  EXPECT_EQ(HealthKeeping::for_table(*SlotTable::of_trainer("t", chain(101), &why)).stride, 2);
  const HealthKeeping k = HealthKeeping::for_table(*SlotTable::of_trainer("t", chain(1000), &why));
  EXPECT_EQ(k.stride, 10);
  EXPECT_EQ(k.window, 100);
  EXPECT_TRUE(k.keeps(0, std::nullopt));
  EXPECT_FALSE(k.keeps(7, std::nullopt));
  EXPECT_TRUE(k.keeps(7, 106)) << "the 100 steps up to the first fire, 7 to 106";
  EXPECT_FALSE(k.keeps(6, 106));
  EXPECT_FALSE(k.keeps(107, 106)) << "after the first fire: the stride only";
  EXPECT_TRUE(k.keeps(110, 106));
}

// A run file that keeps some steps' health only (schema 3) is recomputed like any other: the steps
// without health are not compared (a crash once: materialize read the dropped rows).
TEST(HealthKeeping, ARunFileKeepingSomeHealthIsMaterialized) {
  // nanscope 0.1.0's run file with checkpoints, made to keep rows 0, 2 and 4's health only.
  const std::string dir = testing::TempDir() + "nanscope_some_health";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string file = dir + "/run.h5";
  std::filesystem::copy_file(fixture("run_schema2_checkpoints.h5"), file);
  {
    std::vector<std::uint64_t> dims;
    h5::Handle f(H5Fopen(file.c_str(), H5F_ACC_RDWR, H5P_DEFAULT), H5Fclose);
    const std::vector<float> all = h5::read_dataset<float>(f.id(), "steps/health", &dims, file);
    // Written before the reduced types' fields: eight a row.
    ASSERT_EQ(dims, (std::vector<std::uint64_t>{6, 36, kHealthFieldCountV3}));
    const std::size_t row = 36 * kHealthFieldCountV3;
    std::vector<float> kept;
    for (std::size_t r : {0, 2, 4})
      kept.insert(kept.end(), all.begin() + r * row, all.begin() + (r + 1) * row);
    const std::vector<std::int64_t> steps = {0, 2, 4};
    H5Ldelete(f.id(), "steps/health", H5P_DEFAULT);
    H5Adelete(f.id(), "schema_version");
    h5::write_attr(f.id(), "schema_version", std::int64_t{3}, file);
    h5::write_dataset(f.id(), "steps/health", kept.data(), {3, 36, kHealthFieldCountV3}, file);
    h5::write_dataset(f.id(), "steps/health_step", steps.data(), {3}, file);
  }
  const RunFileData back = read_run_file(file);
  ASSERT_EQ(back.steps.size(), 6u);
  for (std::size_t i = 0; i < back.steps.size(); ++i)
    EXPECT_EQ(back.steps[i].health.empty(), i % 2 == 1) << "row " << i;
  // Fold 1's step 1 (row 4, kept) and step 2 (row 5, not kept), recomputed from the checkpoint
  // at step 0 and 2: the first compares, the second has nothing to compare (a crash once).
  for (int step : {1, 2}) {
    const std::string cmd = std::string(NANSCOPE_RUN_BINARY) + " materialize " + file +
                            " --fold 1 --step " + std::to_string(step) + " --backend cpu --out " +
                            dir + "/step" + std::to_string(step) + ".h5 >/dev/null 2>&1";
    const int status = std::system(cmd.c_str());
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << cmd << ": status " << status;
  }
  std::filesystem::remove_all(dir);
}

TEST(Files0_1_0, EveryRunFileOpensAtItsWidth) {
  struct Case {
    const char* file;
    std::size_t folds, steps;
    int entry_fold, entry_slot;
  } cases[] = {
      {"run_schema1.h5", 2, 6, 0, kHS1},
      {"run_schema1_watches.h5", 2, 6, 1, kHS1},
      {"run_schema2_checkpoints.h5", 2, 6, 1, kHS2},
      {"run_schema2_cuda.h5", 2, 18, 1, kHS2},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.file);
    const RunFileData r = read_run_file(fixture(c.file));
    EXPECT_TRUE(r.table->is_builtin());
    EXPECT_EQ(r.nanscope_version, "0.1.0");
    EXPECT_EQ(r.stored_slots, 36);
    ASSERT_EQ(r.folds.size(), c.folds);
    ASSERT_EQ(r.steps.size(), c.steps);
    // 36 slots stored; nanscope's later slots (36 on) did not exist in that run.
    for (const FoldFlags& f : r.folds) {
      ASSERT_EQ(f.slots.size(), static_cast<std::size_t>(kBuiltinSlotCount));
      for (int s = 36; s < kBuiltinSlotCount; ++s)
        EXPECT_EQ(f.slots[static_cast<std::size_t>(s)].state, SlotState::Absent) << s;
    }
    for (const RunStepRow& s : r.steps) {
      ASSERT_EQ(s.flags.size(), static_cast<std::size_t>(kBuiltinSlotCount));
      for (int k = 36; k < kBuiltinSlotCount; ++k) {
        EXPECT_EQ(s.flags[static_cast<std::size_t>(k)], 0) << k;
        EXPECT_FALSE(s.checked.test(k)) << k;
        if (!s.health.empty()) {
          EXPECT_FALSE(measured(s.health[static_cast<std::size_t>(k)])) << k;
        }
      }
    }
    const auto entry =
        run_entry(r.folds.size(), [&](std::size_t k) -> const FoldFlags& { return r.folds[k]; });
    ASSERT_TRUE(entry);
    EXPECT_EQ(entry->fold, c.entry_fold);
    EXPECT_EQ(entry->slot, c.entry_slot) << builtin_slot(entry->slot).name;
  }
}

TEST(Files0_1_0, TheSdkTrainersFilesOpenAtTheirTablesWidth) {
  const RunFileData r = read_run_file(fixture("sdk_run.h5"));
  EXPECT_EQ(r.table->trainer(), "c_mlp");
  ASSERT_EQ(r.table->size(), 11);
  EXPECT_EQ(r.folds.at(1).slots.size(), 11u);
  EXPECT_EQ(r.steps.at(0).flags.size(), 11u);
  EXPECT_EQ(r.folds.at(1).entry_slot, r.table->find("x_norm"));
  // Its dump's /flags was written 36 wide for 11 slots: read at the table's width.
  const DumpData d = read_dump(fixture("sdk_dump.h5"));
  EXPECT_EQ(d.table->trainer(), "c_mlp");
  EXPECT_EQ(d.table->fingerprint(), r.table->fingerprint());
  ASSERT_EQ(d.flags.size(), 11u);
  EXPECT_EQ(d.entry_slot, r.table->find("x_norm"));
  EXPECT_NE(d.flags[static_cast<std::size_t>(d.entry_slot)], 0);
  EXPECT_EQ(d.slots.size(), 3u);
  const DumpData own = read_dump(fixture("dump.h5"));
  EXPECT_TRUE(own.table->is_builtin());
  ASSERT_EQ(own.flags.size(), static_cast<std::size_t>(kBuiltinSlotCount));  // 36 stored, then 0s
  for (int s = 36; s < kBuiltinSlotCount; ++s) EXPECT_EQ(own.flags[static_cast<std::size_t>(s)], 0);
  EXPECT_EQ(own.entry_slot, kAuxLoss);
}

}  // namespace
}  // namespace nanscope
