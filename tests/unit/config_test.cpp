#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "core/config_io.h"
#include "core/errors.h"
#include "test_support.h"

using namespace nanscope;
using nanscope::test::error_of;

namespace {}  // namespace

TEST(Config, DefaultsOfTheContract) {
  ConfigBuilder b;
  Config c = b.build();
  EXPECT_EQ(c.run.folds, 6);
  EXPECT_EQ(c.run.steps_per_fold, 400);
  EXPECT_EQ(c.run.seed, 1u);
  EXPECT_FALSE(c.data.keep_bad_rows);
  EXPECT_EQ(c.model.batch, 256);
  EXPECT_EQ(c.model.hidden, 256);
  EXPECT_EQ(c.model.bottleneck, 128);
  EXPECT_EQ(c.model.atoms, 51);
  EXPECT_EQ(c.model.iqn_n, 32);
  EXPECT_EQ(c.model.iqn_cos, 64);
  EXPECT_EQ(c.model.ensemble, 4);
  EXPECT_DOUBLE_EQ(c.model.gamma, 0.99);
  EXPECT_EQ(c.data.n_step, 3);
  EXPECT_DOUBLE_EQ(c.data.reward_scale, 100.0);
}

TEST(Config, FileAndSetOverridesInOrder) {
  auto dir = test::temp_dir("config_order");
  auto file =
      test::write_file(dir / "c.toml", "[run]\nfolds = 3\nseed = 9\n[loss]\nlambda_iqn = 0\n");
  ConfigBuilder b;
  b.load_file(file);
  b.set("run.folds=4");
  b.set("optim.lr_mult.aux=1e3");
  b.set("data.source=csv");  // a bare word is a string
  b.set("data.csv=\"x.csv\"");
  Config c = b.build();
  EXPECT_EQ(c.run.folds, 4);
  EXPECT_EQ(c.run.seed, 9u);
  EXPECT_FALSE(c.iqn_enabled());
  EXPECT_DOUBLE_EQ(c.optim.lr_mult[6], 1e3);
  EXPECT_EQ(c.data.source, DataSource::Csv);
  EXPECT_EQ(c.data.csv, "x.csv");
}

TEST(Config, UnknownKeyNamesKeyFileAndLine) {
  auto dir = test::temp_dir("config_unknown");
  auto file = test::write_file(dir / "c.toml", "[model]\nbatch = 8\nhiden = 3\n");
  std::string msg = error_of([&] {
    ConfigBuilder b;
    b.load_file(file);
  });
  EXPECT_NE(msg.find("model.hiden"), std::string::npos) << msg;
  EXPECT_NE(msg.find("c.toml:3"), std::string::npos) << msg;
  EXPECT_NE(error_of([] { ConfigBuilder().set("loss.lambda_iq=1"); }).find("loss.lambda_iq"),
            std::string::npos);
  EXPECT_NE(error_of([] { ConfigBuilder().load_text("[bogus]\nx = 1\n", "t.toml"); }).find("bogus"),
            std::string::npos);
}

TEST(Config, OutOfRangeAndWrongTypeNameTheKey) {
  struct Case {
    const char* set;
    const char* key;
  } cases[] = {
      {"model.atoms=1", "model.atoms"},
      {"run.folds=0", "run.folds"},
      {"model.gamma=1.5", "model.gamma"},
      {"loss.lambda_aux=-1", "loss.lambda_aux"},
      {"optim.lr=0", "optim.lr"},
      {"run.folds=2.5", "run.folds"},
      {"model.precision=half", "model.precision"},
      {"data.keep_bad_rows=1", "data.keep_bad_rows"},
      {"loss.lambda_mse=nan", "loss.lambda_mse"},
      {"run.seed=-3", "run.seed"},
  };
  for (const auto& c : cases) {
    std::string msg = error_of([&] {
      ConfigBuilder b;
      b.set(c.set);
      b.build();
    });
    EXPECT_NE(msg.find(c.key), std::string::npos) << c.set << " -> " << msg;
  }
  std::string cross = error_of([] {
    ConfigBuilder b;
    b.set("model.v_min=5");
    b.set("model.v_max=5");
    b.build();
  });
  EXPECT_NE(cross.find("model.v_max"), std::string::npos) << cross;
}

TEST(Config, SyntaxErrorNamesFileAndLine) {
  std::string msg = error_of([] { ConfigBuilder().load_text("[run]\nfolds = = 3\n", "bad.toml"); });
  EXPECT_NE(msg.find("bad.toml:2"), std::string::npos) << msg;
  EXPECT_THROW(ConfigBuilder().load_file("/nonexistent/nanscope.toml"), MissingInputError);
}

TEST(Config, ResolvedTomlRoundTrips) {
  ConfigBuilder b;
  b.set("run.folds=3");
  b.set("loss.lambda_iqn=0.25");
  b.set("optim.lr_mult.iqn=2");
  Config c = b.build();
  ConfigBuilder again;
  again.load_text(to_toml(c), "resolved");
  Config d = again.build();
  EXPECT_EQ(to_toml(c), to_toml(d));
  EXPECT_EQ(d.run.folds, 3);
  EXPECT_DOUBLE_EQ(d.loss.lambda_iqn, 0.25);
  EXPECT_DOUBLE_EQ(d.optim.lr_mult[5], 2.0);
}

TEST(Config, EveryKeyIsDocumented) {
  std::ifstream in(std::string(NANSCOPE_SOURCE_DIR) + "/docs/config.md");
  ASSERT_TRUE(in) << "docs/config.md missing";
  std::stringstream ss;
  ss << in.rdbuf();
  for (const auto& k : config_keys())
    EXPECT_NE(ss.str().find("`" + k.key + "`"), std::string::npos)
        << k.key << " not in docs/config.md";
}

TEST(Config, ShippedDefaultConfigIsTheBuiltInDefault) {
  ConfigBuilder b;
  b.load_file(std::string(NANSCOPE_SOURCE_DIR) + "/resources/configs/default.toml");
  EXPECT_EQ(to_toml(b.build()), to_toml(Config{}));
}
