#include "core/slot_table.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <set>

#include <fmt/format.h>

#include "core/errors.h"

namespace nanscope {

std::string_view phase_name(Phase p) {
  switch (p) {
    case Phase::Sample:
      return "sample";
    case Phase::Forward:
      return "forward";
    case Phase::BackwardMain:
      return "backward.main";
    case Phase::BackwardAux:
      return "backward.aux";
    case Phase::BackwardIqn:
      return "backward.iqn";
    case Phase::BackwardEncoder:
      return "backward.encoder";
    case Phase::ChecksPostBackward:
      return "checks.post_backward";
    case Phase::Optimizer:
      return "optimizer";
  }
  return "?";
}

namespace {
using P = Phase;
std::vector<int> S(std::initializer_list<int> slots) {
  return std::vector<int>(slots);
}
constexpr const char* kEnd = "end of backward (fire once)";
constexpr std::uint8_t R(int roles) {
  return static_cast<std::uint8_t>(roles);
}
using W = SlotStorage;
// The builtin table, its rows in dataflow order: the order in which a step finalises each slot's
// buffer (a slot's SlotInfo::rank is its row's place here).
// clang-format off
const std::vector<SlotInfo>& builtin_rows() {
  static const std::vector<SlotInfo> rows = {
  {0,  "batch", P::Sample, P::Sample, "after the gather and the draws", "sample: gather of s, s', R, done, next-bar target", "[s B*F; s' B*F; R B; done B; next_bar B*2]", false, S({1, 7, 8, 15, 16, 18, 20, 21, 24, 25, 28, 30})},
  {12, "iqn_tau", P::Forward, P::Forward, "start of the IQN head", "sample: tau ~ U(0,1)", "[B,N]", true, S({16, 28, 36})},
  {1,  "h_s1", P::Forward, P::Forward, "after encoder layer 1", "relu(x W1 + b1)", "[B,H]", false, S({2, 21}), W::Own, false, kRoleReluOutput},
  {2,  "h_s2", P::Forward, P::Forward, "after encoder layer 2", "relu(h_s1 W2 + b2)", "[B,H]", false, S({3, 14, 17, 21}), W::Own, false, kRoleReluOutput},
  {3,  "bn_z", P::Forward, P::Forward, "after the bottleneck", "h_s2 Wbn + bbn", "[B,Z]", false, S({4, 5, 19, 21})},
  {4,  "value_logits", P::Forward, P::Forward, "after the value head", "z Wv + bv", "[B,atoms]", false, S({6}), W::Own, false, kRoleLseInput},
  {5,  "adv_logits", P::Forward, P::Forward, "after the advantage heads", "z Wa + ba", "[B,A_total,atoms]", false, S({6}), W::Own, false, kRoleLseInput},
  {6,  "log_probs", P::Forward, P::Forward, "after the dueling aggregation", "log_softmax(v + a - mean a)", "[B,A_total,atoms]", false, S({9, 10, 24, 25, 29}), W::Own, false, R(kRoleC51Rows | kRoleLogProbs)},
  {7,  "target_log_probs", P::Forward, P::Forward, "after the target pass on s'", "target network on s'", "[B,A_total,atoms]", false, S({8, 20, 24, 25}), W::Own, false, R(kRoleC51Rows | kRoleLogProbs)},
  {8,  "proj_target", P::Forward, P::Forward, "after the C51 projection", "C51 projection of the target distribution", "[B,D,atoms]", false, S({9, 20, 24, 25, 31}), W::Own, false, kRoleC51Rows},
  {9,  "c51_loss", P::Forward, P::Forward, "after the C51 loss", "per-sample C51 cross-entropy", "[B]", false, S({20})},
  {10, "q_expected", P::Forward, P::Forward, "after the expected Q", "sum_i zeta_i p_i", "[B,A_total]", false, S({11, 20, 24, 25, 29}), W::Own, false, kRoleLseInput},
  {11, "cql_lse", P::Forward, P::Forward, "after the CQL logsumexp", "logsumexp_a Q per branch", "[B,D]", false, S({20, 25, 29})},
  {36, "iqn_cos_features", P::Forward, P::Forward, "after the cosine features", "cos(pi i tau), i < n_cos", "[B,N,n_cos]", true, S({13, 21}), W::Work},
  {13, "iqn_phi", P::Forward, P::Forward, "after the cosine embedding", "relu(cos(pi i tau) Wphi + bphi)", "[B,N,H]", true, S({14, 21, 27})},
  {14, "iqn_quantiles", P::Forward, P::Forward, "after the quantile layer", "(h_s2 * phi) Wq + bq", "[B,N,A_total]", true, S({16, 28}), W::Own, false, kRoleQuantiles},
  {15, "iqn_target_quantiles", P::Forward, P::Forward, "after the target IQN on s'", "target IQN on s' with tau'", "[B,N',A_total]", true, S({16, 28})},
  {16, "iqn_loss", P::Forward, P::Forward, "after the quantile Huber loss", "per-sample quantile Huber loss", "[B]", true, S({20})},
  {17, "aux_pred_nb", P::Forward, P::Forward, "after the aux head", "relu(h_s2 Wx1 + bx1) Wx2 + bx2", "[B,2]", false, S({18, 21, 30})},
  {18, "aux_loss", P::Forward, P::Forward, "after the aux loss", "per-sample next-bar squared error", "[B]", false, S({20})},
  {19, "ensemble_logits", P::Forward, P::Forward, "after the ensemble heads", "z Wve_e + bve_e", "[E,B,atoms]", false, S({20, 31})},
  {20, "total_loss", P::Forward, P::Forward, "end of forward", "weighted sum of the loss terms", "[1]", false, S({})},
  {29, "cql_d_value_logits", P::ChecksPostBackward, P::BackwardMain, kEnd, "CQL gradient w.r.t. the value logits", "[B,atoms]", false, S({24})},
  {24, "d_value_logits", P::ChecksPostBackward, P::BackwardMain, kEnd, "c51_grad + CQL value gradient", "[B,atoms]", false, S({21, 32})},
  {25, "d_adv_logits", P::ChecksPostBackward, P::BackwardMain, kEnd, "c51_grad + CQL advantage gradient", "[B,A_total,atoms]", false, S({21, 32})},
  {31, "ensemble_d_logits", P::ChecksPostBackward, P::BackwardMain, kEnd, "ensemble backward", "[E,B,atoms]", false, S({21, 32}), W::Own, true},
  {32, "bn_d_concat", P::ChecksPostBackward, P::BackwardMain, kEnd, "bottleneck linear backward dy (branch concat)", "[B,Z]", false, S({21, 33})},
  {33, "bw_d_h_s2.main", P::BackwardMain, P::BackwardMain, "end of main backward, before the aux SAXPY", "bottleneck backward", "bw_d_h_s2 [B,H]", false, S({34}), W::BackwardTrunk},
  {30, "aux_dh_s2_nb", P::ChecksPostBackward, P::BackwardAux, kEnd, "aux next-bar backward dh_s2", "[B,H]", false, S({34})},
  {34, "bw_d_h_s2.aux", P::BackwardAux, P::BackwardAux, "after the aux SAXPY", "bw_d_h_s2 += lambda_aux * aux_dh_s2_nb", "bw_d_h_s2 [B,H]", false, S({26}), W::BackwardTrunk},
  {28, "d_branch_logits", P::ChecksPostBackward, P::BackwardIqn, kEnd, "IQN backward, gradient w.r.t. quantiles", "[B,N,A_total]", true, S({21, 27})},
  {27, "iqn_d_h_s2", P::ChecksPostBackward, P::BackwardIqn, kEnd, "IQN backward dh_s2", "[B,H]", true, S({26})},
  {26, "iqn_trunk_m", P::ChecksPostBackward, P::BackwardIqn, kEnd, "apply_iqn_trunk_gradient GEMM output", "[B,H]", true, S({35})},
  {35, "bw_d_h_s2.iqn", P::BackwardIqn, P::BackwardIqn, "after the IQN device-to-device overwrite", "bw_d_h_s2 = iqn_trunk_m", "bw_d_h_s2 [B,H]", true, S({21}), W::BackwardTrunk},
  {21, "grad_norm", P::Optimizer, P::Optimizer, "after the norms", "global and per-group gradient norms", "[1 + groups]", false, S({22, 23})},
  {22, "adam_moments", P::Optimizer, P::Optimizer, "after the Adam update", "Adam m and v, all parameters", "[2, P]", false, S({}), W::AdamMoments},
  {23, "params", P::Optimizer, P::Optimizer, "after the Adam update", "all parameters after the update", "[P]", false, S({}), W::Params},
  };
  return rows;
}
// clang-format on

// The table by index, each slot's rank its row's place in builtin_rows (which must name every
// slot once).
std::vector<SlotInfo> ranked_by_place(const std::vector<SlotInfo>& in_dataflow_order) {
  std::vector<SlotInfo> rows(in_dataflow_order.size());
  std::vector<bool> ranked(rows.size(), false);
  for (std::size_t place = 0; place < in_dataflow_order.size(); ++place) {
    const auto slot = static_cast<std::size_t>(in_dataflow_order[place].index);
    if (slot >= rows.size() || ranked[slot])
      throw InternalError("builtin_rows names a slot twice or one outside the table");
    ranked[slot] = true;
    rows[slot] = in_dataflow_order[place];
    rows[slot].rank = static_cast<int>(place);
  }
  return rows;
}

bool printable_name(const std::string& s, std::size_t longest) {
  if (s.empty() || s.size() > longest) return false;
  for (unsigned char c : s)
    if (c < 0x20 || c >= 0x7f || c == ',') return false;  // printable ASCII: no encoding to guess
  return true;
}

}  // namespace

std::string_view slot_phase(const SlotInfo& s) {
  return s.phase_text.empty() ? phase_name(s.phase) : std::string_view(s.phase_text);
}

std::string_view slot_type_name(const SlotTable& table, int slot, std::string_view builtin_type) {
  if (table.is_builtin()) return builtin_type;
  // The SDK's buffer text: "[32, 16] bfloat16", with " (absent)" after an absent slot's.
  std::string_view rest = table.at(slot).buffer;
  while (!rest.empty()) {
    const std::size_t space = rest.find(' ');
    const std::string_view word = rest.substr(0, space);
    for (std::string_view known : {"float32", "float64", "bfloat16", "float16"})
      if (word == known) return known;
    rest = space == std::string_view::npos ? std::string_view() : rest.substr(space + 1);
  }
  return "?";  // a run file written before the SDK named the type
}

// The constructor is private: a table is made here, by one of the two factories.
const SlotTableRef& SlotTable::builtin() {
  static const SlotTableRef table = [] {
    auto t = std::shared_ptr<SlotTable>(new SlotTable);
    t->slots_ = ranked_by_place(builtin_rows());
    return SlotTableRef(std::move(t));
  }();
  return table;
}

const SlotInfo& builtin_slot(int index) {
  return SlotTable::builtin()->at(index);
}

std::uint64_t SlotTable::fingerprint() const {
  std::uint64_t h = 14695981039346656037ull;  // FNV-1a, 64 bits
  const auto mix = [&h](std::uint64_t v) {
    for (int byte = 0; byte < 8; ++byte, v >>= 8) h = (h ^ (v & 0xff)) * 1099511628211ull;
  };
  for (char c : trainer_) mix(static_cast<unsigned char>(c));
  for (const SlotInfo& s : slots_) {
    mix(static_cast<std::uint64_t>(s.index));
    for (char c : s.name) mix(static_cast<unsigned char>(c));
    mix(static_cast<std::uint64_t>(s.phase));
    mix(static_cast<std::uint64_t>(s.written_in));
    mix(static_cast<std::uint64_t>(s.rank));
    mix(s.consumers.size());
    for (int c : s.consumers) mix(static_cast<std::uint64_t>(c));
    mix(s.roles);
    mix((s.iqn_only ? 1u : 0u) | (s.starts_deferred ? 2u : 0u));
    mix(static_cast<std::uint64_t>(s.storage));
  }
  return h;
}

std::uint64_t builtin_slot_table_fingerprint() {
  return SlotTable::builtin()->fingerprint();
}

std::string slot_name_problem(const std::string& s) {
  bool ok = !s.empty() && s.size() <= 127 &&
            std::string_view(".-:#").find(s.front()) == std::string_view::npos;
  for (unsigned char c : s)
    ok = ok && (std::isalnum(c) || c == '_' || c == '.' || c == '-' || c == ':' || c == '#');
  ok = ok && s.find("..") == std::string::npos;
  return ok ? ""
            : "a name is 1-127 letters, digits, '_', '.', '-', ':' or '#', not starting with '.', "
              "'-', ':' or '#' and without '..'";
}

std::string trainer_name_problem(const std::string& name) {
  return printable_name(name, 63) && name != "nanscope"
             ? ""
             : "a trainer's name is 1-63 printable ASCII characters without ',' and not "
               "'nanscope'";
}

SlotTableRef SlotTable::of_trainer(const std::string& trainer,
                                   const std::vector<TrainerSlot>& slots, std::string* problem) {
  const auto refuse = [problem](std::string why) {
    if (problem) *problem = std::move(why);
    return SlotTableRef();
  };
  if (slots.empty() || slots.size() > static_cast<std::size_t>(kMaxSlots))
    return refuse(fmt::format("a trainer has 1 to {} slots, not {}", kMaxSlots, slots.size()));
  if (std::string why = trainer_name_problem(trainer); !why.empty()) return refuse(why);
  std::set<std::string_view> names;
  for (std::size_t i = 0; i < slots.size(); ++i) {
    const TrainerSlot& t = slots[i];
    const std::string which = fmt::format("slot {}", i);
    if (const std::string why = slot_name_problem(t.name); !why.empty())
      return refuse(which + ": " + why);
    if (!names.insert(t.name).second) return refuse(which + ": the name '" + t.name + "' is taken");
    const std::string named = which + " (" + t.name + ")";
    if (!printable_name(t.phase, 31))
      return refuse(named + ": a phase is 1-31 printable characters without ','");
    if (t.buffer.size() > 63) return refuse(named + ": the buffer text is over 63 bytes");
    if (t.rank < 0) return refuse(named + ": a negative order");
    for (int c : t.consumers)
      if (c < 0 || c >= static_cast<int>(slots.size()))
        return refuse(fmt::format("{}: consumer {} is outside the table", named, c));
  }
  auto table = std::shared_ptr<SlotTable>(new SlotTable);
  table->trainer_ = trainer;
  table->builtin_ = false;
  table->slots_.reserve(slots.size());
  for (std::size_t i = 0; i < slots.size(); ++i) {
    const TrainerSlot& t = slots[i];
    SlotInfo info;
    info.index = static_cast<int>(i);
    info.name = t.name;
    info.phase_text = t.phase;
    info.call_site = t.phase;
    info.buffer = t.buffer;
    info.producer = t.buffer;
    info.rank = t.rank;
    info.consumers = t.consumers;
    std::sort(info.consumers.begin(), info.consumers.end());
    info.consumers.erase(std::unique(info.consumers.begin(), info.consumers.end()),
                         info.consumers.end());
    table->slots_.push_back(std::move(info));
  }
  return table;
}

std::string SlotTable::deferred_text() const {
  std::string out;
  for (const auto& s : slots_)
    if (s.starts_deferred) out += (out.empty() ? "" : ", ") + std::to_string(s.index);
  return out;
}

std::string slot_markdown_row(const SlotInfo& s) {
  std::string condition = s.iqn_only ? "IQN head present" : "always";
  if (s.starts_deferred) condition += "; starts deferred";
  std::string consumers;
  for (int c : s.consumers) consumers += (consumers.empty() ? "" : ", ") + std::to_string(c);
  if (consumers.empty()) consumers = "none";
  return "| " + std::to_string(s.index) + " | `" + s.name + "` | " + std::string(slot_phase(s)) +
         " | " + s.call_site + " | " + s.producer + " | " + s.buffer + " | " +
         std::to_string(s.rank) + " | " + condition + " | " + consumers + " |";
}

SlotSet SlotTable::downstream_closure(int slot, const SlotSet& present) const {
  SlotSet reached(size());
  if (!contains(slot)) return reached;
  std::vector<int> frontier{slot};
  reached.set(slot);
  while (!frontier.empty()) {
    const int s = frontier.back();
    frontier.pop_back();
    for (int c : slots_[static_cast<std::size_t>(s)].consumers)
      if (!reached.test(c)) {
        reached.set(c);
        frontier.push_back(c);
      }
  }
  reached &= present;
  return reached;
}

std::optional<int> SlotTable::find(std::string_view s) const {
  int idx = -1;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), idx);
  if (ec == std::errc() && ptr == s.data() + s.size())
    return contains(idx) ? std::optional<int>(idx) : std::nullopt;
  for (const SlotInfo& info : slots_)
    if (info.name == s) return info.index;
  return std::nullopt;
}

}  // namespace nanscope
