// Hostile input (../shared/reviews/hostile-input.md): every finding of the campaign re-created from
// its recipe, refused with a clear message and the documented code, never a crash, a hang or a
// wrong answer. Files are crafted from a real recorded run with the HDF5 C API, as the report did
// with h5py.
#include <gtest/gtest.h>

#include <hdf5.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

#include "core/config_io.h"
#include "core/errors.h"
#include "delegating_backend.h"
#include "io/dump_file.h"
#include "io/file_guard.h"
#include "io/h5.h"
#include "io/run_file.h"
#include "model/memory_estimate.h"
#include "session/replay.h"
#include "session/session.h"
#include "session_checks.h"
#include "test_support.h"

using namespace nanscope;
using nanscope::test::error_of;
namespace fs = std::filesystem;

namespace {

struct Recorded {
  fs::path dir;
  std::string run_file, dump;
};

// A small recorded run: 2 folds, a fire in each (the guard keeps the weights finite), its dumps.
const Recorded& recorded() {
  static const Recorded r = [] {
    Recorded x;
    x.dir = test::temp_dir("hostile_ref");
    Config c = test::tiny_config(Precision::Float32);
    c.run.folds = 2;
    c.run.steps_per_fold = 5;
    c.halt.on_fire = HaltOnFire::Never;
    c.guard.enabled = true;
    SessionOptions o;
    o.injections = {parse_injection("slot:batch@0:1"), parse_injection("slot:h_s1@1:2")};
    o.out_dir = (x.dir / "run").string();
    Session s(c, make_cpu_backend(c), o);
    s.run();
    x.run_file = s.run_file_path();
    x.dump = s.dump_paths().at(0);
    return x;
  }();
  return r;
}

std::string copy_of(const std::string& from, const std::string& name) {
  const fs::path to = test::temp_dir("hostile_" + name) / (name + ".h5");
  fs::copy_file(from, to, fs::copy_options::overwrite_existing);
  return to.string();
}

template <class F>
void edit(const std::string& path, F&& f) {
  hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  f(file);
  H5Fclose(file);
}

// Replaces a dataset by one of another shape holding zeros of its type.
void reshape(hid_t file, const char* name, std::vector<hsize_t> dims) {
  hid_t ds = H5Dopen2(file, name, H5P_DEFAULT);
  hid_t type = H5Dget_type(ds);
  H5Dclose(ds);
  H5Ldelete(file, name, H5P_DEFAULT);
  hid_t space = H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr);
  hid_t nds = H5Dcreate2(file, name, type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  H5Dclose(nds);
  H5Sclose(space);
  H5Tclose(type);
}

// The replay of a (crafted) dump on the CPU backend, as `nanscope-run replay` does it.
std::string replay_error(const std::string& path) {
  return error_of([&] {
    const DumpData d = read_dump(path);
    auto backend = make_cpu_backend(dump_config(d));
    replay_dump(d, *backend);
  });
}

int run_cli(const std::string& args) {
  const int status =
      std::system((std::string(NANSCOPE_RUN_BINARY) + " " + args + " >/dev/null 2>&1").c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

// B1: actions out of their branch (far out, just out, INT_MIN, NaN) are refused, not indexed.
TEST(HostileInput, B1_ActionsOutsideTheirBranchAreRefused) {
  const double values[] = {1e6, -1e6, -2147483648.0, std::numeric_limits<double>::quiet_NaN(), 2,
                           -1,  0.5};
  for (double bad : values) {
    SCOPED_TRACE(bad);
    const std::string path = copy_of(recorded().dump, "b1");
    edit(path, [&](hid_t f) {
      // As float64 (the report's NaN case was a float dataset): [B, 3], the exit branch (column
      // 2) has 2 sub-actions, so 2 is just outside it.
      std::vector<std::uint64_t> dims;
      std::vector<double> v = h5::read_dataset<double>(f, "context/batch/actions", &dims, "test");
      v[bad == 2 ? 2 : 0] = bad;
      H5Ldelete(f, "context/batch/actions", H5P_DEFAULT);
      h5::write_dataset(f, "context/batch/actions", v.data(), dims, "test");
    });
    const std::string msg = replay_error(path);
    EXPECT_NE(msg.find("field 'actions'"), std::string::npos) << msg;
  }
}

// B2: a two-dimensional /events is refused before it is read.
TEST(HostileInput, B2_TwoDimensionalEventsAreRefused) {
  const std::string path = copy_of(recorded().run_file, "b2");
  edit(path, [](hid_t f) { reshape(f, "events", {2, 2}); });
  const std::string msg = error_of([&] { read_run_file(path); });
  EXPECT_NE(msg.find("/events must be one-dimensional"), std::string::npos) << msg;
}

// B3: an event's slot, fold, step, kind and dump are checked.
TEST(HostileInput, B3_EventFieldsAreValidated) {
  struct Case {
    const char* field;
    int value;
    const char* says;
  };
  for (const Case& k :
       {Case{"entry_slot", 99, "entry_slot 99 is not a slot"},
        Case{"fold", 99, "fold 99 is not in /folds"}, Case{"step", 1000, "step 1000 is not a step"},
        Case{"fold", -3, "fold -3"}}) {
    SCOPED_TRACE(k.field);
    const std::string path = copy_of(recorded().run_file, "b3");
    edit(path, [&](hid_t f) {
      hid_t ds = H5Dopen2(f, "events", H5P_DEFAULT);
      hid_t mem = H5Tcreate(H5T_COMPOUND, sizeof(int));
      H5Tinsert(mem, k.field, 0, H5T_NATIVE_INT);
      hid_t space = H5Dget_space(ds);
      hsize_t n = 0;
      H5Sget_simple_extent_dims(space, &n, nullptr);
      std::vector<int> v(n, k.value);
      H5Dwrite(ds, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data());
      H5Sclose(space);
      H5Tclose(mem);
      H5Dclose(ds);
    });
    const std::string msg = error_of([&] { read_run_file(path); });
    EXPECT_NE(msg.find(k.says), std::string::npos) << msg;
  }
}

// B4: zero folds with steps and events are refused.
TEST(HostileInput, B4_ZeroFoldsWithStepsAreRefused) {
  const std::string path = copy_of(recorded().run_file, "b4");
  edit(path, [](hid_t f) {
    for (const char* k : {"folds/flags", "folds/state", "folds/first_step", "folds/count"})
      reshape(f, k, {0, kBuiltinSlotCount});
    reshape(f, "folds/entry_slot", {0});
  });
  const std::string msg = error_of([&] { read_run_file(path); });
  EXPECT_NE(msg.find("but /folds no fold"), std::string::npos) << msg;
}

// B4b: a file of today's table cut down to nanscope 0.1.0's 36 columns is refused, not read as an
// older file: its /slots still lists today's slots.
TEST(HostileInput, B4b_FoldsNarrowerThanTheFilesSlotTableAreRefused) {
  const std::string path = copy_of(recorded().run_file, "b4b");
  edit(path, [](hid_t f) {
    for (const char* k : {"folds/flags", "folds/state", "folds/first_step", "folds/count"})
      reshape(f, k, {1, 36});
  });
  const std::string msg = error_of([&] { read_run_file(path); });
  const std::string says =
      "/slots lists " + std::to_string(kBuiltinSlotCount) + " slots but /folds/flags holds 36";
  EXPECT_NE(msg.find(says), std::string::npos) << msg;
}

// B5: a file whose reading crashes a process is refused, and the process that asked stays up. The
// stand-in for a corrupt HDF5 file here is a validator that dies of a signal (the byte-flip
// mutants that crash libhdf5 are in tests/fuzz/regressions and io.mutants).
TEST(HostileInput, B5_ACrashWhileReadingIsARefusal) {
  const std::string msg = error_of([&] {
    validate_in_child(recorded().run_file, {"/bin/sh", "-c", "kill -SEGV $$", "sh"});
  });
  EXPECT_NE(msg.find("corrupt HDF5 file (the HDF5 library crashed reading it: signal 11"),
            std::string::npos)
      << msg;
  const std::string hang = error_of([&] {
    validate_in_child(recorded().run_file, {"/bin/sh", "-c", "sleep 10", "sh"}, 0.3);
  });
  EXPECT_NE(hang.find("did not finish"), std::string::npos) << hang;
  EXPECT_EQ(error_of([&] { validate_in_child(recorded().run_file, {"/bin/true"}); }), "");
  for (const auto& entry :
       fs::directory_iterator(std::string(NANSCOPE_SOURCE_DIR) + "/tests/fuzz/regressions/hdf5")) {
    SCOPED_TRACE(entry.path().string());
    EXPECT_EQ(run_cli("replay " + entry.path().string() + " --backend cpu"), 78);
  }
}

// B6: a file-size limit fails the write (exit 74, nothing under a final name), it does not kill.
TEST(HostileInput, B6_AFileSizeLimitIsExit74NotASignal) {
  const auto dir = test::temp_dir("hostile_b6");
  const std::string cmd = "bash -c 'ulimit -f 100; exec " + std::string(NANSCOPE_RUN_BINARY) +
                          " --backend cpu --folds 1 --steps-per-fold 3 --inject slot:0@0:1 --out " +
                          (dir / "out").string() + "' >/dev/null 2>&1";
  const int status = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 74);
  for (const auto& e : fs::recursive_directory_iterator(dir / "out"))
    EXPECT_NE(e.path().extension(), ".h5") << e.path();
}

// The smaller findings of the report.
TEST(HostileInput, DumpStateShapedLikeItsParametersAndEntryBufferPresent) {
  for (const char* name : {"context/params/target.encoder.w1", "context/adam/m/encoder.w1",
                           "context/adam/v/encoder.w1"}) {
    SCOPED_TRACE(name);
    const std::string path = copy_of(recorded().dump, "state");
    edit(path, [&](hid_t f) { reshape(f, name, {3}); });
    const std::string msg = error_of([&] { read_dump(path); });
    EXPECT_NE(msg.find("shape differs from the parameter's"), std::string::npos) << msg;
  }
  const DumpData d = read_dump(recorded().dump);
  const std::string entry = std::string(builtin_slot(d.entry_slot).name);
  std::string path = copy_of(recorded().dump, "entry");
  edit(path, [&](hid_t f) { H5Ldelete(f, ("slots/" + entry).c_str(), H5P_DEFAULT); });
  std::string msg = error_of([&] { read_dump(path); });
  EXPECT_NE(msg.find("has no buffer for its entry slot"), std::string::npos) << msg;
  path = copy_of(recorded().dump, "noslots");
  edit(path, [&](hid_t f) {
    for (const DumpSlot& s : d.slots)
      H5Ldelete(f, ("slots/" + std::string(builtin_slot(s.index).name)).c_str(), H5P_DEFAULT);
  });
  msg = error_of([&] { read_dump(path); });
  EXPECT_NE(msg.find("/slots holds no slot buffer"), std::string::npos) << msg;
}

TEST(HostileInput, LinksGroupsAndHugeDataspacesAreBadDataNotIoErrors) {
  std::string path = copy_of(recorded().dump, "group");
  edit(path, [](hid_t f) {
    H5Ldelete(f, "flags", H5P_DEFAULT);
    H5Gclose(H5Gcreate2(f, "flags", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  });
  try {
    read_dump(path);
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Data) << e.what();
    EXPECT_NE(std::string(e.what()).find("flags is not a dataset"), std::string::npos) << e.what();
  }
  path = copy_of(recorded().dump, "loop");
  edit(path, [](hid_t f) {
    H5Ldelete(f, "flags", H5P_DEFAULT);
    H5Lcreate_soft("/flags", f, "flags", H5P_DEFAULT, H5P_DEFAULT);
  });
  EXPECT_NE(error_of([&] { read_dump(path); }).find("dangling or looping link"), std::string::npos);
  path = copy_of(recorded().dump, "huge");
  edit(path, [](hid_t f) {  // a chunked dataspace of 10^12 elements, nothing written
    H5Ldelete(f, "flags", H5P_DEFAULT);
    hsize_t dims[1] = {1'000'000'000'000ULL}, chunk[1] = {1024};
    hid_t space = H5Screate_simple(1, dims, nullptr);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 1, chunk);
    H5Dclose(H5Dcreate2(f, "flags", H5T_NATIVE_UINT8, space, H5P_DEFAULT, dcpl, H5P_DEFAULT));
    H5Pclose(dcpl);
    H5Sclose(space);
  });
  const std::string msg = error_of([&] { read_dump(path); });
  EXPECT_NE(msg.find("more than a file of"), std::string::npos) << msg;
}

TEST(HostileInput, InputFilesThatAreNotRegularFilesAreRefusedAtOnce) {
  const auto dir = test::temp_dir("hostile_files");
  const std::string fifo = (dir / "fifo").string();
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  fs::create_symlink(dir / "loop_a", dir / "loop_b");
  fs::create_symlink(dir / "loop_b", dir / "loop_a");
  const std::string loop = (dir / "loop_a").string();
  for (const std::string& p : {fifo, loop, std::string("/dev/zero"), dir.string()}) {
    SCOPED_TRACE(p);
    for (auto read : std::vector<std::function<void()>>{[&] { load_csv_bars(p, false); },
                                                        [&] { ConfigBuilder().load_file(p); },
                                                        [&] { read_dump(p); }}) {
      try {
        read();
        ADD_FAILURE() << "accepted";
      } catch (const Error& e) {
        EXPECT_EQ(exit_code_for(e.kind()), 78) << e.what();
        EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
      }
    }
  }
  try {
    load_csv_bars((dir / "missing.csv").string(), false);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(exit_code_for(e.kind()), 66);
  }
}

TEST(HostileInput, CsvZeroVolumeLongLinesBomAndSevenColumnHeaders) {
  const auto dir = test::temp_dir("hostile_csv");
  const std::string header = "timestamp,open,high,low,close,volume\n";
  auto csv = [&](const std::string& name, const std::string& text) {
    return test::write_file(dir / name, text);
  };
  std::string rows;
  for (int i = 0; i < 5; ++i) rows += std::to_string(i) + ",1,1.1,0.9,1,100\n";
  EXPECT_NE(error_of([&] {
              load_csv_bars(csv("zero.csv", header + rows + "5,1,1.1,0.9,1,0\n"), false);
            }).find("zero volume"),
            std::string::npos);
  EXPECT_EQ(error_of([&] {
              load_csv_bars(csv("zero_kept.csv", header + rows + "5,1,1.1,0.9,1,0\n"), true);
            }),
            "");
  EXPECT_NE(error_of([&] {
              load_csv_bars(csv("long.csv", header + std::string(100000, '7') + "\n"), false);
            }).find("line longer than"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              load_csv_bars(csv("bom.csv", "\xEF\xBB\xBF" + header + rows), false);
            }).find("byte-order mark"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              load_csv_bars(csv("seven.csv", "timestamp,open,high,low,close,volume,x\n" + rows),
                            false);
            }).find("more than 6 columns"),
            std::string::npos);
}

