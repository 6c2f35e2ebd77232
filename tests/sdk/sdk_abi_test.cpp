// The C ABI's promises and the defects a new user found (docs/sdk.md, "ABI policy" and "The
// rules"), through the header only: the struct-size rule both ways, reserved fields, statuses and
// their strings, the versioned table; registration that proves a range before it allocates; the
// writer asked, never blamed on another call; halts latched per fold; the halt's event naming its
// dump; overwrite removing the earlier run's dumps; the dump's layout.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include <hdf5.h>

#include "core/slot_health.h"
#include "io/dump_file.h"
#include "io/run_file.h"
#include "nanscope/nanscope.h"
#include "sdk_test_util.h"

namespace {

namespace fs = std::filesystem;

constexpr std::uint32_t kAbi1StepResult = offsetof(ns_step_result, halt_step);

class SdkAbi : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("nanscope_sdk_abi_" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "_" +
            std::to_string(getpid()));
    fs::remove_all(dir_);
    keep_ = dir_.string();
  }
  void TearDown() override {
    if (s_.id) ns_session_close(s_);
    fs::remove_all(dir_);
  }
  ns_session_options options() const {
    ns_session_options o = NS_SESSION_OPTIONS_INIT;
    o.run_dir = keep_.c_str();
    o.trainer = "abi_test";
    o.guard = 1;
    o.capture = 1;
    o.overwrite = 1;
    return o;
  }
  static ns_slot_desc desc(const char* name, int order, const float* p, std::int64_t count) {
    ns_slot_desc d = NS_SLOT_DESC_INIT;
    d.name = name;
    d.phase = "forward";
    d.order = order;
    d.count = count;
    d.address = reinterpret_cast<std::uint64_t>(p);
    return d;
  }
  // Opens with `o` and registers a (consumed by b) and b, 16 floats each.
  void open(const ns_session_options& o) {
    NS_OK_(ns_session_open(&o, &s_));
    ns_slot_desc da = desc("a", 0, a_.data(), 16);
    da.consumers = "b";
    NS_OK_(ns_slot_register(s_, &da, &ia_));
    ns_slot_desc db = desc("b", 1, b_.data(), 16);
    db.ndim = 2;
    db.shape[0] = 4;
    db.shape[1] = 4;
    NS_OK_(ns_slot_register(s_, &db, &ib_));
  }
  ns_step_result step(int n) {
    ns_step_result r = NS_STEP_RESULT_INIT;
    EXPECT_EQ(ns_step_begin(s_, n, nullptr), NS_OK) << ns_last_error();
    const std::int32_t both[] = {ia_, ib_};
    EXPECT_EQ(ns_check(s_, both, 2, nullptr), NS_OK) << ns_last_error();
    EXPECT_EQ(ns_step_end(s_, &r), NS_OK) << ns_last_error();
    return r;
  }
  void close() {
    NS_OK_(ns_session_close(s_));
    s_ = ns_session{};
  }

  fs::path dir_;
  std::string keep_;
  ns_session s_{};
  std::vector<float> a_ = std::vector<float>(16, 1.0f), b_ = std::vector<float>(16, 2.0f);
  std::int32_t ia_ = -1, ib_ = -1;
};

