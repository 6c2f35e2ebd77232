// The SDK's C API used wrongly, as a stranger's trainer might: every misuse gets its status and a
// message that names what was wrong, the process lives, and the session goes on with nothing lost.
// Linked to libnanscope through its header only; the run files are read back with nanscope's own
// reader.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <bit>
#include <cmath>
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

namespace fs = std::filesystem;
using namespace sdk_api_test;

class SdkApi : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fresh_dir(::testing::UnitTest::GetInstance()->current_test_info()->name());
    const ns_session_options o = options(dir_.string());
    ASSERT_EQ(ns_session_open(&o, &s_), NS_OK) << ns_last_error();
    a_.assign(16, 1.0f);
    b_.assign(16, 2.0f);
    ns_slot_desc da = desc("a", 0, a_.data(), 16);
    da.consumers = "b";
    ASSERT_EQ(ns_slot_register(s_, &da, &ia_), NS_OK) << ns_last_error();
    const ns_slot_desc db = desc("b", 1, b_.data(), 16);
    ASSERT_EQ(ns_slot_register(s_, &db, &ib_), NS_OK) << ns_last_error();
  }
  void TearDown() override {
    if (s_.id) ns_session_close(s_);
    fs::remove_all(dir_);
  }
  // One step that checks both slots; its result.
  ns_step_result step(int n) {
    ns_step_result r{};
    r.struct_size = sizeof r;
    EXPECT_EQ(ns_step_begin(s_, n, nullptr), NS_OK) << ns_last_error();
    const std::int32_t both[] = {ia_, ib_};
    EXPECT_EQ(ns_check(s_, both, 2, nullptr), NS_OK) << ns_last_error();
    EXPECT_EQ(ns_step_end(s_, &r), NS_OK) << ns_last_error();
    return r;
  }
  fs::path dir_;
  ns_session s_{};
  std::vector<float> a_, b_;
  std::int32_t ia_ = -1, ib_ = -1;
};

TEST(SdkApiVersion, HeaderAndLibraryAgree) {
  int major = -1, minor = -1, patch = -1;
  ns_version(&major, &minor, &patch);
  EXPECT_EQ(major, NS_VERSION_MAJOR);
  EXPECT_EQ(minor, NS_VERSION_MINOR);
  EXPECT_EQ(patch, NS_VERSION_PATCH);
  EXPECT_EQ(ns_abi_version(), NS_ABI_VERSION);
  ns_version(nullptr, nullptr, nullptr);  // null outputs are allowed
}

TEST_F(SdkApi, NullMadeUpAndClosedHandlesAreRefused) {
  std::int32_t id = 0;
  const ns_slot_desc d = desc("c", 2, a_.data(), 16);
  for (ns_session bad : {ns_session{0}, ns_session{1}, ns_session{s_.id + 1}, ns_session{~0ull},
                         ns_session{reinterpret_cast<std::uintptr_t>(&d)}}) {
    EXPECT_REFUSED(ns_fold_begin(bad, 0), NS_ERR_HANDLE, "is not open");
    EXPECT_REFUSED(ns_slot_register(bad, &d, &id), NS_ERR_HANDLE, "is not open");
    EXPECT_REFUSED(ns_check(bad, &ia_, 1, nullptr), NS_ERR_HANDLE, "is not open");
    EXPECT_REFUSED(ns_session_close(bad), NS_ERR_HANDLE, "is not open");
  }
  ASSERT_EQ(ns_session_close(s_), NS_OK) << ns_last_error();
  const ns_session closed = s_;
  s_ = ns_session{};
  EXPECT_REFUSED(ns_fold_begin(closed, 0), NS_ERR_HANDLE, "is not open");
  EXPECT_REFUSED(ns_step_begin(closed, 0, nullptr), NS_ERR_HANDLE, "is not open");
  EXPECT_REFUSED(ns_session_close(closed), NS_ERR_HANDLE, "is not open");
  std::uint64_t word = 0;
  EXPECT_REFUSED(ns_guard_word(closed, &word), NS_ERR_HANDLE, "is not open");
}