TEST(HostileInput, CliNumbersAreCheckedLikeSet) {
  EXPECT_EQ(run_cli("--backend cpu --folds ''"), 78);
  EXPECT_EQ(run_cli("--backend cpu --seed 18446744073709551615"), 78);
  EXPECT_EQ(run_cli("--backend cpu --steps-per-fold 99999999999"), 78);
}

// Memory is asked for before it is used: a config beyond the machine is refused at once, naming
// the keys that drive its size.
TEST(HostileInput, AConfigBeyondTheMachineIsRefusedBeforeAnyAllocation) {
  Config c;
  c.model.batch = 65536;
  c.model.hidden = 16384;
  const MemoryEstimate e = estimate_memory(c);
  EXPECT_GT(e.host_bytes, 1e12);
  const auto start = std::chrono::steady_clock::now();
  const std::string msg = error_of([&] { make_cpu_backend(c); });
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 1.0);
  EXPECT_NE(msg.find("GiB of host memory"), std::string::npos) << msg;
  EXPECT_NE(msg.find("model.batch"), std::string::npos) << msg;
  EXPECT_NE(msg.find("model.hidden"), std::string::npos) << msg;
  Config bars;
  bars.data.bars = 1'000'000'000;
  EXPECT_NE(error_of([&] { make_cpu_backend(bars); }).find("data.bars"), std::string::npos);
  // The default config fits in well under a gigabyte.
  EXPECT_LT(estimate_memory(Config{}).host_bytes, 1e9);
  EXPECT_EQ(run_cli("--backend cpu --set model.batch=65536 --set model.hidden=16384"), 78);
}