TEST_F(SdkAbi, AStructAtLeastAbi1sIsReadWithWhatItLacksAsZero) {
  // ABI 1's first ns_session_options (up to the watches) and ns_slot_desc (this header's): one
  // byte less is refused.
  ns_session_options o = options();
  o.struct_size = offsetof(ns_session_options, watch_overflow_margin) - 1;
  EXPECT_REFUSED(ns_session_open(&o, &s_), NS_ERR_VERSION, "less than the 80 bytes of ABI 1");
  EXPECT_EQ(s_.id, 0u);
  o.struct_size = 0;
  EXPECT_REFUSED(ns_session_open(&o, &s_), NS_ERR_VERSION, "struct_size is 0");
  // A newer caller's larger struct: accepted while the part this library does not know is zero.
  struct Larger {
    ns_session_options o;
    std::uint64_t future;
  } larger{options(), 0};
  larger.o.struct_size = sizeof larger;
  NS_OK_(ns_session_open(&larger.o, &s_));
  close();
  larger.future = 1;
  EXPECT_REFUSED(ns_session_open(&larger.o, &s_), NS_ERR_VERSION, "does not know");
  // Reserved fields are refused unless zero, so that a later version may give them a meaning.
  o = options();
  o.reserved1 = 5;
  EXPECT_REFUSED(ns_session_open(&o, &s_), NS_ERR_VERSION, "options.reserved1 is 5");
  open(options());
  ns_slot_desc d = desc("c", 2, a_.data(), 16);
  d.reserved2 = 1;
  std::int32_t id = -1;
  EXPECT_REFUSED(ns_slot_register(s_, &d, &id), NS_ERR_VERSION, "desc.reserved2 is 1");
  d.reserved2 = 0;
  d.struct_size = 100;
  EXPECT_REFUSED(ns_slot_register(s_, &d, &id), NS_ERR_VERSION, "less than the 144 bytes");
  d.struct_size = sizeof d + 4;  // not a whole number of the struct's 8-byte alignment
  EXPECT_REFUSED(ns_slot_register(s_, &d, &id), NS_ERR_VERSION, "whole number of 8-byte units");
  EXPECT_EQ(id, -1);
}

TEST_F(SdkAbi, AResultIsWrittenUpToTheSmallerSizeAndNeverPast) {
  open(options());
  NS_OK_(ns_fold_begin(s_, 0));
  a_[2] = std::numeric_limits<float>::quiet_NaN();
  // ABI 1's first result (up to `updated`), with the caller's next bytes after it.
  struct Guarded {
    ns_step_result r;
    unsigned char after[16];
  } g;
  std::memset(&g, 0xab, sizeof g);
  g.r.struct_size = kAbi1StepResult;
  NS_OK_(ns_step_begin(s_, 0, nullptr));
  NS_OK_(ns_check(s_, &ia_, 1, nullptr));
  NS_OK_(ns_step_end(s_, &g.r));
  EXPECT_EQ(g.r.struct_size, kAbi1StepResult);
  EXPECT_EQ(g.r.fired, 1);
  EXPECT_EQ(g.r.entry_slot, ia_);
  EXPECT_EQ(g.r.updated, 0);
  const auto* bytes = reinterpret_cast<const unsigned char*>(&g);
  for (std::size_t i = kAbi1StepResult; i < sizeof g; ++i)
    EXPECT_EQ(bytes[i], 0xab) << "byte " << i << " past the caller's 28";
  // A newer caller's larger result: this library's fields written, the caller's tail left alone.
  std::memset(&g, 0xab, sizeof g);
  g.r.struct_size = sizeof g;
  NS_OK_(ns_step_begin(s_, 1, nullptr));
  NS_OK_(ns_step_end(s_, &g.r));
  EXPECT_EQ(g.r.struct_size, sizeof g);
  EXPECT_EQ(g.r.replays, 1);
  EXPECT_EQ(g.r.halt_step, -1);
  for (unsigned char c : g.after) EXPECT_EQ(c, 0xab);
  // Smaller than ABI 1's: refused before the step ends, which a correct call then ends.
  ns_step_result r = NS_STEP_RESULT_INIT;
  r.struct_size = kAbi1StepResult - 4;
  NS_OK_(ns_step_begin(s_, 2, nullptr));
  EXPECT_REFUSED(ns_step_end(s_, &r), NS_ERR_VERSION, "less than the 28 bytes");
  NS_OK_(ns_step_end(s_, nullptr));  // a NULL result: the step ends, nothing is written
  EXPECT_REFUSED(ns_step_begin(s_, 2, nullptr), NS_ERR_ARGUMENT, "the next step of fold 0 is 3");
}

