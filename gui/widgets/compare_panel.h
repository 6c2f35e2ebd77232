// The step compare dock (docs/gui.md, "Step compare"): two steps of the selected fold, by default
// its last clean step and its first bad one, and every slot's health at both with the change, the
// what went non-finite or jumped first; the slots that jumped are bold on the grid's jump colour
// here and outlined in the grids at the later step. The window decides which steps; the panel shows
// them and says what the user picked.
#pragma once

#include <QLabel>
#include <QPushButton>
#include <QSpinBox>
#include <QTableView>
#include <QWidget>

#include "models/step_compare_model.h"

namespace nanscope::gui {

class ComparePanel : public QWidget {
  Q_OBJECT
 public:
  explicit ComparePanel(QWidget* parent = nullptr);
  StepCompareModel* model() const { return model_; }
  QTableView* table() const { return table_; }
  QString headline() const { return headline_->text(); }
  // Shows a comparison (nullopt: none possible, `why` says so); `steps` is the fold's step count
  // (the spin boxes' range), `how` says how the two steps were chosen.
  // `marks_jumps`: false for a summary of an uneventful fold (no row is marked jumped).
  void show(std::optional<StepComparison> c, int steps, const QString& how, const QString& why,
            bool marks_jumps = true);
  // The element-wise line: the selected slot's buffers at the two steps (time travel).
  void showBuffers(const QString& text);
  QString buffersText() const { return buffers_->text(); }

 Q_SIGNALS:
  void stepsPicked(int step_a, int step_b);  // the user set A or B
  void defaultPicked();                      // "Last clean / first bad"
  void slotPicked(int slot, int step);       // a row was clicked: the slot at the later step
  void buffersAsked();                       // "Compare the selected slot's buffers"

 private:
  StepCompareModel* model_;
  QTableView* table_;
  QSpinBox *a_, *b_;
  QPushButton* default_;
  QLabel* headline_;
  QPushButton* compare_buffers_;
  QLabel* buffers_;
  bool showing_ = false;  // the spin boxes are being set by show(), not by the user
};

}  // namespace nanscope::gui