// A device error in the middle of a recording run leaves the run file (with the steps that ran)
// and every dump written so far readable.
TEST(HostileInput, ADeviceFaultMidRunLeavesReadableFiles) {
  struct Failing final : test::DelegatingBackend {
    Failing(const Config& c, int at) : DelegatingBackend(make_cpu_backend(c)), at(at) {}
    int at;
    BackendKind kind() const override { return BackendKind::Cuda; }
    void run_phase(Phase p, const StepKey& k) override {
      if (k.global_step == at && p == Phase::BackwardIqn)
        throw DeviceError(
            "backward.cu:290: cublasSgemm(iqn_dpsi): an illegal memory access was encountered",
            ErrorKind::DeviceFault);
      inner_->run_phase(p, k);
    }
  };
  Config c = test::tiny_config(Precision::Float32);
  c.run.folds = 2;
  c.run.steps_per_fold = 4;
  c.halt.on_fire = HaltOnFire::Never;
  c.guard.enabled = true;
  SessionOptions o;
  o.injections = {parse_injection("slot:batch@0:1"), parse_injection("slot:h_s1@1:0")};
  o.out_dir = test::temp_dir("hostile_fault").string();
  Session s(c, std::make_unique<Failing>(c, 6), o);
  test::expect_device_fault_keeps_files(s, "cublasSgemm(iqn_dpsi)", 6, 6,
                                        2);  // every step that finished
}

