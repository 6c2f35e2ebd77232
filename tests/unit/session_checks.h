// Session-level configs and checks shared by the CPU tests and the GPU tests (which run the same
// checks on the CUDA backend).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/config_io.h"
#include "io/dump_file.h"
#include "io/run_file.h"
#include "session/scenarios.h"
#include "session/session.h"
#include "test_support.h"

namespace nanscope::test {

// The sentinel tests' run: the tiny network, 2 folds x 6 steps, no halting, with overrides.
inline Config sentinel_config(const std::vector<std::string>& sets = {}) {
  Config base = tiny_config(Precision::Float32);
  base.run.folds = 2;
  base.run.steps_per_fold = 6;
  base.halt.on_fire = HaltOnFire::Never;
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
inline void expect_guard_skips_bit_exact(
    const std::function<std::unique_ptr<Backend>(const Config&)>& make) {
  Config c = sentinel_config({"guard.enabled=true"});
  SessionOptions o;
  o.injections.push_back(parse_injection("slot:aux_loss@0:2"));
  Session s(c, make(c), o);
  s.step();
  s.step();
  auto bytes = [&](int slot) {
    SlotView v = s.backend().slot(slot);
    std::vector<char> b(v.count * v.element_bytes());
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

// A recording run that stops on a device fault: the error is exit 70 and names the failing call,
// the run file holds between `min_steps` and `max_steps` steps (those read back), and every dump
// written so far reads.
inline void expect_device_fault_keeps_files(Session& s, const std::string& call,
                                            std::size_t min_steps, std::size_t max_steps,
                                            std::size_t dumps) {
  try {
    s.run();
    ADD_FAILURE() << "no error";
  } catch (const DeviceError& e) {
    EXPECT_EQ(exit_code_for(e.kind()), 70);
    EXPECT_NE(std::string(e.what()).find(call), std::string::npos) << e.what();
  }
  const RunFileData r = read_run_file(s.run_file_path());
  EXPECT_GE(r.steps.size(), min_steps);
  EXPECT_LE(r.steps.size(), max_steps);
  EXPECT_EQ(s.dump_paths().size(), dumps);
  for (const auto& d : s.dump_paths()) EXPECT_NO_THROW(read_dump(d)) << d;
}

// Bitwise equality of two arrays (NaNs included).
template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

// Equality of two slot buffers: every finite element bit for bit, +Inf and -Inf where they are, NaN
// where it is whatever its sign and payload (which operand's NaN an Eigen or cuBLAS sum carries on
// depends on its blocking, which can follow the buffers' alignment; the NaN itself does not).
template <class T>
bool same_values(const std::vector<T>& a, const std::vector<T>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!(std::isnan(a[i]) && std::isnan(b[i])) && std::memcmp(&a[i], &b[i], sizeof(T)) != 0)
      return false;
  return true;
}

// The guard inside a replayed step graph (a parameter fault, a host write before the step, leaves
// the step graphed): the skipped update leaves every parameter but the faulted one, Adam's moments
// and t bit-identical, with no recapture.
inline void expect_graphed_guard_skips_bit_exact(
    const std::function<std::unique_ptr<Backend>(const Config&)>& make) {
  Config c = sentinel_config({"guard.enabled=true"});
  SessionOptions o;
  o.graph = true;
  o.injections.push_back(parse_injection("param:aux.w2@0:2"));  // its first element NaN at step 2
  Session s(c, make(c), o);
  s.step();
  s.step();
  auto floats = [&](int slot) {
    SlotView v = s.backend().slot(slot);
    return std::vector<float>(static_cast<const float*>(v.data),
                              static_cast<const float*>(v.data) + v.count);
  };
  const std::vector<float> params = floats(kParams);
  const auto adam = floats(kAdamMoments);
  const auto t = s.backend().adam_step();
  s.step();  // step 2: aux.w2 is NaN, slots fire -> the update is skipped on the device
  const ParamEntry* w = s.backend().layout().find("aux.w2");
  ASSERT_NE(w, nullptr);
  auto after = floats(kParams);
  EXPECT_TRUE(std::isnan(after[w->offset]));  // the fault, then nothing else changed
  after[w->offset] = params[w->offset];
  EXPECT_TRUE(same_bits(after, params));
  EXPECT_TRUE(same_bits(floats(kAdamMoments), adam));
  EXPECT_EQ(s.backend().adam_step(), t);
  EXPECT_FALSE(s.history().back().updated);
  EXPECT_EQ(s.backend().step_graph_captures(),
            1);  // every step a replay of one capture
}

// First-fire capture on the device: a recording run that reads back only every few steps (the
// device copies each slot's buffer at its first fire and keeps the step's context) writes the same
// dumps, bit for bit, as an ungraphed run that reads every step and copies the live buffers at the
// fire; so does a run read every step in the same graph mode. Faults in both folds make slots first
// fire at several steps, after which their buffers keep changing (a capture taken a step late would
// differ; the check makes sure they do change).
inline void expect_captured_dumps_match_per_step(
    const std::function<std::unique_ptr<Backend>(const Config&)>& make, bool graph,
    const std::string& name) {
  Config c = sentinel_config();
  c.run.steps_per_fold = 8;
  auto run = [&](bool per_step, bool graphed, const std::string& dir) {
    Config rc = c;
    rc.halt.collapse_patience =
        per_step ? 1000 : 0;  // a collapse watch reads every step (and never halts here)
    SessionOptions o;
    o.graph = graphed;
    o.out_dir = dir;
    for (const char* f : {"param:aux.w2@0:2:posinf", "slot:bn_d_concat@0:4",
                          "param:iqn.out.w@1:3:posinf", "param:encoder.w1@1:5"})
      o.injections.push_back(parse_injection(f));
    auto s = std::make_unique<Session>(rc, make(rc), o);
    s->run();
    return s;
  };
  const auto base = temp_dir(name);
  auto reference = run(true, false, (base / "reference").string());
  const auto& ref = reference->dump_paths();
  EXPECT_GE(ref.size(), 3u);  // first fires at several steps, in both folds
  // Among the dumped slots, those a device checks in their producers (their capture copy is made
  // after the producer): iqn_phi, adam_moments, params.
  std::set<int> dumped;
  for (const auto& path : ref)
    for (const DumpSlot& slot : read_dump(path).slots) dumped.insert(slot.index);
  for (int slot : {kIqnPhi, kAdamMoments, kParams})
    EXPECT_TRUE(dumped.count(slot)) << "slot " << slot;
  auto compare = [&](Session& s) {
    const auto& got = s.dump_paths();
    ASSERT_EQ(got.size(), ref.size());
    bool later_buffer_differs = false;
    for (std::size_t i = 0; i < got.size(); ++i) {
      SCOPED_TRACE(got[i]);
      EXPECT_EQ(std::filesystem::path(got[i]).filename(), std::filesystem::path(ref[i]).filename());
      const DumpData x = read_dump(got[i]), y = read_dump(ref[i]);
      EXPECT_EQ(x.flags, y.flags);
      if (x.slots.size() != y.slots.size() || x.batch.size() != y.batch.size()) {
        ADD_FAILURE() << "slot or batch arrays differ in number";
        continue;
      }
      for (std::size_t k = 0; k < x.slots.size(); ++k) {
        EXPECT_EQ(x.slots[k].index, y.slots[k].index);
        EXPECT_EQ(x.slots[k].shape, y.slots[k].shape);
        EXPECT_TRUE(same_values(x.slots[k].values, y.slots[k].values))
            << "slot " << x.slots[k].index;
        EXPECT_EQ(x.slots[k].scan.kinds, y.slots[k].scan.kinds);
        EXPECT_EQ(x.slots[k].scan.count, y.slots[k].scan.count);
        EXPECT_EQ(x.slots[k].scan.first_bad_index, y.slots[k].scan.first_bad_index);
        // The run's last buffer of the slot: for the sensitivity of the comparison above.
        SlotView v = s.backend().slot(x.slots[k].index);
        std::vector<float> now(static_cast<const float*>(v.data),
                               static_cast<const float*>(v.data) + v.count);
        later_buffer_differs = later_buffer_differs || !same_bits(now, x.slots[k].values);
      }
      EXPECT_TRUE(same_bits(x.state.params, y.state.params));
      EXPECT_TRUE(same_bits(x.state.target, y.state.target));
      EXPECT_TRUE(same_bits(x.state.adam_m, y.state.adam_m));
      EXPECT_TRUE(same_bits(x.state.adam_v, y.state.adam_v));
      EXPECT_EQ(x.state.adam_t, y.state.adam_t);
      for (std::size_t k = 0; k < x.batch.size(); ++k) {
        EXPECT_EQ(x.batch[k].name, y.batch[k].name);
        EXPECT_TRUE(same_bits(x.batch[k].values, y.batch[k].values)) << x.batch[k].name;
      }
    }
    EXPECT_TRUE(later_buffer_differs);
  };
  {
    SCOPED_TRACE("captured on the device, read back every few steps");
    compare(*run(false, graph, (base / "captured").string()));
  }
  {
    SCOPED_TRACE("read every step");
    compare(*run(true, graph, (base / "per_step").string()));
  }
  std::filesystem::remove_all(base);
}

}  // namespace nanscope::test
