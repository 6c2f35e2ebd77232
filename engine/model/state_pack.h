// Between a backend's flat allocations (params, target, adam = [m | v], layout order with padding)
// and a StateSnapshot (existing parameters only, as doubles). Once for both backends.
#pragma once

#include <cstdint>
#include <vector>

#include "model/backend.h"

namespace nanscope {

template <class T>
void pack_state(const ParamLayout& layout, const std::vector<T>& params,
                const std::vector<T>& target, const std::vector<T>& adam, std::int64_t adam_t,
                StateSnapshot& s) {
  const auto entries = layout.existing();
  std::size_t n = 0;
  for (const ParamEntry* e : entries) n += e->count;
  for (auto* v : {&s.params, &s.target, &s.adam_m, &s.adam_v}) v->resize(n);
  const std::size_t total = layout.total();
  std::size_t k = 0;
  for (const ParamEntry* e : entries)
    for (std::size_t i = e->offset; i < e->offset + e->count; ++i, ++k) {
      s.params[k] = params[i];
      s.target[k] = target[i];
      s.adam_m[k] = adam[i];
      s.adam_v[k] = adam[total + i];
    }
  s.adam_t = adam_t;
}

template <class T>
void unpack_state(const ParamLayout& layout, const StateSnapshot& s, std::vector<T>& params,
                  std::vector<T>& target, std::vector<T>& adam, std::int64_t& adam_t) {
  const std::size_t total = layout.total();
  std::size_t k = 0;
  for (const ParamEntry* e : layout.existing())
    for (std::size_t i = e->offset; i < e->offset + e->count; ++i, ++k) {
      params[i] = static_cast<T>(s.params.at(k));
      target[i] = static_cast<T>(s.target.at(k));
      adam[i] = static_cast<T>(s.adam_m.at(k));
      adam[total + i] = static_cast<T>(s.adam_v.at(k));
    }
  adam_t = s.adam_t;
}

}  // namespace nanscope
