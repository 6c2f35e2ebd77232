// CpuModel optimizer phase: gradient norms (global and per group), clipping, Adam, target sync.
#include <cmath>

#include "model/cpu_model.h"

namespace nanscope {

template <class T>
void CpuModel<T>::optimizer(const StepKey& key) {
  const auto& o = config.optim;
  std::array<double, kGroupCount> group_sq{};
  for (const ParamEntry* e : layout.existing())
    for (std::size_t i = 0; i < e->count; ++i) {
      const double g = grads[e->offset + i];
      group_sq[e->group] += g * g;
    }
  double global_sq = 0;
  auto& norms = slots[kGradNorm];
  for (int g = 0; g < kGroupCount; ++g) {
    global_sq += group_sq[g];
    norms[1 + g] = static_cast<T>(std::sqrt(group_sq[g]));
  }
  norms[0] = static_cast<T>(std::sqrt(global_sq));
  produced(kGradNorm);
  // The clip, the losses and the collapse watch read the slot as its check sees it.
  const double norm = norms[0];
  losses.grad_norm = norm;
  for (int g = 0; g < kGroupCount; ++g) losses.group_norm[g] = norms[1 + g];
  check(kGradNorm);

  // Clip: written so that a NaN norm gives a NaN scale (never a silent 1).
  if (o.max_grad_norm > 0) {
    const double scale = norm <= o.max_grad_norm ? 1.0 : o.max_grad_norm / norm;
    if (!(scale == 1.0))
      for (auto& g : grads) g = static_cast<T>(g * scale);
  }

  // The guard skips the whole update (parameters, moments and t stay bit-identical) when the
  // bank says so (guard_allows_update).
  if (sites && !sites->allow_update()) {
    check(kAdamMoments);
    check(kParams);
    if ((key.global_step + 1) % o.target_sync == 0) sync_target();
    return;
  }
  ++adam_t;
  const double bc1 = 1.0 - std::pow(o.beta1, static_cast<double>(adam_t));
  const double bc2 = 1.0 - std::pow(o.beta2, static_cast<double>(adam_t));
  const T b1 = static_cast<T>(o.beta1), b2 = static_cast<T>(o.beta2);
  const std::size_t total = layout.total();
  // The update_ratio watch: each group's update norm over its weight norm after the update.
  const bool ratios = sites && config.watch.needs_update_norms();
  std::array<double, kGroupCount> update_sq{}, weight_sq{};
  for (const ParamEntry* e : layout.existing()) {
    const double lr = o.lr * o.lr_mult[e->group];
    for (std::size_t i = e->offset; i < e->offset + e->count; ++i) {
      const T before = params[i];
      const T g = grads[i];
      T& m = adam[i];
      T& v = adam[total + i];
      m = b1 * m + (T(1) - b1) * g;
      v = b2 * v + (T(1) - b2) * g * g;
      const double step =
          (static_cast<double>(m) / bc1) / (std::sqrt(static_cast<double>(v) / bc2) + o.eps);
      params[i] = static_cast<T>(params[i] - lr * step);
      if (ratios) {
        const double du = static_cast<double>(params[i]) - static_cast<double>(before);
        update_sq[e->group] += du * du;
        weight_sq[e->group] += static_cast<double>(params[i]) * static_cast<double>(params[i]);
      }
    }
  }
  if (ratios) {
    std::array<double, kGroupCount> ratio;
    for (int g = 0; g < kGroupCount; ++g)
      ratio[g] = std::sqrt(update_sq[g]) / std::sqrt(weight_sq[g]);
    sites->updated_by(ratio);
  }
  produced(kAdamMoments);
  check(kAdamMoments);
  produced(kParams);
  check(kParams);

  if ((key.global_step + 1) % o.target_sync == 0) sync_target();
}

}  // namespace nanscope