TEST(SdkAbiStatus, EveryStatusHasItsOwnStringAndTheEnumIs32Bits) {
  static_assert(sizeof(ns_status) == 4);
  const ns_status all[] = {NS_OK,         NS_ERR_ARGUMENT,      NS_ERR_HANDLE,
                           NS_ERR_STATE,  NS_ERR_SLOT,          NS_ERR_MEMORY,
                           NS_ERR_IO,     NS_ERR_UNSUPPORTED,   NS_ERR_VERSION,
                           NS_ERR_DEVICE, NS_ERR_OUT_OF_MEMORY, NS_ERR_INTERNAL};
  const char* names[] = {"NS_OK:",         "NS_ERR_ARGUMENT:",      "NS_ERR_HANDLE:",
                         "NS_ERR_STATE:",  "NS_ERR_SLOT:",          "NS_ERR_MEMORY:",
                         "NS_ERR_IO:",     "NS_ERR_UNSUPPORTED:",   "NS_ERR_VERSION:",
                         "NS_ERR_DEVICE:", "NS_ERR_OUT_OF_MEMORY:", "NS_ERR_INTERNAL:"};
  for (int i = 0; i < 12; ++i) {
    EXPECT_EQ(static_cast<int>(all[i]), i) << "statuses keep their values";
    EXPECT_EQ(std::string(ns_status_string(all[i])).rfind(names[i], 0), 0u)
        << ns_status_string(all[i]);
  }
  EXPECT_STREQ(ns_status_string(12), "not an ns_status");
  EXPECT_STREQ(ns_status_string(-1), "not an ns_status");
}

TEST(SdkAbiStatus, EveryEnumKeepsItsValues) {
  // The values programs were built with: a later version only adds (docs/sdk.md, "ABI policy").
  EXPECT_EQ(NS_F32, 0);
  EXPECT_EQ(NS_F64, 1);
  EXPECT_EQ(NS_BF16, 2);
  EXPECT_EQ(NS_F16, 3);
  EXPECT_EQ(NS_HOST, 0);
  EXPECT_EQ(NS_DEVICE, 1);
  EXPECT_EQ(NS_SLOT_CHECKED, 0);
  EXPECT_EQ(NS_SLOT_ABSENT, 1);
  EXPECT_EQ(NS_SLOT_DEFERRED, 2);
  EXPECT_EQ(NS_ROLE_NONE, 0);
  EXPECT_EQ(NS_ROLE_LOSS, 1);
  EXPECT_EQ(NS_ROLE_GRAD_NORM, 2);
  EXPECT_EQ(NS_HALT_NONE, 0);
  EXPECT_EQ(NS_HALT_NAN, 1);
  EXPECT_EQ(NS_HALT_GRAD_COLLAPSE, 2);
  // The structs' layouts: every field where ABI 1's first header put it.
  EXPECT_EQ(offsetof(ns_session_options, run_dir), 8u);
  EXPECT_EQ(offsetof(ns_session_options, folds), 32u);
  EXPECT_EQ(offsetof(ns_session_options, seed), 40u);
  EXPECT_EQ(offsetof(ns_session_options, grad_collapse_below), 64u);
  EXPECT_EQ(offsetof(ns_slot_desc, count), 40u);
  EXPECT_EQ(offsetof(ns_slot_desc, address), 56u);
  EXPECT_EQ(offsetof(ns_slot_desc, shape), 80u);
  EXPECT_EQ(offsetof(ns_step_result, updated), 24u);
  EXPECT_EQ(offsetof(ns_step_result, halt_step), 28u);
  EXPECT_EQ(sizeof(ns_session), 8u);
}

