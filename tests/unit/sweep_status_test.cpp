// A sweep's status read from its directory (docs/sweeps.md, "Status"): a task that ended but whose
// run file cannot be read is failed with the reader's reason, never counted clean.
#include <gtest/gtest.h>

#include "sweep/sweep_spec.h"
#include "sweep/sweep_status.h"
#include "test_support.h"

namespace nanscope::test {
namespace {

namespace fs = std::filesystem;

// A one-task sweep directory as `nanscope-run sweep` leaves it, the task ended with `exit_code`.
fs::path one_task_sweep(const std::string& name, int exit_code) {
  const fs::path dir = temp_dir(name);
  const SweepSpec spec = parse_sweep_spec(
      "[sweep]\nname = \"one\"\nseeds = [1]\nset = [\"run.folds=2\"]\n[[variant]]\nname = "
      "\"base\"\n",
      "spec.toml");
  write_file(dir / "sweep.toml", sweep_spec_toml(spec));
  const fs::path task = dir / "tasks" / sweep_tasks(spec).at(0).name;
  fs::create_directories(task / "run");
  write_task_status(task.string(), TaskRecord{exit_code, ""});
  return dir;
}

TEST(SweepStatus, AnEndedTaskWhoseRunFileIsUnreadableIsFailedNotClean) {
  const fs::path dir = one_task_sweep("sweep_unreadable", 0);
  const fs::path task = dir / "tasks" / "base-seed1";
  write_file(task / "run" / "run.h5", "not an HDF5 file, a run cut short by a full disk");

  const SweepStatus s = read_sweep_status(dir.string());
  ASSERT_EQ(s.tasks.size(), 1u);
  EXPECT_EQ(s.tasks[0].state, TaskState::Failed);
  EXPECT_NE(s.tasks[0].reason.find("its run file is unreadable"), std::string::npos)
      << s.tasks[0].reason;
  EXPECT_NE(s.tasks[0].reason.find("run.h5"), std::string::npos) << s.tasks[0].reason;
  EXPECT_EQ(s.failed, 1);
  EXPECT_EQ(s.clean, 0);
  EXPECT_EQ(s.tasks[0].folds.at(0).cell, FoldCell::Failed);
  fs::remove_all(dir);
}

TEST(SweepStatus, AnEndedTaskWithoutARunFileYetKeepsItsExitStatus) {
  // The same task with no run file at all: its exit status decides, as before.
  const fs::path dir = one_task_sweep("sweep_no_file", 0);
  const SweepStatus s = read_sweep_status(dir.string());
  ASSERT_EQ(s.tasks.size(), 1u);
  EXPECT_EQ(s.tasks[0].state, TaskState::Done);
  EXPECT_EQ(s.failed, 0);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace nanscope::test
