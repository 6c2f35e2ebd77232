#include "widgets/injection_panel.h"

#include <QFormLayout>
#include <QLabel>
#include <QPushButton>

#include "core/config.h"
#include "core/slot_table.h"
#include "model/param_layout.h"

namespace nanscope::gui {

InjectionPanel::InjectionPanel(QWidget* parent) : QWidget(parent) {
  auto* form = new QFormLayout(this);
  target_ = new QComboBox;
  for (const auto& s : shown_table())
    target_->addItem(
        QString("slot %1 %2 (transient)").arg(s.index).arg(QString::fromUtf8(s.name.data())),
        QString("slot:%1").arg(QString::fromUtf8(s.name.data())));
  ParamLayout layout(Dims::from(Config{}));
  for (const ParamEntry* e : layout.existing())
    target_->addItem(QString("param %1 (persistent)").arg(QString::fromStdString(e->name)),
                     QString("param:%1").arg(QString::fromStdString(e->name)));
  fold_ = new QSpinBox;
  fold_->setRange(0, 100000);
  step_ = new QSpinBox;
  step_->setRange(0, 1000000000);
  kind_ = new QComboBox;
  kind_->addItems({"nan", "posinf", "neginf"});
  element_ = new QLineEdit("0");
  element_->setToolTip("flat element index, or 'all'");
  auto* add = new QPushButton("Inject (restarts the run)");
  form->addRow("target", target_);
  form->addRow("fold", fold_);
  form->addRow("step", step_);
  form->addRow("kind", kind_);
  form->addRow("element", element_);
  form->addRow(add);
  auto* note = new QLabel(
      "A slot fault is written right after the buffer's producer, at that step only; "
      "a parameter fault at the start of the step, and it stays.");
  note->setWordWrap(true);
  form->addRow(note);
  connect(add, &QPushButton::clicked, this, [this] { Q_EMIT injectRequested(spec()); });
}

QString InjectionPanel::spec() const {
  return QString("%1@%2:%3:%4:%5")
      .arg(target_->currentData().toString())
      .arg(fold_->value())
      .arg(step_->value())
      .arg(kind_->currentText(), element_->text().trimmed());
}

}  // namespace nanscope::gui
