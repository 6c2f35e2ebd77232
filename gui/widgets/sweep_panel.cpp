#include "widgets/sweep_panel.h"

#include <QFileInfo>

#include <QHBoxLayout>
#include <QHeaderView>
#include <QPushButton>
#include <QRegularExpression>
#include <QVBoxLayout>

#include "core/slot_table.h"
#include "style/cell_palette.h"

namespace nanscope::gui {

SweepPanel::SweepPanel(QWidget* parent) : QWidget(parent) {
  model_ = new SweepModel(this);
  proxy_ = new QSortFilterProxyModel(this);
  proxy_->setSourceModel(model_);
  proxy_->setSortRole(SweepModel::SortRole);
  proxy_->setFilterKeyColumn(SweepModel::Variant);
  auto* lay = new QVBoxLayout(this);
  summary_ = new QLabel("no sweep open (File > Open sweep...)");
  summary_->setObjectName("sweepSummary");
  summary_->setWordWrap(true);
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  lay->addWidget(summary_);
  // The fold cells' colours (the slot grid's, with the states a task has).
  QString key;
  for (const auto& [code, text] :
       std::initializer_list<std::pair<int, const char*>>{{kCellClean, "clean"},
                                                          {kCellNaN, "NaN"},
                                                          {kCellPosInf, "+Inf"},
                                                          {kCellNegInf, "-Inf"},
                                                          {kCellMixed, "mixed"},
                                                          {kCellWarned, "warned"},
                                                          {kCellDeferred, "running"},
                                                          {kCellDisabled, "failed"},
                                                          {kCellNotRun, "not started"}})
    key += QString(
               "<span style='white-space:nowrap'><span style='background:%1; border:1px "
               "solid #555'>&nbsp;&nbsp;&nbsp;&nbsp;</span>&nbsp;%2</span>&nbsp;&nbsp; ")
               .arg(cell_color(code).name(), text);
  auto* legend = new QLabel(key +
                            "&nbsp;&nbsp;a fold's cell names its entry slot; double-click "
                            "it to open that run at that fold");
  legend->setObjectName("sweepLegend");
  legend->setWordWrap(true);
  lay->addWidget(legend);
  auto* row = new QHBoxLayout;
  variant_ = new QComboBox;
  variant_->setObjectName("sweepVariant");
  variant_->addItem("every variant");
  auto* sort = new QPushButton("Sort by first fire");
  sort->setObjectName("sweepSort");
  row->addWidget(new QLabel("variant"));
  row->addWidget(variant_);
  row->addWidget(sort);
  row->addStretch(1);
  lay->addLayout(row);
  table_ = new QTableView;
  table_->setObjectName("sweepTable");
  table_->setModel(proxy_);
  table_->setSortingEnabled(true);
  table_->horizontalHeader()->setSortIndicator(-1, Qt::AscendingOrder);  // the spec's order
  table_->verticalHeader()->setVisible(false);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table_->setSelectionBehavior(QAbstractItemView::SelectItems);
  lay->addWidget(table_, 1);
  table_->setMinimumHeight(table_->fontMetrics().height() * 16);  // a dozen tasks at a glance
  connect(variant_, &QComboBox::currentIndexChanged, this,
          [this](int i) { filterVariant(i <= 0 ? QString() : variant_->itemText(i)); });
  connect(sort, &QPushButton::clicked, this, &SweepPanel::sortByFirstFire);
  connect(table_, &QTableView::doubleClicked, this, [this](const QModelIndex& i) {
    const int fold = i.column() - SweepModel::FoldColumns;
    const QString file = i.data(SweepModel::RunFileRole).toString();
    if (!QFileInfo::exists(file)) {
      const QString task = i.siblingAtColumn(SweepModel::Task).data().toString();
      const QString state = i.siblingAtColumn(SweepModel::State).data().toString();
      Q_EMIT nothingToOpen(
          QString("task %1 (%2) has no run file yet: nothing to open (%3)").arg(task, state, file));
      return;
    }
    Q_EMIT runOpened(file, std::max(fold, 0));
  });
}

void SweepPanel::setStatus(SweepStatusPtr s) {
  const QString variant = variant_->currentIndex() > 0 ? variant_->currentText() : QString();
  model_->setStatus(s);
  variant_->blockSignals(true);
  variant_->clear();
  variant_->addItem("every variant");
  for (const SweepVariant& v : s->spec.variants) variant_->addItem(QString::fromStdString(v.name));
  variant_->setCurrentIndex(std::max(0, variant_->findText(variant)));
  variant_->blockSignals(false);
  QStringList top;
  for (const auto& [slot, n] : model_->firstFiringSlots())
    top << QString("%1 (%2)").arg(QString::fromUtf8(builtin_slot(slot).name.data())).arg(n);
  summary_->setText(
      QString("sweep %1: %2 tasks x %3 folds: %4 clean, %5 fired, %6 warned, %7 failed, %8 "
              "running%9. First to fire, most often: %10")
          .arg(QString::fromStdString(s->spec.name))
          .arg(s->tasks.size())
          .arg(s->folds)
          .arg(s->clean)
          .arg(s->fired)
          .arg(s->warned)
          .arg(s->failed)
          .arg(s->running)
          .arg(s->pending ? QString(", %1 pending").arg(s->pending) : QString())
          .arg(top.isEmpty() ? QString("none fired") : top.mid(0, 5).join(", ")));
}

void SweepPanel::filterVariant(const QString& variant) {
  proxy_->setFilterRegularExpression(
      variant.isEmpty() ? QRegularExpression()
                        : QRegularExpression("^" + QRegularExpression::escape(variant) + "$"));
  if (variant_->currentText() != variant && !variant.isEmpty())
    variant_->setCurrentIndex(std::max(0, variant_->findText(variant)));
}

void SweepPanel::sortByFirstFire() {
  table_->sortByColumn(SweepModel::FirstFire, Qt::AscendingOrder);
}

}  // namespace nanscope::gui
