// A set of the slots of one table, as wide as the table (bit i: slot i). What a step checked, which
// slots a run has, where a NaN can travel: any number of slots, 64 to a word.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <vector>

namespace nanscope {

class SlotSet {
 public:
  SlotSet() = default;
  explicit SlotSet(int size) : size_(size), words_(static_cast<std::size_t>((size + 63) / 64)) {}
  SlotSet(int size, std::initializer_list<int> members) : SlotSet(size) {
    for (int s : members) set(s);
  }
  static SlotSet all(int size) {
    SlotSet s(size);
    for (int i = 0; i < size; ++i) s.set(i);
    return s;
  }

  int size() const { return size_; }
  // Outside the table: not a member (never an error, so a reader can ask about any index).
  bool test(int slot) const {
    return slot >= 0 && slot < size_ &&
           (words_[static_cast<std::size_t>(slot) / 64] >> (slot % 64) & 1);
  }
  void set(int slot, bool on = true) {
    if (slot < 0 || slot >= size_) return;
    std::uint64_t& w = words_[static_cast<std::size_t>(slot) / 64];
    const std::uint64_t bit = std::uint64_t{1} << (slot % 64);
    w = on ? (w | bit) : (w & ~bit);
  }
  bool any() const {
    for (std::uint64_t w : words_)
      if (w) return true;
    return false;
  }
  int count() const {
    int n = 0;
    for (std::uint64_t w : words_)
      n += __builtin_popcountll(w);  // C++17 too: nvcc compiles this header
    return n;
  }
  // The members in ascending order.
  std::vector<int> members() const {
    std::vector<int> out;
    for (std::size_t k = 0; k < words_.size(); ++k)
      for (std::uint64_t w = words_[k]; w; w &= w - 1)
        out.push_back(static_cast<int>(k * 64) + __builtin_ctzll(w));
    return out;
  }
  // Union and intersection with a set of the same table (a narrower one counts as zero-extended).
  SlotSet& operator|=(const SlotSet& o) {
    for (std::size_t k = 0; k < words_.size() && k < o.words_.size(); ++k) words_[k] |= o.words_[k];
    return *this;
  }
  SlotSet& operator&=(const SlotSet& o) {
    for (std::size_t k = 0; k < words_.size(); ++k)
      words_[k] &= k < o.words_.size() ? o.words_[k] : 0;
    return *this;
  }
  bool operator==(const SlotSet& o) const { return size_ == o.size_ && words_ == o.words_; }
  bool operator!=(const SlotSet& o) const { return !(*this == o); }
  // 64 slots to a word, slot 0 in bit 0 of word 0 (a step graph's key, a file's row).
  const std::vector<std::uint64_t>& words() const { return words_; }

 private:
  int size_ = 0;
  std::vector<std::uint64_t> words_;
};

}  // namespace nanscope
