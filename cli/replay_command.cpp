// `nanscope-run replay DUMP.h5`: re-runs a dumped step and says whether its NaNs come back, how
// each dumped buffer compares with the replayed one, and which recorded injections the dumped
// step had (a slot injection is a transient fault the context does not hold).
#include <fmt/format.h>

#include <iostream>
#include <nlohmann/json.hpp>

#include "backend_choice.h"
#include "core/sentinel.h"
#include "io/file_guard.h"
#include "run_command.h"
#include "session/replay.h"

namespace nanscope::cli {
namespace {

std::string match_text(const BufferMatch& m) {
  if (m.bit_equal) return "equal to the dump, bit for bit";
  if (m.equal) return "equal to the dump (finite values bit for bit, NaN signs or payloads aside)";
  return fmt::format(
      "{} elements differ from the dump ({} non-finite elements, relative error {:.3g})",
      m.differing, m.same_nonfinite ? "the same" : "different", m.rel_error);
}

std::string verdict_text(const ReplayResult& r) {
  if (r.verdict == Verdict::Reproducible) return " (a bug in the maths, the data or the weights)";
  if (r.slot_injection_recorded() && !r.injections_replayed)
    return " (the step is clean when re-run without its recorded slot injection: the fault was "
           "injected)";
  return " (the step is clean when re-run: a transient fault)";
}

}  // namespace

int replay_command(const ReplayOptions& o) {
  // A dump of unknown origin is read in a child first: a crash in libhdf5 is a refusal, not ours.
  validate_in_child(o.dump, {"/proc/self/exe", "validate"});
  const DumpData dump = read_dump(o.dump);
  const Config config = dump_config(dump);
  auto backend = choose_backend(o.backend, config, !o.json);
  const ReplayResult r = replay_dump(dump, *backend, nanscope::ReplayOptions{o.with_injections});

  fmt::print(stderr,
             "replay of {} (fold {}, step {}, dumped by the {} backend) on the {} backend:\n",
             o.dump, dump.fold, dump.step, dump.backend, backend->name());
  for (const Injection& inj : r.injections) {
    const bool slot = inj.target == Injection::Target::Slot;
    fmt::print(stderr, "  recorded injection {}: {}\n", inj.spec,
               !slot ? "in the dumped parameters (persistent), so replayed"
                     : (r.injections_replayed ? "made again (--with-injections)"
                                              : "transient, not in the context: not replayed"));
  }
  for (const auto& s : r.slots)
    fmt::print(stderr, "  slot {} {}: dumped [{}], replayed [{}]; buffer {}\n", s.index,
               builtin_slot(s.index).name, fmt::join(kind_names(s.dumped_kinds), ","),
               fmt::join(kind_names(s.replayed_kinds), ","), match_text(s.match));
  fmt::print(stderr, "verdict: {}{}\n", name_of(r.verdict), verdict_text(r));
  if (o.json) {
    nlohmann::ordered_json j;
    j["schema_version"] = 1;
    j["dump"] = o.dump;
    j["backend"] = backend->name();
    j["verdict"] = std::string(name_of(r.verdict));
    j["slots"] = nlohmann::ordered_json::array();
    for (const auto& s : r.slots)
      j["slots"].push_back({{"index", s.index},
                            {"name", builtin_slot(s.index).name},
                            {"dumped_kinds", kind_names(s.dumped_kinds)},
                            {"replayed_kinds", kind_names(s.replayed_kinds)},
                            {"buffer_bit_equal", s.match.bit_equal},
                            {"buffer_equal", s.match.equal},
                            {"buffer_differing", s.match.differing},
                            {"buffer_rel_error", s.match.rel_error}});
    j["injections"] = nlohmann::ordered_json::array();
    for (const Injection& inj : r.injections) j["injections"].push_back(inj.spec);
    j["injections_replayed"] = r.injections_replayed;
    std::cout << j.dump() << std::endl;
  }
  return 0;
}

}  // namespace nanscope::cli
