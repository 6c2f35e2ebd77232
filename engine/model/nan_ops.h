// Elementwise and row operations written so that NaN and Inf travel as IEEE arithmetic and
// PyTorch make them travel. std::max, fmax, Eigen's cwiseMax and `x > 0 ? x : 0` all turn NaN
// into a number; these do not. Tests in tests/unit/nan_ops_test.cpp pin each one down.
#pragma once

#include <cmath>
#include <limits>

namespace nanscope::nan_ops {

template <class T>
inline T relu(T x) {
  return x < T(0) ? T(0) : x;  // NaN < 0 is false: NaN passes
}

// Backward of relu given the pre-activation: passes the gradient at a NaN input, as PyTorch does.
template <class T>
inline T relu_backward(T pre, T grad) {
  return pre <= T(0) ? T(0) : grad;
}

template <class T>
inline T clamp(T x, T lo, T hi) {
  return x < lo ? lo : (x > hi ? hi : x);
}

// Huber loss and its derivative at threshold kappa.
template <class T>
inline T huber(T delta, T kappa) {
  T a = std::abs(delta);
  return a <= kappa ? T(0.5) * delta * delta : kappa * (a - T(0.5) * kappa);
}
template <class T>
inline T huber_grad(T delta, T kappa) {
  return std::abs(delta) > kappa ? (delta > T(0) ? kappa : -kappa) : delta;  // NaN -> NaN
}

// Row maximum that returns NaN when the row holds a NaN.
template <class T>
inline T nan_max(const T* x, int n) {
  T m = x[0];
  for (int i = 0; i < n; ++i) {
    if (std::isnan(x[i])) return x[i];
    if (x[i] > m) m = x[i];
  }
  return m;
}

// logsumexp over a row. NaN in the row gives NaN; the shift is 0 when the maximum is infinite, so
// a +Inf row gives +Inf and an all -Inf row gives -Inf; Inf - Inf is never formed.
template <class T>
inline T logsumexp(const T* x, int n) {
  const T m = nan_max(x, n);
  if (std::isnan(m)) return m;
  const T shift = std::isinf(m) ? T(0) : m;
  double sum = 0;
  for (int i = 0; i < n; ++i) sum += std::exp(static_cast<double>(x[i] - shift));
  return static_cast<T>(static_cast<double>(shift) + std::log(sum));
}

template <class T>
inline void log_softmax(const T* x, T* out, int n) {
  const T lse = logsumexp(x, n);
  for (int i = 0; i < n; ++i) out[i] = x[i] - lse;
}

template <class T>
inline void softmax(const T* x, T* out, int n) {
  const T lse = logsumexp(x, n);
  for (int i = 0; i < n; ++i) out[i] = std::exp(x[i] - lse);
}

// Index of the maximum, ties to the lowest index; -1 when the row holds a NaN (the caller turns
// that into a NaN target rather than silently picking an action).
template <class T>
inline int argmax_or_nan(const T* x, int n) {
  int best = 0;
  for (int i = 0; i < n; ++i) {
    if (std::isnan(x[i])) return -1;
    if (x[i] > x[best]) best = i;
  }
  return best;
}

}  // namespace nanscope::nan_ops