TEST(SdkAbiTable, TheVersionedTableHoldsEveryCallAndOtherVersionsAreRefused) {
  const ns_api_1* api = nullptr;
  ASSERT_EQ(ns_get_api(1, &api), NS_OK) << ns_last_error();
  ASSERT_NE(api, nullptr);
  EXPECT_EQ(api->abi_version, 1);
  EXPECT_EQ(api->struct_size, sizeof(ns_api_1));
  EXPECT_EQ(api->session_open, &ns_session_open);
  EXPECT_EQ(api->check, &ns_check);
  EXPECT_EQ(api->writer_status, &ns_writer_status);
  // Every entry filled (the table is pointers after its two 32-bit fields).
  const auto* entries = reinterpret_cast<void* const*>(reinterpret_cast<const char*>(api) + 8);
  for (std::size_t i = 0; i < (sizeof(ns_api_1) - 8) / sizeof(void*); ++i)
    EXPECT_NE(entries[i], nullptr) << "entry " << i;
  for (int v : {0, 2, -1}) {
    EXPECT_REFUSED(ns_get_api(v, &api), NS_ERR_VERSION, "has ABI 1 only");
    EXPECT_EQ(api, nullptr);
  }
  EXPECT_REFUSED(ns_get_api(1, nullptr), NS_ERR_ARGUMENT, "table is NULL");
}

// Resident memory of the process, in bytes.
std::size_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::size_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
}

