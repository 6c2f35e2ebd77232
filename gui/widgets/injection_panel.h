// Fault injection panel: builds an --inject spec (TARGET@FOLD:STEP[:KIND[:ELEMENT]]) from the
// user's choices and hands it to the engine.
#pragma once

#include <QComboBox>
#include <QLineEdit>
#include <QSpinBox>
#include <QWidget>

namespace nanscope::gui {

class InjectionPanel : public QWidget {
  Q_OBJECT
 public:
  explicit InjectionPanel(QWidget* parent = nullptr);
  QString spec() const;

 Q_SIGNALS:
  void injectRequested(const QString& spec);

 private:
  QComboBox *target_, *kind_;
  QSpinBox *fold_, *step_;
  QLineEdit* element_;
};

}  // namespace nanscope::gui
