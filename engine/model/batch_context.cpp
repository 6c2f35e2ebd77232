#include "model/batch_context.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/errors.h"

namespace nanscope {

const std::array<BatchFieldName, 9>& batch_field_names() {
  static const std::array<BatchFieldName, 9> names = {{{"obs", false},
                                                       {"next_obs", false},
                                                       {"returns", false},
                                                       {"done", false},
                                                       {"next_bar", false},
                                                       {"actions", true},
                                                       {"tau", false},
                                                       {"tau_target", false},
                                                       {"tau_greedy", false}}};
  return names;
}

namespace {
using U = std::uint64_t;

// Where a field lives: a stretch of the batch slot, or an array of its own.
enum class Source { BatchSlot, Actions, Tau, TauTarget, TauGreedy };

struct Field {
  const char* name;
  std::vector<U> shape;
  Source source = Source::BatchSlot;
};

std::vector<Field> fields(const Dims& d) {
  const U B = static_cast<U>(d.B), F = static_cast<U>(d.F);
  const auto& n = batch_field_names();
  std::vector<Field> f = {{n[0].name, {B, F}},
                          {n[1].name, {B, F}},
                          {n[2].name, {B}},
                          {n[3].name, {B}},
                          {n[4].name, {B, static_cast<U>(d.AO)}},
                          {n[5].name, {B, static_cast<U>(d.D)}, Source::Actions}};
  if (d.iqn) {
    f.push_back({n[6].name, {B, static_cast<U>(d.N)}, Source::Tau});
    f.push_back({n[7].name, {B, static_cast<U>(d.Np)}, Source::TauTarget});
    f.push_back({n[8].name, {B, static_cast<U>(d.K)}, Source::TauGreedy});
  }
  return f;
}

std::size_t count(const std::vector<U>& shape) {
  std::size_t n = 1;
  for (U s : shape) n *= static_cast<std::size_t>(s);
  return n;
}
}  // namespace

BatchContext to_batch_context(const Dims& d, const BatchArrays& a) {
  BatchContext c;
  std::size_t at = 0;  // position in the batch slot
  for (const Field& f : fields(d)) {
    const std::size_t n = count(f.shape);
    std::vector<double> v;
    switch (f.source) {
      case Source::Actions:
        v.assign(a.actions.begin(), a.actions.end());
        break;
      case Source::Tau:
        v = a.tau;
        break;
      case Source::TauTarget:
        v = a.tau_target;
        break;
      case Source::TauGreedy:
        v = a.tau_greedy;
        break;
      case Source::BatchSlot:
        v.assign(a.batch.begin() + static_cast<std::ptrdiff_t>(at),
                 a.batch.begin() + static_cast<std::ptrdiff_t>(at + n));
        at += n;
        break;
    }
    c.push_back(NamedArray{f.name, f.shape, std::move(v), f.source == Source::Actions});
  }
  return c;
}

BatchElement locate_batch_element(const Dims& d, std::size_t flat) {
  std::size_t start = 0;
  for (const Field& f : fields(d)) {
    if (f.source != Source::BatchSlot) break;  // the batch slot's fields come first
    const std::size_t n = count(f.shape);
    if (flat < start + n) return BatchElement{f.name, flat - start};
    start += n;
  }
  throw InternalError("batch slot: element " + std::to_string(flat) + " is beyond the buffer");
}

BatchArrays from_batch_context(const Dims& d, const BatchContext& c) {
  BatchArrays a;
  for (const Field& f : fields(d)) {
    auto it =
        std::find_if(c.begin(), c.end(), [&](const NamedArray& x) { return x.name == f.name; });
    if (it == c.end())
      throw DataError(std::string("batch context: missing field '") + f.name + "'");
    if (it->shape != f.shape || it->values.size() != count(f.shape))
      throw DataError(std::string("batch context: field '") + f.name +
                      "' has the wrong shape for this config");
    switch (f.source) {
      case Source::Actions:
        // Sub-action indices: each within its branch (a model indexes buffers with them).
        a.actions.resize(it->values.size());
        for (std::size_t i = 0; i < it->values.size(); ++i) {
          const double x = it->values[i];
          const int branch = static_cast<int>(i % static_cast<std::size_t>(d.D));
          if (!(x >= 0 && x < d.sub[branch]) || x != std::floor(x))
            throw DataError(fmt::format(
                "batch context: field 'actions' [{}, {}] is {}, not a sub-action of branch {} "
                "(0 to {})",
                i / static_cast<std::size_t>(d.D), branch, x, branch, d.sub[branch] - 1));
          a.actions[i] = static_cast<std::int32_t>(x);
        }
        break;
      case Source::Tau:
        a.tau = it->values;
        break;
      case Source::TauTarget:
        a.tau_target = it->values;
        break;
      case Source::TauGreedy:
        a.tau_greedy = it->values;
        break;
      case Source::BatchSlot:
        a.batch.insert(a.batch.end(), it->values.begin(), it->values.end());
        break;
    }
  }
  return a;
}

}  // namespace nanscope
