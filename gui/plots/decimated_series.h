// A per-step series kept for drawing at any length: while it is short every step is a point; past
// `max_buckets` steps are grouped into buckets of 2^k steps (the size doubles when the buckets run
// out, merging pairs), each drawn as its finite minimum and maximum, so a spike is never lost and
// a line costs the same to draw at 100 and at 100,000 steps. A bucket with no finite value is a
// gap.
#pragma once

#include <QVector>
#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

namespace nanscope::gui {

class DecimatedSeries {
 public:
  explicit DecimatedSeries(std::size_t max_buckets = 1024) : max_(max_buckets) {}

  void clear() {
    buckets_.clear();
    size_ = 0;
    width_ = 1;
  }

  void append(double v) {
    if (buckets_.empty() || buckets_.back().count == width_) {
      if (buckets_.size() == max_) merge_pairs();
      buckets_.push_back(Bucket{size_, 0});
    }
    Bucket& b = buckets_.back();
    if (std::isfinite(v)) {
      b.lo = b.finite ? std::min(b.lo, v) : v;
      b.hi = b.finite ? std::max(b.hi, v) : v;
      b.finite = true;
    }
    ++b.count;
    ++size_;
  }

  std::size_t size() const { return size_; }
  std::size_t bucket_width() const { return width_; }

  // The points to draw: one per step while buckets hold one step, else the minimum and the
  // maximum of each bucket; NaN where a bucket has no finite value (a gap in the line).
  void points(QVector<double>& keys, QVector<double>& values) const {
    keys.clear();
    values.clear();
    const double nan = std::numeric_limits<double>::quiet_NaN();
    for (const Bucket& b : buckets_) {
      const double x0 = static_cast<double>(b.first);
      if (width_ == 1) {
        keys.push_back(x0);
        values.push_back(b.finite ? b.lo : nan);
        continue;
      }
      const double x1 = x0 + static_cast<double>(b.count) - 1;
      keys.push_back(x0);
      values.push_back(b.finite ? b.lo : nan);
      keys.push_back(x1);
      values.push_back(b.finite ? b.hi : nan);
    }
  }

 private:
  struct Bucket {
    std::size_t first;
    std::size_t count;
    double lo = 0, hi = 0;
    bool finite = false;
  };
  void merge_pairs() {
    std::vector<Bucket> merged;
    merged.reserve(buckets_.size() / 2 + 1);
    for (std::size_t i = 0; i < buckets_.size(); i += 2) {
      Bucket b = buckets_[i];
      if (i + 1 < buckets_.size()) {
        const Bucket& c = buckets_[i + 1];
        if (c.finite) {
          b.lo = b.finite ? std::min(b.lo, c.lo) : c.lo;
          b.hi = b.finite ? std::max(b.hi, c.hi) : c.hi;
          b.finite = true;
        }
        b.count += c.count;
      }
      merged.push_back(b);
    }
    buckets_.swap(merged);
    width_ *= 2;
  }

  std::size_t max_;
  std::vector<Bucket> buckets_;
  std::size_t size_ = 0;
  std::size_t width_ = 1;
};

}  // namespace nanscope::gui
