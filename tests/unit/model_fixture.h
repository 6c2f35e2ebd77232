// A CPU model loaded with fold 0 of the tiny config's synthetic data, one step sampled and run
// forward. Used by the invariant and NaN-travel tests.
#pragma once

#include "data/bars.h"
#include "data/transitions.h"
#include "model/cpu_model.h"
#include "test_support.h"

namespace nanscope::test {

template <class T = double>
struct LoadedModel {
  Config cfg;
  CpuModel<T> m;
  StepKey key;

  explicit LoadedModel(Config c = tiny_config()) : cfg(c), m(c), key{c.run.seed, 0, 0, 0} {
    auto bars = generate_synthetic_bars(cfg.data, cfg.run.seed, cfg.data.bars);
    m.load_fold(
        build_transitions(bars, plan_folds(cfg.data.bars, cfg.run.folds, cfg.data.n_step)[0], cfg));
    m.sample(key);
    m.forward();
  }
  void backward() {
    m.backward_main();
    m.backward_aux();
    m.backward_iqn();
    m.backward_encoder();
  }
};

}  // namespace nanscope::test