// An attribute nanscope reads as one value but stored with many (H5Aread would write them all
// into the one), and a fixed-length string attribute claiming more bytes than the file holds.
TEST(HostileInput, AttributesThatAreNotOneValueAreRefusedBeforeReading) {
  const auto replace_attr = [](hid_t f, const char* name, hid_t type, hsize_t count) {
    H5Adelete(f, name);
    hid_t space = count == 0 ? H5Screate(H5S_SCALAR) : H5Screate_simple(1, &count, nullptr);
    hid_t a = H5Acreate2(f, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
    std::vector<char> zeros(H5Tget_size(type) * std::max<hsize_t>(count, 1), '\0');
    H5Awrite(a, type, zeros.data());
    H5Aclose(a);
    H5Sclose(space);
  };
  std::string path = copy_of(recorded().dump, "attr_array");
  edit(path, [&](hid_t f) { replace_attr(f, "schema_version", H5T_NATIVE_INT64, 4096); });
  std::string msg = error_of([&] { read_dump(path); });
  EXPECT_NE(msg.find("attribute schema_version is not a single value"), std::string::npos) << msg;

  path = copy_of(recorded().run_file, "attr_string");
  edit(path, [&](hid_t f) {
    hid_t type = H5Tcopy(H5T_C_S1);
    H5Tset_size(type, 8);
    replace_attr(f, "config", type, 64);
    H5Tclose(type);
  });
  msg = error_of([&] { read_run_file(path); });
  EXPECT_NE(msg.find("attribute config is not a single value"), std::string::npos) << msg;
}

// A slot dataset with another number of values than the dump's config makes is not compared (it
// would be a verdict on nothing): replay refuses it with 78, naming the dataset.
TEST(HostileInput, ASlotDatasetOfAnotherSizeIsRefused) {
  const DumpData d = read_dump(recorded().dump);
  const std::string entry = std::string(builtin_slot(d.entry_slot).name);
  const std::string path = copy_of(recorded().dump, "slot_size");
  edit(path, [&](hid_t f) {
    const std::string name = "slots/" + entry;
    reshape(f, name.c_str(), {7});
    hid_t ds = H5Dopen2(f, name.c_str(), H5P_DEFAULT);
    for (const char* attr : {"flags", "first_bad_index"}) {
      hid_t space = H5Screate(H5S_SCALAR);
      hid_t a = H5Acreate2(ds, attr, H5T_NATIVE_INT64, space, H5P_DEFAULT, H5P_DEFAULT);
      const std::int64_t zero = 0;
      H5Awrite(a, H5T_NATIVE_INT64, &zero);
      H5Aclose(a);
      H5Sclose(space);
    }
    H5Dclose(ds);
  });
  const std::string msg = replay_error(path);
  EXPECT_NE(msg.find(path + ":/slots/" + entry + ": holds 7 values, but the dump's config makes"),
            std::string::npos)
      << msg;
  EXPECT_EQ(run_cli("replay " + path + " --backend cpu"), 78);
}

// A parameter group that claims more links than a dump ever holds is refused at once, not read name
// by name (a corrupt count kept replay busy for a minute).
TEST(HostileInput, AParameterGroupWithTooManyLinksIsRefusedAtOnce) {
  const std::string path = copy_of(recorded().dump, "many_links");
  edit(path, [&](hid_t f) {
    for (int i = 0; i < 1100; ++i)
      H5Lcreate_soft("/context/params/encoder.w1", f,
                     ("context/params/zz_extra_" + std::to_string(i)).c_str(), H5P_DEFAULT,
                     H5P_DEFAULT);
  });
  const std::string msg = error_of([&] { read_dump(path); });
  EXPECT_NE(msg.find(path + ":/context/params: holds "), std::string::npos) << msg;
  EXPECT_NE(msg.find("links; a dump holds two per parameter (at most 1024)"), std::string::npos)
      << msg;
  EXPECT_EQ(run_cli("replay " + path + " --backend cpu"), 78);
}
