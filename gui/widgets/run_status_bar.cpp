#include "widgets/run_status_bar.h"

#include <QApplication>
#include <QDir>
#include <QFileInfo>
#include <QLabel>
#include <QProgressBar>
#include <QStatusBar>
#include <QStyle>
#include <QToolButton>
#include <climits>
#include <cmath>

#include "backend_choice.h"
#include "models/slot_label.h"

namespace nanscope::gui {

namespace {
QString plural(qint64 n, const char* one) {
  return QString("%1 %2%3").arg(n).arg(one).arg(n == 1 ? "" : "s");
}

// The watch trips of a run that did not fire: "; 2 watch trips (the first at fold 1, step 82)".
QString watch_trips_text(const Snapshot& s) {
  const SnapshotEvent* first = nullptr;
  qint64 trips = 0;
  for (const SnapshotEvent& e : s.events) {
    if (e.kind != EventKind::Watch) continue;
    ++trips;
    if (!first || std::make_pair(e.fold, e.step) < std::make_pair(first->fold, first->step))
      first = &e;
  }
  if (!first) return {};
  return QString("; %1 (the first at fold %2, step %3)")
      .arg(plural(trips, "watch trip"))
      .arg(first->fold)
      .arg(first->step);
}
}  // namespace

QString position_text(const Snapshot& s, const StatusMode& m) {
  if (m.offline)
    return m.have_view
               ? QString("offline: %1 (%2; %3, %4)")
                     .arg(s.source,
                          s.trainer.isEmpty() ? "scenario " + s.scenario : "trainer " + s.trainer,
                          plural(static_cast<qint64>(s.folds.size()), "fold"),
                          plural(static_cast<qint64>(s.steps.size()), "step"))
               : QString("offline: opening...");
  if (!m.have_live) return m.problem.isEmpty() ? QString("starting...") : m.problem;
  QString text =
      s.finished
          ? QString("%1: finished, %2 x %3; %4")
                .arg(s.scenario, plural(s.folds_total, "fold"), plural(s.steps_per_fold, "step"),
                     s.entry ? "fired (entry slot " + slot_label(s.entry->slot) + ")"
                             : QString("nothing fired") + watch_trips_text(s))
          : QString("%1: fold %2 (of %3), step %4 (of %5), next phase %6")
                .arg(s.scenario)
                .arg(s.fold)
                .arg(s.folds_total)
                .arg(s.step)
                .arg(s.steps_per_fold)
                .arg(s.next_phase);
  if (s.running)
    text += " — running";
  else if (s.halt)
    text += QString(" — stopped: %1 at fold %2, step %3")
                .arg(kind_text(s.halt->kind))
                .arg(s.halt->fold)
                .arg(s.halt->step);
  return text;
}

QString armed_text(const Snapshot& s) {
  QStringList parts;
  if (!s.injections.empty()) {
    QStringList specs;
    for (const auto& i : s.injections) specs << QString::fromStdString(i);
    parts << QString("injections: %1").arg(specs.join(", "));
  }
  if (!s.breakpoints.empty()) {
    QStringList b;
    for (int slot : s.breakpoints) b << QString::number(slot);
    parts << QString("breakpoints: %1").arg(b.join(", "));
  }
  return parts.join("   ");
}

RunStatusBar::RunStatusBar(QStatusBar* bar) : QObject(bar) {
  backend_ = new QLabel;
  position_ = new QLabel;
  rate_ = new QLabel;
  armed_ = new QLabel;
  armed_->setObjectName("armed");
  folder_ = new QLabel;
  folder_->setObjectName("outputFolder");
  folder_->setTextFormat(Qt::RichText);
  connect(folder_, &QLabel::linkActivated, this, &RunStatusBar::folderRequested);
  progress_ = new QProgressBar;
  progress_->setObjectName("progress");
  progress_->setFormat("%v / %m steps");
  progress_->setAlignment(Qt::AlignCenter);
  // Wide enough for its longest text on one line: the text never wraps or sits under the fill.
  progress_->setFixedWidth(progress_->fontMetrics().horizontalAdvance("99999999 / 99999999 steps") +
                           24);
  pause_ = new QToolButton;
  pause_->setIcon(QApplication::style()->standardIcon(QStyle::SP_MediaPause));
  pause_->setText("Pause");
  pause_->setToolTip("pause after the current step (Esc)");
  pause_->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
  connect(pause_, &QToolButton::clicked, this, &RunStatusBar::pauseRequested);
  bar->addWidget(backend_);
  bar->addWidget(position_, 1);
  bar->addPermanentWidget(armed_);
  bar->addPermanentWidget(folder_);
  bar->addPermanentWidget(progress_);
  bar->addPermanentWidget(rate_);
  bar->addPermanentWidget(pause_);
}

QString RunStatusBar::backendText() const {
  return backend_->text();
}

QString RunStatusBar::positionText() const {
  return position_->text();
}

void RunStatusBar::show(const Snapshot& s, const StatusMode& m) {
  // A live run on the CPU also says why it is not on CUDA (no plugin, no device); the tooltip has
  // the whole reason (the engine thread's backend choice has loaded the plugin and probed by then:
  // both are cached). A run file's backend is the one that wrote it: no CUDA probe for it.
  const bool says_why = m.have_view && !m.offline && s.backend_kind == BackendKind::Cpu;
  const QString cuda_why =
      says_why ? QString(" \u00b7 %1").arg(QString::fromStdString(cuda_summary())) : QString();
  backend_->setText(
      m.have_view
          ? QString("%1 [%2]%3%4").arg(s.backend, s.device, s.graph ? " graph" : "", cuda_why)
          : QString());
  backend_->setToolTip(says_why ? QString::fromStdString(cuda_description()) : QString());
  const QString position = position_text(s, m);
  position_->setText(position);
  position_->setToolTip(position);
  const bool live = !m.offline && m.have_live && m.have_view;
  const qint64 total = static_cast<qint64>(s.folds_total) * s.steps_per_fold;
  progress_->setVisible(live && total > 0);
  progress_->setRange(0, static_cast<int>(std::min<qint64>(total, INT_MAX)));
  progress_->setValue(static_cast<int>(std::min<qint64>(s.global_step, INT_MAX)));
  pause_->setVisible(live && m.running);
  QString rate;
  if (live && s.running && s.steps_per_second > 0) {
    const double left = static_cast<double>(total - s.global_step) / s.steps_per_second;
    rate = QString("%1 steps/s, about %2 left")
               .arg(s.steps_per_second, 0, 'f', 1)
               .arg(left >= 60 ? QString("%1 min %2 s")
                                     .arg(static_cast<int>(left) / 60)
                                     .arg(static_cast<int>(left) % 60)
                               : QString("%1 s").arg(static_cast<int>(std::ceil(left))));
  }
  rate_->setText(rate);
  const QString armed = armed_text(s);
  armed_->setText(armed.size() > 60 ? armed.left(59) + QChar(0x2026) : armed);
  armed_->setToolTip(armed);
  const QString dir =
      m.offline ? (m.have_view ? QFileInfo(s.source).absolutePath() : QString())
                : (s.run_file.isEmpty() ? QString() : QFileInfo(s.run_file).absolutePath());
  folder_->setText(
      dir.isEmpty()
          ? QString()
          : QString("%1 <a href=\"%2\">open folder</a>").arg(QDir::toNativeSeparators(dir), dir));
}

}  // namespace nanscope::gui
