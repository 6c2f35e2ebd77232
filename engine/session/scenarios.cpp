#include "session/scenarios.h"

#include "core/config_io.h"
#include "core/errors.h"

namespace nanscope {

const std::vector<Scenario>& scenarios() {
  static const std::vector<Scenario> list = {
      {"healthy", "the default config: nothing should fire", ""},
      {"corrupt-bar",
       "one synthetic bar's close is NaN and kept (data.keep_bad_rows): the batch carries it in",
       "[data]\ncorrupt_bar = 300\nkeep_bad_rows = true\n"},
      {"log-zero",
       "the C51 loss in KL form sum m (log m - log p) without masking m = 0: 0 * log 0 is NaN",
       "[loss]\nc51_form = \"kl_unmasked\"\n"},
      {"aux-blowup", "the aux head's learning-rate multiplier is far too high: its weights diverge",
       "[optim.lr_mult]\naux = 1e25\n"},
      {"iqn-blowup", "the IQN output layer is initialised at a huge scale: the quantiles overflow",
       "[init]\niqn_out_scale = 1.6e39\n"},
      {"lr-explosion", "the global learning rate is far too high: everything diverges",
       "[optim]\nlr = 1e12\n"},
      {"grad-collapse",
       "the encoder starts with every relu dead (large negative biases): its gradient is zero",
       "[init]\nencoder_bias = -1000.0\n"},
  };
  return list;
}

const Scenario* find_scenario(const std::string& name) {
  for (const auto& s : scenarios())
    if (s.name == name) return &s;
  return nullptr;
}

Config resolve_config(const std::string& scenario, const std::string& config_file,
                      const std::vector<std::string>& sets) {
  ConfigBuilder builder;
  if (!scenario.empty()) {
    const Scenario* s = find_scenario(scenario);
    if (!s) throw UsageError("--scenario '" + scenario + "': unknown (see --list-scenarios)");
    builder.load_text(s->toml, "scenario " + s->name);
  }
  if (!config_file.empty()) builder.load_file(config_file);
  for (const auto& kv : sets) builder.set(kv);
  return builder.build();
}

}  // namespace nanscope
