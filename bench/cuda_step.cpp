// bench/cuda_step: the CUDA backend's training step at the default size, driven by the session in
// run mode, in one run: ungraphed and as one captured CUDA graph, reading each step's status record
// (what the default config's collapse watch needs) or reading the fold back at its end, with every
// check on and with every check off (sentinel.disabled = all slots), and recording with the
// device's first-fire capture; sentinel_overhead (graphed, checks on vs off, on alternating
// blocks); against the CPU reference backend's step in the same run; and per-phase times from phase
// stepping. `plugin`: the same graphed step built in-tree against built by the CUDA plugin
// (libnanscope-cuda.so, as the programs load it).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "backend_choice.h"
#include "core/config.h"
#include "core/config_io.h"
#include "cuda_backend.h"
#include "session/session.h"
#include "test_seams.h"

#include "bench_util.h"
#include "session_timing.h"

using namespace nanscope;
using nanscope::bench::int_list;
using nanscope::bench::median;
using nanscope::bench::ms_per_step;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

struct Variant {
  const char* name;
  bool graph;
  bool read_every_step;  // the default config watches for a gradient collapse at every step
  bool checks;
  bool record =
      false;  // a run directory: first-fire capture on the device (and the run file per run() call)
  bool health = true;  // sentinel.health: every check also measures its slot's health
};

// `base`: the model and the rest of the config (the default one unless a size is asked for).
Config variant_config(const Variant& v, Config c = Config{}) {
  c.run.folds = 1;
  c.run.steps_per_fold = 4000;
  c.halt.on_fire = HaltOnFire::Never;
  if (!v.read_every_step) c.halt.collapse_patience = 0;
  c.sentinel.health = v.health;
  if (!v.checks)
    for (int s = 0; s < kBuiltinSlotCount; ++s) c.sentinel.disabled.push_back(s);
  return c;
}

enum class Build { InTree, Plugin };

std::unique_ptr<Session> warm_session(const Variant& v, const std::vector<int>& unchecked = {},
                                      Build build = Build::InTree, const Config& base = Config{}) {
  Config c = variant_config(v, base);
  for (int slot : unchecked) c.sentinel.disabled.push_back(slot);
  SessionOptions o;
  o.graph = v.graph;
  if (v.record) {
    o.out_dir = (std::filesystem::temp_directory_path() / "nanscope_bench_cuda_step").string();
    std::filesystem::remove_all(o.out_dir);
  }
  auto s = std::make_unique<Session>(c,
                                     build == Build::Plugin
                                         ? choose_backend(BackendChoice::Cuda, c, false)
                                         : cuda::make_cuda_backend(c),
                                     o);
  RunUntil warm;
  warm.kind = RunUntil::Kind::Steps;
  warm.steps = 20;
  s->run(warm);  // the fold's upload, cuBLAS heuristics, the capture
  return s;
}

double time_variant(const Variant& v, int blocks, double* copies_per_step) {
  auto session = warm_session(v);
  Session& s = *session;
  const auto d2h0 = s.backend().device_to_host_copies();
  const double ms = ms_per_step(s, blocks, 100);
  *copies_per_step =
      static_cast<double>(s.backend().device_to_host_copies() - d2h0) / (blocks * 100.0);
  return ms;
}

// sentinel_overhead: the graphed step with every check against none, blocks of 100 steps
// alternating between the two sessions so that clock and thermal drift fall on both alike.
// `unchecked`: slots left off in the session with checks (bench_cuda_step split).
std::pair<double, double> interleaved_checks_on_off(int blocks,
                                                    const std::vector<int>& unchecked = {}) {
  auto on = warm_session({"", true, false, true}, unchecked);
  auto off = warm_session({"", true, false, false});
  std::vector<double> t_on, t_off;
  for (int b = 0; b < blocks; ++b) {
    t_on.push_back(ms_per_step(*on, 1, 100));
    t_off.push_back(ms_per_step(*off, 1, 100));
  }
  return {median(t_on), median(t_off)};
}