TEST_F(SdkAbi, RegistrationProvesTheRangeBeforeItAllocatesAndCostsNoPassOverTheBuffer) {
  open(options());
  std::int32_t id = -1;
  // A bytes-for-elements slip: refused at once, naming the slot, before anything is allocated.
  for (std::int64_t count : {std::int64_t{1} << 31, std::int64_t{1} << 40}) {
    const auto began = std::chrono::steady_clock::now();
    const std::size_t before = resident_bytes();
    const ns_slot_desc d = desc("slip", 2, a_.data(), count);
    EXPECT_REFUSED(ns_slot_register(s_, &d, &id), NS_ERR_MEMORY, "slot 'slip'");
    EXPECT_LT(std::chrono::steady_clock::now() - began, std::chrono::seconds(1)) << count;
    EXPECT_LT(resident_bytes(), before + (std::size_t{64} << 20)) << count;
  }
  // A 1 GiB buffer, mapped and never touched: registered without touching it or its copy.
  const std::size_t gib = std::size_t{1} << 30;
  void* big = mmap(nullptr, gib, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  ASSERT_NE(big, MAP_FAILED);
  const auto began = std::chrono::steady_clock::now();
  const std::size_t before = resident_bytes();
  const ns_slot_desc d = desc("big", 2, static_cast<const float*>(big), gib / sizeof(float));
  NS_OK_(ns_slot_register(s_, &d, &id));
  EXPECT_LT(std::chrono::steady_clock::now() - began, std::chrono::seconds(1));
  EXPECT_LT(resident_bytes(), before + (std::size_t{64} << 20)) << "the copy was filled";
  close();
  munmap(big, gib);
}

TEST_F(SdkAbi, AFailedWriteIsReportedWhenAskedNeverByAnUnrelatedCall) {
  open(options());
  NS_OK_(ns_fold_begin(s_, 0));
  step(0);
  fs::remove_all(dir_);  // the run directory disappears under the open session
  NS_OK_(ns_fold_end(s_, 0));
  // The write (a few kilobytes) has long failed; nothing has asked the writer yet.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  // The writer's failure does not refuse the next, unrelated calls: the fold begins, steps run.
  EXPECT_EQ(ns_fold_begin(s_, 1), NS_OK) << ns_last_error();
  step(0);
  // Asked: the failure, naming the file, with nothing left pending; then it has been reported.
  std::int32_t pending = -1;
  EXPECT_REFUSED(ns_writer_status(s_, &pending), NS_ERR_IO, "run.h5");
  EXPECT_EQ(pending, 0);
  NS_OK_(ns_writer_status(s_, &pending));
  step(1);
  NS_OK_(ns_fold_end(s_, 1));
  EXPECT_EQ(ns_session_close(s_), NS_ERR_IO) << "the last write fails too";
  EXPECT_NE(std::string(ns_last_error()).find("run.h5"), std::string::npos) << ns_last_error();
  s_ = ns_session{};
}

TEST_F(SdkAbi, EveryFailedWriteIsReportedOnce) {
  open(options());
  NS_OK_(ns_fold_begin(s_, 0));
  step(0);
  fs::remove_all(dir_);
  NS_OK_(ns_fold_end(s_, 0));
  ns_status status = NS_OK;
  std::int32_t pending = 1;
  for (int i = 0; i < 500 && status == NS_OK && pending != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    status = ns_writer_status(s_, &pending);
  }
  if (status == NS_OK) status = ns_writer_status(s_, &pending);
  EXPECT_EQ(status, NS_ERR_IO);
  EXPECT_NE(std::string(ns_last_error()).find("run.h5"), std::string::npos) << ns_last_error();
  // Two more folds' writes fail before the writer is asked: both in one report.
  for (int fold : {1, 2}) {
    NS_OK_(ns_fold_begin(s_, fold));
    step(0);
    NS_OK_(ns_fold_end(s_, fold));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_REFUSED(ns_writer_status(s_, &pending), NS_ERR_IO, "2 writes failed");
  NS_OK_(ns_writer_status(s_, &pending));
}

TEST_F(SdkAbi, AHaltIsLatchedForTheFoldAndItsEventNamesTheDump) {
  ns_session_options o = options();
  o.halt_on_nan = 1;
  open(o);
  NS_OK_(ns_fold_begin(s_, 0));
  a_[1] = std::numeric_limits<float>::quiet_NaN();  // fires at steps 0, 1 and 2
  for (int n = 0; n < 3; ++n) {
    const ns_step_result r = step(n);
    EXPECT_EQ(r.fired, 1) << "a step after the halt is checked as any other";
    EXPECT_EQ(r.halt, NS_HALT_NAN) << "step " << n << ": reported at every step after the halt";
    EXPECT_EQ(r.halt_step, 0);
  }
  a_[1] = 1.0f;
  EXPECT_EQ(step(3).halt, NS_HALT_NAN) << "latched for the rest of the fold";
  NS_OK_(ns_fold_end(s_, 0));
  NS_OK_(ns_fold_begin(s_, 1));
  const ns_step_result clean = step(0);
  EXPECT_EQ(clean.halt, NS_HALT_NONE) << "a new fold starts without a halt";
  EXPECT_EQ(clean.halt_step, -1);
  NS_OK_(ns_fold_end(s_, 1));
  close();
  const nanscope::RunFileData run = nanscope::read_run_file((dir_ / "run.h5").string());
  std::string first_fire_dump, halt_dump;
  int halts = 0;
  for (const nanscope::RunEventRow& e : run.events) {
    if (e.kind == nanscope::EventKind::FirstFire) first_fire_dump = e.dump;
    if (e.kind == nanscope::EventKind::HaltNan) halt_dump = e.dump, ++halts;
  }
  EXPECT_EQ(halts, 1) << "one halt event for the fold";
  EXPECT_EQ(first_fire_dump, "dumps/fold000_step00000000_a.h5");
  EXPECT_EQ(halt_dump, first_fire_dump) << "the halt's event names the fold's dump";
}

TEST_F(SdkAbi, OverwriteRemovesTheEarlierRunsDumpsAndKeepsOtherFiles) {
  open(options());
  NS_OK_(ns_fold_begin(s_, 0));
  b_[0] = std::numeric_limits<float>::infinity();
  step(0);
  NS_OK_(ns_fold_end(s_, 0));
  close();
  const fs::path old_dump = dir_ / "dumps" / "fold000_step00000000_b.h5";
  ASSERT_TRUE(fs::exists(old_dump));
  std::ofstream(dir_ / "dumps" / "notes.txt") << "the user's own\n";
  b_[0] = 2.0f;
  open(options());  // overwrite: the earlier run goes
  EXPECT_FALSE(fs::exists(old_dump)) << "stale evidence beside the new run";
  EXPECT_FALSE(fs::exists(dir_ / "run.h5"));
  EXPECT_TRUE(fs::exists(dir_ / "dumps" / "notes.txt"));
  NS_OK_(ns_fold_begin(s_, 0));
  step(0);
  NS_OK_(ns_fold_end(s_, 0));
  close();
  EXPECT_EQ(nanscope::read_run_file((dir_ / "run.h5").string()).events.size(), 0u);
}

TEST_F(SdkAbi, TheDumpIsLaidOutAsDocsFilesSays) {
  open(options());
  NS_OK_(ns_fold_begin(s_, 0));
  b_[5] = -std::numeric_limits<float>::infinity();
  step(0);
  NS_OK_(ns_fold_end(s_, 0));
  close();
  const nanscope::DumpData d =
      nanscope::read_dump((dir_ / "dumps" / "fold000_step00000000_b.h5").string());
  EXPECT_EQ(d.run_file, "../run.h5") << "the run file as the dump's folder sees it";
  EXPECT_EQ(d.flags.size(), 2u) << "one flag per slot of the trainer's table";
  ASSERT_EQ(d.slots.size(), 1u);
  EXPECT_EQ(d.slots[0].shape, (std::vector<std::uint64_t>{4, 4})) << "the shape registered";
  EXPECT_TRUE(fs::exists(dir_ / "dumps" / d.run_file));
  EXPECT_EQ((*d.table)[ib_].buffer, "[4, 4] float32") << "the table shows the shape given";
  const nanscope::RunFileData run = nanscope::read_run_file((dir_ / "run.h5").string());
  EXPECT_EQ((*run.table)[ib_].buffer, "[4, 4] float32");
  EXPECT_EQ((*run.table)[ia_].buffer, "[16] float32");
}

TEST_F(SdkAbi, FoldsPastThePlannedOnesAreRefused) {
  ns_session_options o = options();
  o.folds = 1;
  open(o);
  NS_OK_(ns_fold_begin(s_, 0));
  NS_OK_(ns_fold_end(s_, 0));
  EXPECT_REFUSED(ns_fold_begin(s_, 1), NS_ERR_ARGUMENT, "plans 1 folds");
}

}  // namespace

namespace {

// B: a float64 slot's health and dump in float64. A clean buffer holding values past float32's
// range counts no non-finite value, and a fired one's dump is a float64 dataset holding exactly
// what the buffer held, its counts those of float64 (no infinity it does not hold).
TEST_F(SdkAbi, Float64SlotsAreMeasuredAndDumpedInFloat64) {
  ns_session_options o = options();
  o.health = 1;
  NS_OK_(ns_session_open(&o, &s_));
  std::vector<double> wide = {1e300, 2.0, 1.0, -1e40}, fired = {1e300, 2.0, 1.0, -1e40};
  std::int32_t iw = -1, i_f = -1;
  ns_slot_desc d = desc("wide", 0, nullptr, 4);
  d.dtype = NS_F64;
  d.address = reinterpret_cast<std::uint64_t>(wide.data());
  NS_OK_(ns_slot_register(s_, &d, &iw));
  d.name = "fired";
  d.order = 1;
  d.address = reinterpret_cast<std::uint64_t>(fired.data());
  NS_OK_(ns_slot_register(s_, &d, &i_f));
  NS_OK_(ns_fold_begin(s_, 0));
  const std::int32_t both[] = {iw, i_f};
  for (int n = 0; n < 2; ++n) {
    if (n == 1) fired[1] = std::numeric_limits<double>::quiet_NaN();
    ns_step_result r = NS_STEP_RESULT_INIT;
    NS_OK_(ns_step_begin(s_, n, nullptr));
    NS_OK_(ns_check(s_, both, 2, nullptr));
    NS_OK_(ns_step_end(s_, &r));
    EXPECT_EQ(r.fired, n == 1) << "values past float32's range are finite float64";
  }
  NS_OK_(ns_fold_end(s_, 0));
  close();
  const nanscope::RunFileData run = nanscope::read_run_file((dir_ / "run.h5").string());
  ASSERT_EQ(run.steps.size(), 2u);
  for (const nanscope::RunStepRow& row : run.steps) {
    ASSERT_FALSE(row.health.empty()) << "step " << row.step;
    EXPECT_EQ(row.health[iw][nanscope::kHealthNonfinite], 0.0f) << "step " << row.step;
  }
  EXPECT_EQ(run.steps[1].health[i_f][nanscope::kHealthNonfinite], 1.0f);
  EXPECT_EQ(run.steps[0].health[iw][nanscope::kHealthMean],
            static_cast<float>((1e300 + 2.0 + 1.0 - 1e40) / 4));
  const std::string dump = (dir_ / "dumps" / "fold000_step00000001_fired.h5").string();
  const nanscope::DumpData dd = nanscope::read_dump(dump);
  ASSERT_EQ(dd.slots.size(), 1u);
  ASSERT_EQ(dd.slots[0].values64.size(), 4u) << "the dump keeps the slot's type";
  EXPECT_EQ(dd.slots[0].values64[0], 1e300);
  EXPECT_TRUE(std::isnan(dd.slots[0].values64[1]));
  EXPECT_EQ(dd.slots[0].values64[3], -1e40);
  EXPECT_EQ(dd.slots[0].scan.kinds, nanscope::kKindNaN);
  // The dataset's own attributes: the counts of float64, no infinity.
  const hid_t file = H5Fopen(dump.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  const hid_t ds = H5Dopen2(file, "/slots/fired", H5P_DEFAULT);
  const hid_t type = H5Dget_type(ds);
  EXPECT_EQ(H5Tget_size(type), 8u);
  for (const char* name : {"nan_count", "posinf_count", "neginf_count"}) {
    std::int64_t v = -1;
    const hid_t a = H5Aopen(ds, name, H5P_DEFAULT);
    H5Aread(a, H5T_NATIVE_INT64, &v);
    H5Aclose(a);
    EXPECT_EQ(v, std::string(name) == "nan_count" ? 1 : 0) << name;
  }
  H5Tclose(type);
  H5Dclose(ds);
  H5Fclose(file);
}

}  // namespace

namespace {

// ns_check_at: an eager framework's buffers, which move every step, checked where they are this
// step without moving the slot: the slot's registered buffer stays, a bad address checks nothing.
TEST_F(SdkAbi, CheckAtChecksThisStepsBufferAndLeavesTheSlotWhereItWas) {
  open(options());
  NS_OK_(ns_fold_begin(s_, 0));
  std::vector<float> moved(16, 3.0f), poisoned(16, 1.0f);
  poisoned[9] = std::numeric_limits<float>::quiet_NaN();
  const std::uint64_t clean_at[] = {reinterpret_cast<std::uint64_t>(moved.data())};
  ns_step_result r = NS_STEP_RESULT_INIT;
  NS_OK_(ns_step_begin(s_, 0, nullptr));
  NS_OK_(ns_check_at(s_, &ia_, clean_at, 1, nullptr));
  NS_OK_(ns_step_end(s_, &r));
  EXPECT_EQ(r.fired, 0);
  // Refusals check nothing: a misaligned buffer, an unreadable one in the list, a slot given two.
  NS_OK_(ns_step_begin(s_, 1, nullptr));
  const std::int32_t both[] = {ib_, ia_};
  const std::uint64_t misaligned[] = {reinterpret_cast<std::uint64_t>(poisoned.data()),
                                      reinterpret_cast<std::uint64_t>(moved.data()) + 2};
  EXPECT_REFUSED(ns_check_at(s_, both, misaligned, 2, nullptr), NS_ERR_MEMORY, "slot 'a': address");
  const long page = sysconf(_SC_PAGESIZE);
  void* hole =
      mmap(nullptr, static_cast<std::size_t>(page), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(hole, MAP_FAILED);
  const std::uint64_t unreadable[] = {reinterpret_cast<std::uint64_t>(poisoned.data()),
                                      reinterpret_cast<std::uint64_t>(hole)};
  EXPECT_REFUSED(ns_check_at(s_, both, unreadable, 2, nullptr), NS_ERR_MEMORY, "slot 'a'");
  const std::int32_t twice[] = {ia_, ia_};
  const std::uint64_t two[] = {reinterpret_cast<std::uint64_t>(moved.data()),
                               reinterpret_cast<std::uint64_t>(poisoned.data())};
  EXPECT_REFUSED(ns_check_at(s_, twice, two, 2, nullptr), NS_ERR_ARGUMENT, "listed twice");
  EXPECT_REFUSED(ns_check_at(s_, both, nullptr, 2, nullptr), NS_ERR_ARGUMENT, "addresses is NULL");
  NS_OK_(ns_step_end(s_, &r));
  EXPECT_EQ(r.fired, 0) << "the refused lists checked nothing (b's poisoned buffer among them)";
  munmap(hole, static_cast<std::size_t>(page));
  // This step's poisoned buffer fires, named as its slot; the slot's own buffer is untouched.
  NS_OK_(ns_step_begin(s_, 2, nullptr));
  const std::uint64_t poisoned_at[] = {reinterpret_cast<std::uint64_t>(poisoned.data())};
  NS_OK_(ns_check_at(s_, &ib_, poisoned_at, 1, nullptr));
  NS_OK_(ns_step_end(s_, &r));
  EXPECT_EQ(r.fired, 1);
  EXPECT_EQ(r.entry_slot, ib_);
  EXPECT_EQ(r.entry_step, 2);
  NS_OK_(ns_step_begin(s_, 3, nullptr));
  NS_OK_(ns_check(s_, &ib_, 1, nullptr));  // b's registered buffer, still clean
  NS_OK_(ns_step_end(s_, &r));
  EXPECT_EQ(r.fired, 0);
  NS_OK_(ns_fold_end(s_, 0));
  close();
  // The first-fire dump holds the buffer the check saw (this step's), in its registered shape.
  const nanscope::DumpData d =
      nanscope::read_dump((dir_ / "dumps" / "fold000_step00000002_b.h5").string());
  ASSERT_EQ(d.slots.size(), 1u);
  EXPECT_TRUE(std::isnan(d.slots[0].values[9]));
  EXPECT_EQ(d.slots[0].values[0], 1.0f);
  EXPECT_EQ(d.slots[0].shape, (std::vector<std::uint64_t>{4, 4}));
}

}  // namespace

namespace {

// A deferred slot undeferred before the first fold (the fuzzer's find: the call wrote into the
// fold's setup before it existed) is checked from the first step.
TEST_F(SdkAbi, ASlotUndeferredBeforeTheFirstFoldIsCheckedFromItsFirstStep) {
  open(options());
  std::vector<float> late(8, std::numeric_limits<float>::infinity());
  ns_slot_desc d = desc("late", 2, nullptr, 8);
  d.state = NS_SLOT_DEFERRED;
  std::int32_t il = -1;
  NS_OK_(ns_slot_register(s_, &d, &il));
  NS_OK_(ns_slot_set_address(s_, il, reinterpret_cast<std::uint64_t>(late.data())));
  NS_OK_(ns_slot_undefer(s_, il));
  NS_OK_(ns_fold_begin(s_, 0));
  ns_step_result r = NS_STEP_RESULT_INIT;
  NS_OK_(ns_step_begin(s_, 0, nullptr));
  NS_OK_(ns_check(s_, &il, 1, nullptr));
  NS_OK_(ns_step_end(s_, &r));
  EXPECT_EQ(r.fired, 1);
  EXPECT_EQ(r.entry_slot, il);
}

}  // namespace
