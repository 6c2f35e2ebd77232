#include "model/batch_context.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/errors.h"

namespace nanscope {

namespace {
using U = std::uint64_t;

struct Field {
  const char* name;
  std::vector<U> shape;
};

std::vector<Field> fields(const Dims& d) {
  const U B = static_cast<U>(d.B), F = static_cast<U>(d.F);
  std::vector<Field> f = {{"obs", {B, F}},
                          {"next_obs", {B, F}},
                          {"returns", {B}},
                          {"done", {B}},
                          {"next_bar", {B, static_cast<U>(d.AO)}},
                          {"actions", {B, static_cast<U>(d.D)}}};
  if (d.iqn) {
    f.push_back({"tau", {B, static_cast<U>(d.N)}});
    f.push_back({"tau_target", {B, static_cast<U>(d.Np)}});
    f.push_back({"tau_greedy", {B, static_cast<U>(d.K)}});
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
    const std::string name = f.name;
    std::vector<double> v;
    if (name == "actions")
      v.assign(a.actions.begin(), a.actions.end());
    else if (name == "tau")
      v = a.tau;
    else if (name == "tau_target")
      v = a.tau_target;
    else if (name == "tau_greedy")
      v = a.tau_greedy;
    else {
      v.assign(a.batch.begin() + static_cast<std::ptrdiff_t>(at),
               a.batch.begin() + static_cast<std::ptrdiff_t>(at + n));
      at += n;
    }
    c.push_back(NamedArray{name, f.shape, std::move(v), name == "actions"});
  }
  return c;
}

BatchElement locate_batch_element(const Dims& d, std::size_t flat) {
  std::size_t start = 0;
  for (const Field& f : fields(d)) {
    if (std::string(f.name) == "actions") break;  // the batch slot's fields come first
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
    const std::string name = f.name;
    if (name == "actions") {
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
    } else if (name == "tau")
      a.tau = it->values;
    else if (name == "tau_target")
      a.tau_target = it->values;
    else if (name == "tau_greedy")
      a.tau_greedy = it->values;
    else
      a.batch.insert(a.batch.end(), it->values.begin(), it->values.end());
  }
  return a;
}

}  // namespace nanscope