TEST_F(SdkApi, ASecondSessionOnTheSameRunDirIsRefusedAndTheFirstGoesOn) {
  // The same directory, spelt other ways: refused, naming the open session's directory.
  ns_session second{77};
  for (const std::string& same : {(dir_ / "dumps" / "..").string(), dir_.string() + "/"}) {
    ns_session_options o = options(same);
    EXPECT_REFUSED(ns_session_open(&o, &second), NS_ERR_STATE,
                   "each session writes a run directory");
    EXPECT_EQ(second.id, 0u);
  }
  // Two new directories, one spelt with a trailing separator: still one directory.
  const fs::path fresh = dir_ / "fresh";
  ns_session_options o = options(fresh.string() + "/");
  ASSERT_EQ(ns_session_open(&o, &second), NS_OK) << ns_last_error();
  ns_session third{77};
  o = options(fresh.string());
  EXPECT_REFUSED(ns_session_open(&o, &third), NS_ERR_STATE, "each session writes a run directory");
  EXPECT_EQ(ns_session_close(second), NS_OK) << ns_last_error();
  // Another directory: a second session of its own, open beside the first.
  o = options((dir_ / "other").string());
  ASSERT_EQ(ns_session_open(&o, &second), NS_OK) << ns_last_error();
  EXPECT_NE(second.id, s_.id);
  EXPECT_EQ(ns_session_close(second), NS_OK) << ns_last_error();
  ASSERT_EQ(ns_fold_begin(s_, 0), NS_OK);
  EXPECT_EQ(step(0).fired, 0);
}

TEST_F(SdkApi, BadSlotDescriptionsAreRefusedNamingTheSlot) {
  std::int32_t id = -1;
  ns_slot_desc d = desc("a", 3, a_.data(), 16);
  EXPECT_REFUSED(ns_slot_register(s_, &d, &id), NS_ERR_ARGUMENT, "'a' is already registered");
  EXPECT_EQ(id, -1);
  d = desc("../escape", 3, a_.data(), 16);
  EXPECT_REFUSED(ns_slot_register(s_, &d, &id), NS_ERR_ARGUMENT, "1-127 letters");
  d = desc("c", 3, a_.data(), 0);
  EXPECT_REFUSED(ns_slot_register(s_, &d, &id), NS_ERR_ARGUMENT, "count 0");
  d = desc("c", 3, a_.data(), -5);
  EXPECT_REFUSED(ns_slot_register(s_, &d, &id), NS_ERR_ARGUMENT, "count -5");
  d = desc("c", -1, a_.data(), 16);
  EXPECT_REFUSED(ns_slot_register(s_, &d, &id), NS_ERR_ARGUMENT, "order is negative");
  d = desc("c", 3, a_.data(), 16);
  d.dtype = 9;
  EXPECT_REFUSED(ns_slot_register(s_, &d, &id), NS_ERR_ARGUMENT, "dtype 9");
  d = desc("c", 3, nullptr, 0);
  d.address = reinterpret_cast<std::uint64_t>(a_.data());  // absent, yet a buffer
  EXPECT_REFUSED(ns_slot_register(s_, &d, &id), NS_ERR_ARGUMENT, "an absent slot has no buffer");
  d = desc("c", 3, a_.data(), 16);
  d.role = NS_ROLE_LOSS;
  ASSERT_EQ(ns_slot_register(s_, &d, &id), NS_OK) << ns_last_error();
  d.name = "d";
  EXPECT_REFUSED(ns_slot_register(s_, &d, &id), NS_ERR_ARGUMENT, "already has role");
  EXPECT_REFUSED(ns_slot_register(s_, nullptr, &id), NS_ERR_ARGUMENT, "desc is NULL");
  d.role = NS_ROLE_NONE;
  EXPECT_REFUSED(ns_slot_register(s_, &d, nullptr), NS_ERR_ARGUMENT, "id is NULL");
  // A consumer that names no slot is found when the table is fixed, at the first fold.
  d = desc("f", 4, a_.data(), 16);
  d.consumers = "a, nowhere";
  ASSERT_EQ(ns_slot_register(s_, &d, &id), NS_OK);
  EXPECT_REFUSED(ns_fold_begin(s_, 0), NS_ERR_SLOT, "consumer 'nowhere' is not registered");
}