// health_overhead: the graphed default step (every check on) with the slots' health measured
// against without, alternating blocks as above.
std::pair<double, double> interleaved_health_on_off(int blocks) {
  Variant on{"", true, false, true}, off{"", true, false, true};
  off.health = false;
  auto with = warm_session(on);
  auto without = warm_session(off);
  std::vector<double> t_on, t_off;
  for (int b = 0; b < blocks; ++b) {
    t_on.push_back(ms_per_step(*with, 1, 100));
    t_off.push_back(ms_per_step(*without, 1, 100));
  }
  return {median(t_on), median(t_off)};
}

// The graphed default step (every check on, fold-end readback) of the backend linked in-tree
// against the one the CUDA plugin builds, alternating blocks of 100 steps; `which` = both, in-tree
// or plugin (one of them alone, for alternating processes).
void compare_plugin(int blocks, const std::string& which) {
  const Variant v{"", true, false, true};
  std::unique_ptr<Session> in_tree, plugin;
  if (which != "plugin") in_tree = warm_session(v, {}, Build::InTree);
  if (which != "in-tree") plugin = warm_session(v, {}, Build::Plugin);
  std::vector<double> t_in, t_plugin;
  for (int b = 0; b < blocks; ++b) {
    if (in_tree) t_in.push_back(ms_per_step(*in_tree, 1, 100));
    if (plugin) t_plugin.push_back(ms_per_step(*plugin, 1, 100));
  }
  if (in_tree && plugin)
    fmt::print(
        "plugin_step: graphed default step, in-tree {:.4f} ms vs plugin {:.4f} ms (alternating "
        "blocks, medians of {}): {:+.2f}%\n",
        median(t_in), median(t_plugin), blocks,
        100.0 * (median(t_plugin) - median(t_in)) / median(t_in));
  else
    fmt::print("plugin_step: graphed default step, {} {:.4f} ms (medians of {} blocks)\n", which,
               median(in_tree ? t_in : t_plugin), blocks);
}

// The step graph's nodes, kernels and longest chain (every check on).
void print_graph_shape() {
  auto s = warm_session({"", true, false, true});
  const cuda::StepGraphShape g = cuda::step_graph_shape(s->backend());
  fmt::print(
      "step graph (every check on): {} nodes, {} kernels; longest chain {} nodes, at most {} "
      "kernels on a chain{}\n",
      g.nodes, g.kernels, g.longest_path, g.kernels_on_longest,
      !g.one_stream ? "" : " (NANSCOPE_STEP_LANES=0: one stream)");
}

// Where the graphed step's time goes (every check on, or none with `off`): each node timed alone in
// the step graph, the nodes that cost most, and the longest chain by time. The chain's time
// against the whole graph's says how much of a replay is the chain's work and how much the launch
// gaps between its nodes.
// KEY=VALUE settings change the config (model.batch=4096 model.hidden=2048).
void print_critical_path(bool checks, const std::vector<std::string>& settings) {
  ConfigBuilder b;
  for (const auto& kv : settings) b.set(kv);
  auto s = warm_session({"", true, false, checks}, {}, Build::InTree, b.build());
  const double step_ms = ms_per_step(*s, 3, 100);
  const cuda::StepGraphProfile p = cuda::profile_step_graph(s->backend(), 50);
  fmt::print(
      "critical path (every check {}): step {:.1f} us (run mode), graph launch {:.1f} us, with no "
      "kernel {:.1f} us; {} nodes, their times alone sum to {:.1f} us; longest chain by time "
      "{:.1f} "
      "us over {} nodes ({:.1f} us a node on it besides its work)\n",
      checks ? "on" : "off", 1e3 * step_ms, p.full_us, p.empty_us, p.nodes, p.sum_us, p.critical_us,
      p.critical.size(),
      p.critical.empty() ? 0.0
                         : (p.full_us - p.critical_us) / static_cast<double>(p.critical.size()));
  fmt::print("the chain, in order:\n");
  double at = 0;
  for (const auto& n : p.critical) {
    at += n.us;
    fmt::print("  {:8.2f} us  (at {:7.1f})  {}\n", n.us, at, n.name);
  }
  std::vector<cuda::StepGraphProfile::Node> top = p.all;
  std::sort(top.begin(), top.end(), [](const auto& a, const auto& b) { return a.us > b.us; });
  fmt::print("every node, the costliest first:\n");
  for (std::size_t i = 0; i < top.size(); ++i)
    fmt::print("  {:8.2f} us  {}\n", top[i].us, top[i].name);
}

}  // namespace

