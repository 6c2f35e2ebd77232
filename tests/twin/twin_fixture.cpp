// twin_fixture OUT.h5 [cpu|cuda|auto] [STEPS] [--state-only] [KEY=VALUE...]: runs the default
// config (target_sync 2, so the target network differs; KEY=VALUE sets config keys, e.g.
// model.batch=1024) for STEPS steps on the chosen backend, then one more step, and writes that
// step as a dump file: the state before it, its batch and draws, and the slot buffers 1-36 at
// their check moments (not with --state-only: bench/step_scaling.py only times the twin).
// bench/torch_twin.py recomputes the step with PyTorch autograd from the same inputs and compares.
#include <fmt/format.h>

#include <cstdio>
#include <string>

#include "backend_choice.h"
#include "core/config_io.h"
#include "core/errors.h"
#include "core/version.h"
#include "data/bars.h"
#include "io/dump_file.h"

using namespace nanscope;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(
        stderr,
        "usage: twin_fixture OUT.h5 [cpu|cuda|auto] [STEPS] [--state-only] [KEY=VALUE...]\n");
    return 2;
  }
  try {
    const std::string out = argv[1];
    const std::string choice = argc > 2 ? argv[2] : "cpu";
    const int steps = argc > 3 ? std::atoi(argv[3]) : 3;
    bool state_only = false;
    ConfigBuilder builder;
    Config defaults;
    defaults.optim.target_sync = 2;
    builder.load_text(to_toml(defaults), "twin_fixture");
    for (int i = 4; i < argc; ++i) {
      if (std::string(argv[i]) == "--state-only")
        state_only = true;
      else
        builder.set(argv[i]);
    }
    const Config c = builder.build();
    const auto chosen = parse_enum<BackendChoice>(choice);
    if (!chosen) {
      std::fprintf(stderr, "twin_fixture: backend %s: expected auto, cpu or cuda\n",
                   choice.c_str());
      return 2;
    }
    auto backend = choose_backend(*chosen, c, false);
    const auto bars = generate_synthetic_bars(c.data, c.run.seed, c.data.bars);
    backend->load_fold(
        build_transitions(bars, plan_folds(c.data.bars, c.run.folds, c.data.n_step)[0], c));
    for (int st = 0; st < steps; ++st)
      for (int p = 0; p < kPhaseCount; ++p)
        backend->run_phase(static_cast<Phase>(p), StepKey{c.run.seed, 0, st, st});

    DumpData d;
    d.fold = 0;
    d.step = steps;
    d.global_step = steps;
    d.config_toml = to_toml(c);
    d.backend = backend->name();
    d.nanscope_version = kVersion;
    d.seed = c.run.seed;
    for (const ParamEntry* e : backend->layout().existing()) {
      d.param_names.push_back(e->name);
      d.param_shapes.emplace_back(e->shape.begin(), e->shape.end());
    }
    backend->read_state(d.state);
    const StepKey key{c.run.seed, 0, steps, steps};
    for (int p = 0; p < kPhaseCount; ++p) {
      const Phase phase = static_cast<Phase>(p);
      backend->run_phase(phase, key);
      if (phase == Phase::Sample) d.batch = backend->batch_context();
      if (phase == Phase::Optimizer || state_only) break;
      for (int s = 1; s < kBuiltinSlotCount; ++s) {  // each slot at its own check moment
        if (builtin_slot(s).phase != phase || s == kGradNorm || s == kAdamMoments || s == kParams)
          continue;
        const SlotView v = backend->slot(s);
        if (!v.exists()) continue;
        DumpSlot ds;
        ds.index = s;
        ds.shape.assign(v.shape.begin(), v.shape.end());
        for (std::size_t i = 0; i < v.count; ++i) ds.values.push_back(static_cast<float>(v.at(i)));
        ds.scan = scan_nonfinite(ds.values.data(), ds.values.size());
        d.slots.push_back(std::move(ds));
      }
    }
    write_dump(out, d);
    std::fprintf(stderr, "twin_fixture: %s backend, step %d of fold 0 written to %s\n",
                 backend->name().c_str(), steps, out.c_str());
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "twin_fixture: %s\n", e.what());
    return exit_code_for(e.kind());
  }
}