TEST_F(SdkApi, UnregisteredSlotsAreRefusedAndABadListChecksNothing) {
  ASSERT_EQ(ns_fold_begin(s_, 0), NS_OK);
  ASSERT_EQ(ns_step_begin(s_, 0, nullptr), NS_OK);
  b_[3] = std::numeric_limits<float>::quiet_NaN();
  const std::int32_t list[] = {ib_, 99};
  EXPECT_REFUSED(ns_check(s_, list, 2, nullptr), NS_ERR_SLOT, "slot 99 is not registered");
  const std::int32_t negative[] = {-1};
  EXPECT_REFUSED(ns_check(s_, negative, 1, nullptr), NS_ERR_SLOT, "slot -1 is not registered");
  EXPECT_REFUSED(ns_check(s_, nullptr, 1, nullptr), NS_ERR_ARGUMENT, "slots is NULL");
  EXPECT_REFUSED(ns_check(s_, list, -1, nullptr), NS_ERR_ARGUMENT, "count -1");
  EXPECT_REFUSED(ns_slot_undefer(s_, 42), NS_ERR_SLOT, "slot 42 is not registered");
  ns_step_result r{};
  r.struct_size = sizeof r;
  ASSERT_EQ(ns_step_end(s_, &r), NS_OK);
  EXPECT_EQ(r.fired, 0) << "the refused list checked b";
}

TEST_F(SdkApi, CallsOutOfOrderAreRefusedAndRegistrationEndsAtTheFirstFold) {
  EXPECT_REFUSED(ns_step_begin(s_, 0, nullptr), NS_ERR_STATE, "no fold has begun");
  EXPECT_REFUSED(ns_fold_begin(s_, 1), NS_ERR_ARGUMENT, "the next fold is 0");
  ASSERT_EQ(ns_fold_begin(s_, 0), NS_OK);
  EXPECT_REFUSED(ns_fold_begin(s_, 1), NS_ERR_STATE, "has not ended");
  EXPECT_REFUSED(ns_step_begin(s_, 1, nullptr), NS_ERR_ARGUMENT, "the next step of fold 0 is 0");
  std::int32_t id = -1;
  const ns_slot_desc d = desc("late", 5, a_.data(), 16);
  // Registration while a step is captured (or at any time after the table is fixed): refused.
  ASSERT_EQ(ns_step_begin(s_, 0, nullptr), NS_OK);
  EXPECT_REFUSED(ns_slot_register(s_, &d, &id), NS_ERR_STATE, "before the first fold");
  EXPECT_REFUSED(ns_slot_set_address(s_, ia_, reinterpret_cast<std::uint64_t>(b_.data())),
                 NS_ERR_STATE, "between steps only");
  EXPECT_REFUSED(ns_step_begin(s_, 1, nullptr), NS_ERR_STATE, "step 0 has not ended");
  EXPECT_REFUSED(ns_fold_end(s_, 0), NS_ERR_STATE, "step 0 has not ended");
  ns_step_result r{};
  r.struct_size = sizeof r;
  ASSERT_EQ(ns_step_end(s_, &r), NS_OK);
  EXPECT_REFUSED(ns_step_end(s_, &r), NS_ERR_STATE, "no step has begun");
  EXPECT_REFUSED(ns_check(s_, &ia_, 1, nullptr), NS_ERR_STATE, "outside a step");
  EXPECT_REFUSED(ns_fold_end(s_, 3), NS_ERR_ARGUMENT, "the fold in progress is 0");
  int32_t allowed = 0;
  EXPECT_REFUSED(ns_guard_allows_update(s_, &allowed), NS_ERR_STATE, "outside a step");
  ASSERT_EQ(ns_fold_end(s_, 0), NS_OK);
}