// Usage: bench_cuda_step [BLOCKS] [STEP_FILE] | shape | critical [off] [KEY=VALUE...] | split |
// plugin [BLOCKS] [both|in-tree|plugin]
//        | profile [nohealth] [KEY=VALUE...].
// STEP_FILE receives the graphed and ungraphed ms per step (fold-end readback) for
// bench/torch_twin.py's step_rate ratios.
int main(int argc, char** argv) {
  // `bench_cuda_step profile`: 30 ungraphed steps and nothing else, for a kernel-by-kernel profile
  // (ncu --metrics gpu__time_duration.sum) of where a step's time goes.
  // `profile nohealth`: the same with sentinel.health off; KEY=VALUE settings change the config
  // (the scaling bench's sizes: model.batch=4096 model.hidden=2048).
  if (argc > 1 && std::string(argv[1]) == "split") {  // where sentinel_overhead goes
    const char* groups[][2] = {
        {"every check", ""},
        {"all but Adam's slots (22, 23: after the update)", "22,23"},
        {"all but the gradient norm (21)", "21"},
        {"the forward's and backward's only (beside the step)", "21,22,23"},
        {"all but the forward's (0-20)", "0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20"},
        {"all but the backward's (24-35)", "24,25,26,27,28,29,30,31,32,33,34,35"},
    };
    for (const auto& [name, off] : groups) {
      const auto [on_ms, off_ms] = interleaved_checks_on_off(21, int_list(off));
      fmt::print("sentinel_overhead, {:<52} {:.4f} ms vs none {:.4f} ms: {:+.2f}%\n", name, on_ms,
                 off_ms, 100.0 * (on_ms - off_ms) / off_ms);
    }
    return 0;
  }
  if (argc > 1 && std::string(argv[1]) == "plugin") {  // bench_cuda_step plugin [BLOCKS] [WHICH]
    compare_plugin(argc > 2 ? std::atoi(argv[2]) : 21, argc > 3 ? argv[3] : "both");
    return 0;
  }
  if (argc > 1 && std::string(argv[1]) == "critical") {
    bool checks = true;
    std::vector<std::string> settings;
    for (int i = 2; i < argc; ++i) {
      if (std::string(argv[i]) == "off")
        checks = false;
      else
        settings.emplace_back(argv[i]);
    }
    print_critical_path(checks, settings);
    return 0;
  }
  if (argc > 1 && std::string(argv[1]) == "shape") {  // the step graph's shape alone
    print_graph_shape();
    return 0;
  }
  if (argc > 1 && std::string(argv[1]) == "profile") {
    ConfigBuilder b;
    bool health = true;
    for (int i = 2; i < argc; ++i) {
      if (std::string(argv[i]) == "nohealth")
        health = false;
      else
        b.set(argv[i]);  // KEY=VALUE: another size (model.batch=4096 model.hidden=2048)
    }
    Config c = b.build();
    c.sentinel.health = health;
    c.run.folds = 1;
    c.run.steps_per_fold = 100;
    c.halt.collapse_patience = 0;
    Session s(c, cuda::make_cuda_backend(c));
    RunUntil n;
    n.kind = RunUntil::Kind::Steps;
    n.steps = 30;
    s.run(n);
    return 0;
  }
  const int blocks = argc > 1 ? std::atoi(argv[1]) : 7;
  const char* step_file = argc > 2 ? argv[2] : nullptr;
  const Variant variants[] = {
      {"ungraphed, record read every step", false, true, true},
      {"ungraphed, fold-end readback", false, false, true},
      {"ungraphed, fold-end readback, checks off", false, false, false},
      {"graph, record read every step", true, true, true},
      {"graph, fold-end readback", true, false, true},
      {"graph, fold-end readback, checks off", true, false, false},
      {"graph, recording (device first-fire capture)", true, false, true, true},
  };
  constexpr int kVariants = 7;
  double ms[kVariants], copies[kVariants];
  for (int i = 0; i < kVariants; ++i) ms[i] = time_variant(variants[i], blocks, &copies[i]);

  Config config;
  config.run.folds = 1;
  config.run.steps_per_fold = 4000;
  Session gpu(config, cuda::make_cuda_backend(config));
  gpu.step();
  // Per phase (ungraphed, each phase followed by a device synchronisation through a status read).
  std::vector<std::vector<double>> phase_ms(kPhaseCount);
  for (int st = 0; st < 50; ++st)
    for (int p = 0; p < kPhaseCount; ++p) {
      const auto t = Clock::now();
      gpu.step_phase();
      phase_ms[static_cast<std::size_t>(p)].push_back(seconds_since(t) * 1e3);
    }
  Session cpu(config, make_cpu_backend(config));
  cpu.step();
  const double cpu_ms = ms_per_step(cpu, 3, 3);

  fmt::print(
      "bench cuda_step: default config, {} [{}], run mode, median of {} blocks of 100 steps\n",
      gpu.backend().name(), gpu.backend().device_name(), blocks);
  for (int i = 0; i < kVariants; ++i)
    fmt::print("  {:<42} {:7.3f} ms/step  {:6.0f} steps/s  {:.2f} device-to-host copies/step\n",
               variants[i].name, ms[i], 1e3 / ms[i], copies[i]);
  fmt::print("graph vs ungraphed (fold-end readback): {:.2f}x; (record every step): {:.2f}x\n",
             ms[1] / ms[4], ms[0] / ms[3]);
  print_graph_shape();
  fmt::print(
      "recording with device capture vs fold-end readback (graph): +{:.2f}% (a run file written "
      "per run() "
      "call of 100 steps included)\n",
      100.0 * (ms[6] - ms[4]) / ms[4]);
  fmt::print("checks on vs off: ungraphed +{:.1f}%, graph +{:.1f}%\n",
             100.0 * (ms[1] - ms[2]) / ms[2], 100.0 * (ms[4] - ms[5]) / ms[5]);
  const auto [on_ms, off_ms] = interleaved_checks_on_off(4 * blocks + 1);
  fmt::print(
      "sentinel_overhead: graphed step, every check {:.4f} ms vs none {:.4f} ms (alternating "
      "blocks, "
      "medians of {}): +{:.2f}% (target <= 2%)\n",
      on_ms, off_ms, 4 * blocks + 1, 100.0 * (on_ms - off_ms) / off_ms);
  const auto [h_on_ms, h_off_ms] = interleaved_health_on_off(4 * blocks + 1);
  fmt::print(
      "health_overhead: graphed default step, slot health on {:.4f} ms vs off {:.4f} ms "
      "(alternating blocks, medians of {}): {:+.2f}% (target <= 2%)\n",
      h_on_ms, h_off_ms, 4 * blocks + 1, 100.0 * (h_on_ms - h_off_ms) / h_off_ms);
  if (step_file) {
    if (std::FILE* f = std::fopen(step_file, "w")) {
      std::fprintf(f, "%.4f %.4f\n", ms[4], ms[1]);
      std::fclose(f);
    }
  }
  fmt::print("CPU reference step, same run {:.1f} ms -> the graphed CUDA step is {:.0f}x faster\n",
             cpu_ms, cpu_ms / ms[4]);
  fmt::print(
      "per phase (ungraphed, phase-stepped, each followed by a status readback), median ms:\n");
  for (int p = 0; p < kPhaseCount; ++p)
    fmt::print("  {:<22} {:8.3f}\n", phase_name(static_cast<Phase>(p)),
               median(phase_ms[static_cast<std::size_t>(p)]));
  return 0;
}
