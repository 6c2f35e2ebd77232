// What the user is looking at, in one object the window's views follow: the selected cell (slot,
// fold, step; -1 where none), whether the fold was picked by the user (then updates do not move
// it), and the two steps picked for step compare (nullopt: the fold's default pair). Every change
// emits `changed` once; the slot table and the grids mark the selection on it.
#pragma once

#include <QObject>
#include <optional>
#include <utility>

namespace nanscope::gui {

class ViewSelection : public QObject {
  Q_OBJECT
 public:
  using QObject::QObject;
  int slot() const { return slot_; }
  int fold() const { return fold_; }
  int step() const { return step_; }  // the step grid's selected column (-1: none)
  bool foldChosen() const { return fold_chosen_; }
  const std::optional<std::pair<int, int>>& comparePick() const { return pick_; }

  void setSlot(int slot) { set(slot_, slot); }
  void setStep(int step) { set(step_, step); }
  // The fold as updates move it (the selected step stays)...
  void setFold(int fold) { set(fold_, fold); }
  // ... and as the user switches to another: its own step and compare pair, none picked yet.
  void switchFold(int fold) {
    if (fold == fold_) return;
    fold_ = fold;
    step_ = -1;
    pick_.reset();
    Q_EMIT changed();
  }
  void setFoldChosen(bool chosen) { set(fold_chosen_, chosen); }
  void setComparePick(std::optional<std::pair<int, int>> pick) {
    if (pick == pick_) return;
    pick_ = pick;
    Q_EMIT changed();
  }

 Q_SIGNALS:
  void changed();

 private:
  template <class T>
  void set(T& field, T value) {
    if (field == value) return;
    field = value;
    Q_EMIT changed();
  }
  int slot_ = -1, fold_ = 0, step_ = -1;
  bool fold_chosen_ = false;
  std::optional<std::pair<int, int>> pick_;
};

}  // namespace nanscope::gui
