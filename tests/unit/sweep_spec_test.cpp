// Sweep specs (docs/sweeps.md): what a spec resolves to, its tasks' ids and names, its round trip
// through the sweep directory's sweep.toml, and every bad spec refused naming the file and the key.
#include <gtest/gtest.h>

#include "sweep/sweep_spec.h"
#include "test_support.h"

namespace nanscope::test {
namespace {

const char* kSpec = R"(
[sweep]
name = "lr"
seeds = [7, 8, 9]
set = ["run.folds=2"]

[[variant]]
name = "base"

[[variant]]
name = "hot"
scenario = "lr-explosion"
set = ["optim.lr=0.5"]
inject = ["slot:h_s2@1:3"]

[slurm]
partition = "gpu"
gres = "gpu:1"
concurrency = 4
extra = ["--account=rl"]

[local]
jobs = 2
)";

TEST(SweepSpec, TasksAreVariantTimesSeedsInArrayOrder) {
  const SweepSpec s = parse_sweep_spec(kSpec, "spec.toml");
  const auto tasks = sweep_tasks(s);
  ASSERT_EQ(tasks.size(), 6u);
  EXPECT_EQ(tasks[4].id, 4);
  EXPECT_EQ(tasks[4].variant, 1);
  EXPECT_EQ(tasks[4].seed, 8u);
  EXPECT_EQ(tasks[4].name, "hot-seed8");
  EXPECT_EQ(s.slurm.concurrency, 4);
  EXPECT_EQ(s.local_jobs, 2);
  EXPECT_TRUE(s.slurm.requeue);
  // The sweep directory's copy reads back to the same spec.
  const SweepSpec again = parse_sweep_spec(sweep_spec_toml(s), "sweep.toml");
  EXPECT_EQ(sweep_spec_toml(again), sweep_spec_toml(s));
  EXPECT_EQ(again.variants[1].injections, s.variants[1].injections);
  EXPECT_EQ(again.slurm.extra, s.slurm.extra);
}

TEST(SweepSpec, ABadSpecIsRefusedNamingTheKey) {
  auto refused = [](const std::string& text, const std::string& key) {
    const std::string what = error_of([&] { parse_sweep_spec(text, "s.toml"); });
    EXPECT_NE(what.find("s.toml"), std::string::npos) << what;
    EXPECT_NE(what.find(key), std::string::npos) << what;
  };
  const std::string head = "[sweep]\nname = \"x\"\nseeds = [1]\n";
  refused("[sweep]\nname = \"x\"\nseeds = []\n[[variant]]\nname = \"a\"\n", "sweep.seeds");
  refused("[sweep]\nname = \"x\"\nseeds = [1, 1]\n[[variant]]\nname = \"a\"\n", "sweep.seeds");
  refused("[sweep]\nname = \"a b\"\nseeds = [1]\n[[variant]]\nname = \"a\"\n", "sweep.name");
  refused(head, "variant");
  refused(head + "[[variant]]\nname = \"a\"\n[[variant]]\nname = \"a\"\n", "variant.name");
  refused(head + "[[variant]]\nname = \"a\"\nset = [\"model.hiden=3\"]\n", "variant.a.set");
  refused(head + "[[variant]]\nname = \"a\"\ninject = [\"slot:nope@0:1\"]\n", "variant.a.inject");
  refused(head + "[[variant]]\nname = \"a\"\nscenario = \"nope\"\n", "variant.a.scenario");
  refused(head + "[[variant]]\nname = \"a\"\nseed = 3\n", "variant.a.seed");
  refused(head + "[[variant]]\nname = \"a\"\n[slurm]\nextra = [\"-p gpu\"]\n", "slurm.extra");
  refused(head + "[[variant]]\nname = \"a\"\n[slurm]\ntime = \"1:00\\n#SBATCH\"\n", "slurm");
  refused(head + "[[variant]]\nname = \"a\"\n[slurm]\nconcurrency = -1\n", "slurm.concurrency");
  refused(head + "[[variant]]\nname = \"a\"\n[cluster]\n", "cluster");
  refused("[sweep\n", "s.toml:1");
  refused("[sweep]\nname = \"..\"\nseeds = [1]\n[[variant]]\nname = \"a\"\n", "sweep.name");
  refused(
      head + "set = [\"run.folds=2\"]\n[[variant]]\nname = \"a\"\ninject = [\"slot:h_s2@2:1\"]\n",
      "variant.a.inject");
  refused(head + "[[variant]]\nname = \"a\"\nset = [\"run.seed=9\"]\n", "variant.a.set");
  // Floats are refused, and one beyond an int64 is not converted on the way (found by fuzzing).
  refused("[sweep]\nname = \"x\"\nseeds = [2.0]\n[[variant]]\nname = \"a\"\n", "sweep.seeds");
  refused("[sweep]\nname = \"x\"\nseeds = [2.2e20]\n[[variant]]\nname = \"a\"\n", "sweep.seeds");
  refused(head + "[[variant]]\nname = \"a\"\n[slurm]\nconcurrency = 9.9e30\n", "slurm.concurrency");
}

}  // namespace
}  // namespace nanscope::test
