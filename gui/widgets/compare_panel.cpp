#include "widgets/compare_panel.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QVBoxLayout>

namespace nanscope::gui {

ComparePanel::ComparePanel(QWidget* parent) : QWidget(parent) {
  model_ = new StepCompareModel(this);
  auto* lay = new QVBoxLayout(this);
  auto* row = new QHBoxLayout;
  a_ = new QSpinBox;
  b_ = new QSpinBox;
  a_->setObjectName("compareStepA");
  b_->setObjectName("compareStepB");
  for (QSpinBox* s : {a_, b_}) {
    s->setKeyboardTracking(false);
    s->setRange(0, 0);
  }
  default_ = new QPushButton("Last clean / first bad");
  default_->setToolTip(
      "compare the fold's last clean step with its first bad one (without a fire: the step "
      "before the first watch trip and the trip)");
  row->addWidget(new QLabel("step A"));
  row->addWidget(a_);
  row->addWidget(new QLabel("step B"));
  row->addWidget(b_);
  row->addWidget(default_);
  compare_buffers_ = new QPushButton("Compare the selected slot's buffers");
  compare_buffers_->setObjectName("compareBuffers");
  compare_buffers_->setToolTip(
      "the selected slot's buffers at steps A and B, recomputed from checkpoints, element by "
      "element: how many elements differ, the largest absolute and relative change and where");
  row->addWidget(compare_buffers_);
  row->addStretch(1);
  lay->addLayout(row);
  headline_ = new QLabel("step compare: -");
  headline_->setWordWrap(true);
  headline_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  lay->addWidget(headline_);
  buffers_ = new QLabel;
  buffers_->setObjectName("bufferCompare");
  buffers_->setWordWrap(true);
  buffers_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  buffers_->hide();
  lay->addWidget(buffers_);
  table_ = new QTableView;
  table_->setObjectName("compareTable");
  table_->setModel(model_);
  table_->verticalHeader()->setVisible(false);
  // Rows one line of text high: the dock shows a dozen of them, not two or three.
  table_->verticalHeader()->setDefaultSectionSize(table_->fontMetrics().height() + 6);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  lay->addWidget(table_, 1);
  auto picked = [this] {
    if (!showing_) Q_EMIT stepsPicked(a_->value(), b_->value());
  };
  connect(a_, &QSpinBox::valueChanged, this, picked);
  connect(b_, &QSpinBox::valueChanged, this, picked);
  connect(default_, &QPushButton::clicked, this, &ComparePanel::defaultPicked);
  connect(compare_buffers_, &QPushButton::clicked, this, &ComparePanel::buffersAsked);
  connect(table_, &QTableView::clicked, this, [this](const QModelIndex& i) {
    if (const auto& c = model_->comparison())
      Q_EMIT slotPicked(i.data(StepCompareModel::SlotRole).toInt(), c->step_b);
  });
}

void ComparePanel::showBuffers(const QString& text) {
  buffers_->setText(text);
  buffers_->setVisible(!text.isEmpty());
}

void ComparePanel::show(std::optional<StepComparison> c, int steps, const QString& how,
                        const QString& why, bool marks_jumps) {
  showing_ = true;
  a_->setRange(0, std::max(0, steps - 1));
  b_->setRange(0, std::max(0, steps - 1));
  if (c) {
    a_->setValue(c->step_a);
    b_->setValue(c->step_b);
  }
  showing_ = false;
  if (!c) {
    headline_->setText("step compare: " + why);
  } else if (!marks_jumps) {
    headline_->setText(QString("fold %1: step %2 vs step %3 (%4): the growths over the fold, no "
                               "jumps marked%5")
                           .arg(c->fold)
                           .arg(c->step_a)
                           .arg(c->step_b)
                           .arg(how)
                           .arg(c->rows.empty() ? "; no slot health at these steps" : ""));
  } else {
    int jumped = 0;
    for (const SlotChange& r : c->rows) jumped += r.jumped;
    headline_->setText(
        QString("fold %1: step %2 vs step %3 (%4); %5 slot(s) jumped (|max| x%6 or more, or newly "
                "non-finite)%7")
            .arg(c->fold)
            .arg(c->step_a)
            .arg(c->step_b)
            .arg(how)
            .arg(jumped)
            .arg(kJumpFactor)
            .arg(c->rows.empty() ? "; no slot health at these steps (sentinel.health off, or a "
                                   "file of schema_version 1)"
                                 : ""));
  }
  model_->setComparison(std::move(c));
}

}  // namespace nanscope::gui
