#include "run_summary.h"

#include "core/version.h"

namespace nanscope::cli {

nlohmann::ordered_json run_summary(Session& s) {
  using json = nlohmann::ordered_json;
  json j;
  j["schema_version"] = 1;
  j["nanscope_version"] = kVersion;
  j["backend"] = s.backend().name();
  j["device"] = s.backend().device_name();
  j["steps_run"] = s.history().size();
  if (s.run_file_path().empty())
    j["run_file"] = nullptr;
  else
    j["run_file"] = s.run_file_path();
  j["dumps"] = s.dump_paths();
  if (const auto& h = s.halt())
    j["halt"] = {{"reason", std::string(name_of(h->kind))}, {"fold", h->fold}, {"step", h->step}};
  else
    j["halt"] = nullptr;
  if (auto e = s.entry())
    j["entry"] = {{"slot", e->slot},
                  {"name", builtin_slot(e->slot).name},
                  {"fold", e->fold},
                  {"step", e->step}};
  else
    j["entry"] = nullptr;
  if (auto b = s.backward_entry())
    j["backward_entry"] = {{"stage", backward_stage(b->slot)},
                           {"slot", b->slot},
                           {"fold", b->fold},
                           {"step", b->step}};
  else
    j["backward_entry"] = nullptr;
  j["folds"] = json::array();
  for (const auto& f : s.folds()) {
    json fold = {
        {"fold", f.fold},           {"steps", f.steps},         {"loss_first", f.loss_first},
        {"loss_last", f.loss_last}, {"c51_first", f.c51_first}, {"c51_last", f.c51_last}};
    fold["slots"] = json::array();
    for (int i = 0; i < kBuiltinSlotCount; ++i) {
      const SlotRecord& r = f.flags.slots[i];
      // The slot's largest finite absolute value in the fold (sentinel.health; null: never
      // measured) and the first step that reached it.
      const SlotPeak& p = f.peaks[static_cast<std::size_t>(i)];
      fold["slots"].push_back({{"index", i},
                               {"name", builtin_slot(i).name},
                               {"state", state_name(r.state)},
                               {"kinds", kind_names(r.kinds)},
                               {"first_step", r.first_step},
                               {"count", r.count},
                               {"peak_abs", p.step >= 0 ? json(p.abs_max) : json(nullptr)},
                               {"peak_step", p.step}});
    }
    // The fold's own entry point (the run's is the first fold's that has one).
    fold["entry"] = f.flags.entry_slot ? json{{"slot", *f.flags.entry_slot},
                                              {"name", builtin_slot(*f.flags.entry_slot).name},
                                              {"step", f.flags.entry_step.value_or(-1)}}
                                       : json(nullptr);
    j["folds"].push_back(fold);
  }
  // The watch conditions that tripped: slot and group are -1 where a condition has none.
  j["watches"] = json::array();
  for (const WatchTrip& t : s.watch_trips())
    j["watches"].push_back({{"condition", name_of(t.condition)},
                            {"slot", t.slot},
                            {"group", t.group},
                            {"fold", t.fold},
                            {"step", t.step},
                            {"value", t.value},
                            {"threshold", t.threshold}});
  return j;
}

}  // namespace nanscope::cli
