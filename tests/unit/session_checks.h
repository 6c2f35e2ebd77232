// Session-level configs and checks shared by the CPU tests and the GPU tests (which run the same
// checks on the CUDA backend).
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/config_io.h"
#include "session/scenarios.h"
#include "session/session.h"
#include "test_support.h"

namespace nanscope::test {

// The sentinel tests' run: the tiny network, 2 folds x 6 steps, no halting, with overrides.
inline Config sentinel_config(const std::vector<std::string>& sets = {}) {
  Config base = tiny_config("float32");
  base.run.folds = 2;
  base.run.steps_per_fold = 6;
  base.halt.on_fire = "never";
  ConfigBuilder b;
  b.load_text(to_toml(base), "tiny");
  for (const auto& s : sets) b.set(s);
  return b.build();
}

// A scenario of the truth table at the default size, one fold of `steps` steps.
inline Config scenario_config(const std::string& name, int steps) {
  ConfigBuilder b;
  b.load_text(find_scenario(name)->toml, name);
  b.set("run.folds=1");
  b.set("run.steps_per_fold=" + std::to_string(steps));
  return b.build();
}

// The guard: a step in which a slot fires leaves parameters, Adam's moments and t bit-identical;
// the run's step still advances, and the next clean step updates again.
inline void expect_guard_skips_bit_exact(const std::function<std::unique_ptr<Backend>(const Config&)>& make) {
  Config c = sentinel_config({"guard.enabled=true"});
  SessionOptions o;
  o.injections.push_back(parse_injection("slot:aux_loss@0:2"));
  Session s(c, make(c), o);
  s.step();
  s.step();
  auto bytes = [&](int slot) {
    SlotView v = s.backend().slot(slot);
    std::vector<char> b(v.count * (v.is_f64 ? sizeof(double) : sizeof(float)));
    std::memcpy(b.data(), v.data, b.size());
    return b;
  };
  const auto params = bytes(kParams), adam = bytes(kAdamMoments);
  const auto t = s.backend().adam_step();
  s.step();  // step 2: aux_loss fires -> the update is skipped
  EXPECT_EQ(bytes(kParams), params);
  EXPECT_EQ(bytes(kAdamMoments), adam);
  EXPECT_EQ(s.backend().adam_step(), t);
  EXPECT_FALSE(s.history().back().updated);
  EXPECT_EQ(s.step_in_fold(), 3);
  s.step();  // step 3 is clean: the update happens
  EXPECT_NE(bytes(kParams), params);
  EXPECT_EQ(s.backend().adam_step(), t + 1);
}

}  // namespace nanscope::test