TEST_F(SdkApi, MemoryThatCannotBeReadIsRefusedNotFollowed) {
  const long page = sysconf(_SC_PAGESIZE);
  void* two = mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(two, MAP_FAILED);
  auto* p = static_cast<float*>(two);
  // Each page that stops being readable is replaced in place by an inaccessible reservation
  // rather than unmapped: the session's writer thread allocates, and an unmapped range can be
  // handed to it before the call under test looks, which would make the memory readable again.
  const auto make_unreadable = [](void* at, long bytes) {
    return mmap(at, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == at;
  };
  ASSERT_TRUE(make_unreadable(static_cast<char*>(two) + page, page));  // a hole after page one
  std::int32_t id = -1;
  // A count that runs past the buffer into unmapped memory.
  ns_slot_desc d = desc("over", 2, p, page / 4 + 1);
  EXPECT_REFUSED(ns_slot_register(s_, &d, &id), NS_ERR_MEMORY, "not readable host memory");
  // A device-looking address passed as host memory; an address that wraps around.
  d = desc("dev", 2, nullptr, 16);
  d.state = NS_SLOT_CHECKED;
  d.address = 0x7f0000000000ull;
  EXPECT_REFUSED(ns_slot_register(s_, &d, &id), NS_ERR_MEMORY, "not readable host memory");
  d.address = ~0ull - 8;
  EXPECT_REFUSED(ns_slot_register(s_, &d, &id), NS_ERR_MEMORY, "");
  // Host memory said to be device memory in a session of host buffers: one kind per session
  // (with a device, its check would also refuse the address as not device memory).
  d = desc("as_device", 2, a_.data(), 16);
  d.memory = NS_DEVICE;
  EXPECT_REFUSED(ns_slot_register(s_, &d, &id), NS_ERR_UNSUPPORTED, "not both");
  // A buffer whose memory stops being readable after registration (freed back to the system):
  // refused at its check, and the step goes on.
  d = desc("freed", 2, p, page / 4);
  ASSERT_EQ(ns_slot_register(s_, &d, &id), NS_OK) << ns_last_error();
  ASSERT_TRUE(make_unreadable(two, page));
  ASSERT_EQ(ns_fold_begin(s_, 0), NS_OK);
  ASSERT_EQ(ns_step_begin(s_, 0, nullptr), NS_OK);
  EXPECT_REFUSED(ns_check(s_, &id, 1, nullptr), NS_ERR_MEMORY, "can no longer all be read");
  EXPECT_EQ(ns_check(s_, &ia_, 1, nullptr), NS_OK);
  ns_step_result r{};
  r.struct_size = sizeof r;
  EXPECT_EQ(ns_step_end(s_, &r), NS_OK);
  EXPECT_REFUSED(ns_step_replayed(s_, nullptr, &r), NS_ERR_STATE, "host buffers");
  // A misaligned address.
  EXPECT_REFUSED(ns_slot_set_address(s_, ia_, reinterpret_cast<std::uint64_t>(a_.data()) + 1),
                 NS_ERR_MEMORY, "not aligned");
  munmap(two, 2 * page);
}

TEST_F(SdkApi, AFailedWriteIsReportedNamingTheFileAndCloseStillFreesTheSession) {
  ASSERT_EQ(ns_fold_begin(s_, 0), NS_OK);
  step(0);
  ASSERT_EQ(ns_fold_end(s_, 0), NS_OK) << ns_last_error();
  ASSERT_EQ(ns_session_close(s_), NS_OK) << ns_last_error();
  s_ = ns_session{};
  // The run directory disappears under an open session: the writer's failure comes back as
  // NS_ERR_IO naming the file, at the next call or at close.
  const ns_session_options o = options(dir_.string());
  ASSERT_EQ(ns_session_open(&o, &s_), NS_OK) << ns_last_error();
  const ns_slot_desc da = desc("a", 0, a_.data(), 16);
  ASSERT_EQ(ns_slot_register(s_, &da, &ia_), NS_OK);
  ASSERT_EQ(ns_fold_begin(s_, 0), NS_OK);
  fs::remove_all(dir_);
  ns_step_result r{};
  r.struct_size = sizeof r;
  ASSERT_EQ(ns_step_begin(s_, 0, nullptr), NS_OK);
  ASSERT_EQ(ns_step_end(s_, &r), NS_OK);
  const ns_status end = ns_fold_end(s_, 0);  // NS_OK when the write had not failed yet
  const ns_session closed_handle = s_;
  const ns_status closed = ns_session_close(s_);  // its own last write fails too
  s_ = ns_session{};
  EXPECT_TRUE(end == NS_OK || end == NS_ERR_IO) << end;
  EXPECT_EQ(closed, NS_ERR_IO);
  EXPECT_NE(std::string(ns_last_error()).find("run.h5"), std::string::npos) << ns_last_error();
  EXPECT_REFUSED(ns_fold_begin(closed_handle, 1), NS_ERR_HANDLE, "is not open");
}

TEST_F(SdkApi, TheRunFileHoldsTheTrainersTableFlagsAndEntry) {
  ASSERT_EQ(ns_fold_begin(s_, 0), NS_OK);
  EXPECT_EQ(step(0).fired, 0);
  a_[5] = -std::numeric_limits<float>::infinity();
  b_[0] = std::numeric_limits<float>::quiet_NaN();
  const ns_step_result r = step(1);
  EXPECT_EQ(r.fired, 1);
  EXPECT_EQ(r.first_fire, 1);
  EXPECT_EQ(r.entry_slot, ia_) << "a has the lower order";
  EXPECT_EQ(r.entry_step, 1);
  EXPECT_EQ(r.updated, 0) << "the guard skips a step that fired";
  std::uint64_t word = 0;
  ASSERT_EQ(ns_guard_word(s_, &word), NS_OK);
  EXPECT_EQ(*reinterpret_cast<const std::uint32_t*>(word), 1u);
  ASSERT_EQ(ns_fold_end(s_, 0), NS_OK);
  ASSERT_EQ(ns_fold_begin(s_, 1), NS_OK) << "flags reset at the fold's boundary";
  a_[5] = b_[0] = 0;
  EXPECT_EQ(step(0).entry_slot, -1);
  ASSERT_EQ(ns_session_close(s_), NS_OK) << ns_last_error();
  s_ = ns_session{};

  const nanscope::RunFileData run = nanscope::read_run_file((dir_ / "run.h5").string());
  EXPECT_EQ(run.table->trainer(), "api_test");
  ASSERT_EQ(run.table->size(), 2);
  EXPECT_EQ((*run.table)[0].name, "a");
  EXPECT_EQ((*run.table)[0].consumers, std::vector<int>{1}) << "a's consumer b, slot 1";
  ASSERT_EQ(run.folds.size(), 2u);
  EXPECT_EQ(run.folds[0].entry_slot.value_or(-1), 0);
  EXPECT_EQ(run.folds[0].entry_step.value_or(-1), 1);
  EXPECT_EQ(run.folds[0].slots[0].kinds, 4) << "-inf";
  EXPECT_EQ(run.folds[0].slots[1].kinds, 1) << "NaN";
  EXPECT_FALSE(run.folds[1].entry_slot.has_value());
  ASSERT_EQ(run.steps.size(), 3u);
  EXPECT_EQ(run.steps[1].health[1][nanscope::kHealthNonfinite], 1.0f);
  EXPECT_EQ(run.steps[0].health[0][nanscope::kHealthMax], 1.0f);
  ASSERT_EQ(run.events.size(), 1u);
  EXPECT_EQ(run.events[0].dump, "dumps/fold000_step00000001_a.h5");
  EXPECT_TRUE(fs::exists(dir_ / run.events[0].dump));
}

TEST_F(SdkApi, AProtectedPageInsideABufferIsRefusedAtItsCheckAndTheListChecksNothing) {
  const long page = sysconf(_SC_PAGESIZE);
  void* three = mmap(nullptr, 3 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(three, MAP_FAILED);
  auto* p = static_cast<float*>(three);
  std::int32_t id = -1;
  const ns_slot_desc d = desc("holed", 2, p, 3 * page / 4);
  ASSERT_EQ(ns_slot_register(s_, &d, &id), NS_OK) << ns_last_error();
  ASSERT_EQ(mprotect(static_cast<char*>(three) + page, page, PROT_NONE), 0);  // the middle page
  ASSERT_EQ(ns_fold_begin(s_, 0), NS_OK);
  ASSERT_EQ(ns_step_begin(s_, 0, nullptr), NS_OK);
  a_[0] = std::numeric_limits<float>::quiet_NaN();
  const std::int32_t list[] = {ia_, id};
  EXPECT_REFUSED(ns_check(s_, list, 2, nullptr), NS_ERR_MEMORY, "can no longer all be read");
  ns_step_result r{};
  r.struct_size = sizeof r;
  ASSERT_EQ(ns_step_end(s_, &r), NS_OK);
  EXPECT_EQ(r.fired, 0) << "a's NaN was checked although the call was refused";
  munmap(three, 3 * page);
}

TEST_F(SdkApi, WhatCanOnlyBeJudgedAtTheFirstFoldIsRefusedThereAndCanBeMended) {
  std::int32_t id = -1;
  ns_slot_desc d = desc("c", 2, a_.data(), 16);
  d.consumers = "later";
  ASSERT_EQ(ns_slot_register(s_, &d, &id), NS_OK);
  EXPECT_REFUSED(ns_fold_begin(s_, 0), NS_ERR_SLOT,
                 "ns_fold_begin: slot 'c': consumer 'later' is not registered");
  d = desc("later", 3, b_.data(), 16);
  ASSERT_EQ(ns_slot_register(s_, &d, &id), NS_OK) << "registration stays open";
  // A deferred slot with no buffer yet cannot be undeferred; one given its buffer can.
  d = desc("def", 4, nullptr, 16);
  d.state = NS_SLOT_DEFERRED;
  std::int32_t def = -1;
  ASSERT_EQ(ns_slot_register(s_, &d, &def), NS_OK) << ns_last_error();
  EXPECT_REFUSED(ns_slot_undefer(s_, def), NS_ERR_SLOT, "has no buffer yet");
  EXPECT_EQ(ns_fold_begin(s_, 0), NS_OK) << ns_last_error();
  ASSERT_EQ(ns_slot_set_address(s_, def, reinterpret_cast<std::uint64_t>(b_.data())), NS_OK);
  EXPECT_EQ(ns_slot_undefer(s_, def), NS_OK) << ns_last_error();
}

TEST(SdkApiOpen, ATrainerNameTheTableWouldRefuseIsRefusedAtOpen) {
  const fs::path dir = fresh_dir("name");
  ns_session_options o = options(dir.string());
  ns_session s{};
  for (const char* bad : {"a,b", "tab\there", "nanscope", "", "caf\xc3\xa9", "bad\xff"}) {
    o.trainer = bad;
    EXPECT_REFUSED(ns_session_open(&o, &s), NS_ERR_ARGUMENT, "ns_session_open: options.trainer");
    EXPECT_EQ(s.id, 0u);
  }
  fs::remove_all(dir);
}

// A device buffer where the device path cannot run (no CUDA plugin, or no device: CI's machines)
// is refused saying which; with a device, this host address is refused as not device memory.
// Either way the session goes on with host buffers.
TEST(SdkApiDevice, ADeviceBufferIsRefusedSayingWhatIsMissing) {
  const fs::path dir = fresh_dir("device");
  const ns_session_options o = options(dir.string());
  ns_session s{};
  ASSERT_EQ(ns_session_open(&o, &s), NS_OK) << ns_last_error();
  std::vector<float> host(16, 1.0f);
  ns_slot_desc d = desc("on_device", 0, host.data(), 16);
  d.memory = NS_DEVICE;
  std::int32_t id = -1;
  d.dtype = NS_F64;  // checked on the host path only
  EXPECT_REFUSED(ns_slot_register(s, &d, &id), NS_ERR_UNSUPPORTED,
                 "slot 'on_device': float64 device buffers are not checked by this version");
  d.dtype = NS_F32;
  const ns_status st = ns_slot_register(s, &d, &id);
  const std::string why = ns_last_error();
  if (st == NS_ERR_UNSUPPORTED) {
    EXPECT_TRUE(why.find("need a CUDA device") != std::string::npos ||
                why.find("checked by nanscope's CUDA plugin") != std::string::npos)
        << why;
  } else {
    EXPECT_EQ(st, NS_ERR_MEMORY) << why;
    EXPECT_NE(why.find("not device memory"), std::string::npos) << why;
  }
  EXPECT_NE(why.find("slot 'on_device'"), std::string::npos) << why;
  EXPECT_EQ(id, -1);
  d.memory = NS_HOST;
  EXPECT_EQ(ns_slot_register(s, &d, &id), NS_OK) << ns_last_error();
  EXPECT_EQ(id, 0);
  EXPECT_EQ(ns_session_close(s), NS_OK) << ns_last_error();
  fs::remove_all(dir);
}

TEST_F(SdkApi, AShapeMustHoldTheCountAndIsWhatTheDumpKeeps) {
  std::vector<float> m(12, 1.0f);
  std::int32_t id = -1;
  ns_slot_desc d = desc("matrix", 0, m.data(), 12);
  d.ndim = 2;
  d.shape[0] = 5;
  d.shape[1] = 3;
  EXPECT_REFUSED(ns_slot_register(s_, &d, &id), NS_ERR_ARGUMENT,
                 "shape 5x3 does not hold count 12");
  d.ndim = 9;
  EXPECT_REFUSED(ns_slot_register(s_, &d, &id), NS_ERR_ARGUMENT, "ndim 9");
  d.ndim = 2;
  d.shape[0] = 4;
  ASSERT_EQ(ns_slot_register(s_, &d, &id), NS_OK) << ns_last_error();
  ASSERT_EQ(ns_fold_begin(s_, 0), NS_OK);
  ASSERT_EQ(ns_step_begin(s_, 0, nullptr), NS_OK);
  m[7] = std::numeric_limits<float>::infinity();
  ASSERT_EQ(ns_check(s_, &id, 1, nullptr), NS_OK);
  ns_step_result r{};
  r.struct_size = sizeof r;
  ASSERT_EQ(ns_step_end(s_, &r), NS_OK);
  EXPECT_EQ(r.entry_slot, id);
  ASSERT_EQ(ns_session_close(s_), NS_OK) << ns_last_error();
  s_ = ns_session{};
  const nanscope::DumpData dump =
      nanscope::read_dump((dir_ / "dumps" / "fold000_step00000000_matrix.h5").string());
  ASSERT_EQ(dump.slots.size(), 1u);
  EXPECT_EQ(dump.slots[0].shape, (std::vector<std::uint64_t>{4, 3}));
  EXPECT_EQ(dump.slots[0].scan.first_bad_index, 7);
  EXPECT_EQ(dump.table->trainer(), "api_test");
}

}  // namespace
