// `nanscope-run replay DUMP.h5`: re-runs a dumped step and says whether its NaNs come back.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <iostream>

#include "backend_choice.h"
#include "core/sentinel.h"
#include "run_command.h"
#include "session/replay.h"

namespace nanscope::cli {

int replay_command(const ReplayOptions& o) {
  const DumpData dump = read_dump(o.dump);
  const Config config = dump_config(dump);
  auto backend = choose_backend(o.backend, config, !o.json);
  const ReplayResult r = replay_dump(dump, *backend);

  fmt::print(stderr, "replay of {} (fold {}, step {}, dumped by the {} backend) on the {} backend:\n",
             o.dump, dump.fold, dump.step, dump.backend, backend->name());
  for (const auto& s : r.slots)
    fmt::print(stderr, "  slot {} {}: dumped [{}], replayed [{}]\n", s.index, slot_info(s.index).name,
               fmt::join(kind_names(s.dumped_kinds), ","), fmt::join(kind_names(s.replayed_kinds), ","));
  fmt::print(stderr, "verdict: {}{}\n", r.verdict,
             r.verdict == "reproducible" ? " (a bug in the maths, the data or the weights)"
                                         : " (the step is clean when re-run: a transient fault)");
  if (o.json) {
    nlohmann::ordered_json j;
    j["schema_version"] = 1;
    j["dump"] = o.dump;
    j["backend"] = backend->name();
    j["verdict"] = r.verdict;
    j["slots"] = nlohmann::ordered_json::array();
    for (const auto& s : r.slots)
      j["slots"].push_back({{"index", s.index},
                            {"name", slot_info(s.index).name},
                            {"dumped_kinds", kind_names(s.dumped_kinds)},
                            {"replayed_kinds", kind_names(s.replayed_kinds)}});
    std::cout << j.dump() << std::endl;
  }
  return 0;
}

}  // namespace nanscope::cli
