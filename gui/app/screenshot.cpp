// Screenshot mode (docs/gui.md): drive the window as a user would, then grab it and say what it
// shows. Docks and menus are found by object name.
#include "app/screenshot.h"

#include <QApplication>
#include <QDockWidget>
#include <QMenu>
#include <QMenuBar>
#include <QPainter>
#include <QTimer>
#include <cstdio>

#include "core/event_kind.h"
#include "core/slot_table.h"
#include "models/health_series.h"
#include "plots/grid_plot.h"
#include "plots/metrics_plot.h"
#include "style/colour_vision.h"
#include "widgets/inspector_widget.h"
#include "widgets/sweep_panel.h"

namespace nanscope::gui {

namespace {

// --screenshot-view: what the user would do before looking. A health series names a slot of the
// run shown, so it is looked up here, once the run is open: an unknown one ends the program with
// exit 2 as a malformed item does.
void prepare_view(MainWindow& w, const QString& what) {
  QStringList parts;
  for (const QString& part : what.split(',', Qt::SkipEmptyParts)) parts << part.trimmed();
  if (parts.contains("all-series"))
    for (int i = 0; i < MetricsPlot::kSeriesCount; ++i) w.metrics()->setSeriesVisible(i, true);
  if (parts.contains("zoom-entry") && w.snapshot() && w.snapshot()->entry) {
    w.UI_jumpToEntry();
    const int step = w.snapshot()->entry->step;
    w.stepPlot()->setColumnRange(step - 12, step + 12);
    Q_EMIT w.stepPlot()->columnRangeChangedByUser(step - 12.0, step + 12.0);  // the metrics follow
  }
  if (parts.contains("magnitude")) w.UI_showMagnitude(true);
  if (parts.contains("log")) w.metrics()->setLogScale(true);
  if (parts.contains("sweep-sorted")) w.sweepPanel()->sortByFirstFire();
  // health=SLOT:MEASURE adds a slot health series to the metrics; filter=TEXT filters the slots.
  for (const QString& part : parts) {
    if (part.startsWith("health=")) {
      QString error;
      if (const auto k = parse_health_series(part.mid(7), &error)) {
        w.metrics()->addHealthSeries(*k);
      } else {
        std::fprintf(stderr, "nanscope: --screenshot-view: %s\n", qPrintable(error));
        std::exit(2);
      }
    }
    if (part.startsWith("filter=")) w.UI_setSlotFilter(part.mid(7));
  }
  for (const auto& [part, dock] : {std::pair{"compare", "compareDock"}, {"events", "eventsDock"}})
    if (parts.contains(part))
      if (auto* d = w.findChild<QDockWidget*>(dock)) d->raise();
  if (parts.contains("help-menu"))
    if (auto* help = w.findChild<QMenu*>("helpMenu"))
      help->popup(w.mapToGlobal(w.menuBar()->actionGeometry(help->menuAction()).bottomLeft()));
}

// The window (with an open menu drawn where it pops up), as seen with the chosen colour vision.
void save_screenshot(MainWindow& w, const ScreenshotOptions& o) {
  QImage img = w.grab().toImage();
  for (QMenu* m : w.findChildren<QMenu*>())
    if (m->isVisible()) {
      QPainter p(&img);
      p.drawPixmap(w.mapFromGlobal(m->pos()), m->grab());
    }
  if (const auto vision = nanscope::parse_enum<ColourVision>(o.simulate.toStdString()))
    img = simulate(img, *vision);
  img.save(o.screenshot);
}

// Screenshot mode (docs/): drive the window as a user would, then grab it (and say what it shows).
}  // namespace

QString screenshot_view_error(const QString& what) {
  static const QStringList kItems = {"zoom-entry", "all-series", "magnitude", "compare",
                                     "events",     "help-menu",  "log",       "sweep-sorted"};
  for (const QString& raw : what.split(',', Qt::SkipEmptyParts)) {
    const QString part = raw.trimmed();
    QString error;
    if (part.startsWith("health=")) {
      // Its form and measure now; its slot once the run is open (prepare_view).
      if (const QString bad = health_series_form_error(part.mid(7)); !bad.isEmpty()) return bad;
    } else if (!part.startsWith("filter=") && !kItems.contains(part)) {
      return QString("unknown item '%1' (one of %2, health=SLOT:MEASURE, filter=TEXT)")
          .arg(part, kItems.join(", "));
    }
  }
  return {};
}

void screenshot_when_ready(MainWindow& w, const ScreenshotOptions& o) {
  auto* timer = new QTimer(&w);
  auto phase = std::make_shared<int>(0);
  // A file or config refused before anything could be shown: the window with its message, exit 78.
  QObject::connect(&w, &MainWindow::errorShown, &w, [&w, o] {
    if (w.snapshot()) return;
    QTimer::singleShot(300, &w, [&w, o] {
      if (!o.screenshot.isEmpty()) w.grab().save(o.screenshot);
      if (!o.state_json.isEmpty()) w.writeViewState(o.state_json);
      // nanscope-run's codes: 69 a device that cannot be used, 78 a bad config or file.
      QApplication::exit(w.lastErrorClass() == static_cast<int>(ErrorClass::Device) ? 69 : 78);
    });
  });
  QObject::connect(timer, &QTimer::timeout, &w, [&w, o, timer, phase] {
    auto snap = w.snapshot();
    // A dump given on the command line shows in the inspector alone: settle and grab.
    const auto stats = w.inspector()->stats();
    if (!snap && stats && stats->source == BufferStats::Source::Dump && *phase < 2) *phase = 2;
    if (w.sweepLoading()) return;  // a sweep directory: its tasks read first
    if (!snap && w.sweepPanel()->model()->status() && *phase < 2) *phase = 2;
    if (!snap && *phase < 2) return;
    const bool steps = o.after.startsWith("steps:");
    const int n = steps ? o.after.mid(6).toInt() : 0;
    if (*phase == 0) {
      if (!w.offline()) {
        if (steps)
          for (int i = 0; i < n; ++i) w.UI_step();
        else
          w.UI_run(EngineController::UntilFire);
      }
      *phase = 1;
      return;
    }
    if (*phase == 1) {
      if (!snap) return;
      const bool done = w.offline() || (steps ? snap->global_step >= n
                                              : (!w.running() && snap->entry.has_value()));
      if (!done) return;
      if (!w.offline() && snap->entry) {
        if (o.after != "inspect")
          w.UI_selectSlot(snap->entry->slot);  // the live buffer
        else                                   // the buffer as its check saw it, from the dump
          for (const auto& e : snap->events)
            if (e.kind == nanscope::EventKind::FirstFire && !e.dump.isEmpty()) {
              w.UI_openDump(e.dump, e.entry_slot);
              break;
            }
      }
      *phase = 2;
      return;
    }
    if (*phase == 2) {
      prepare_view(w, o.view);
      if (o.select) {
        // A cell the run does not have is a usage error, as go to step refuses it.
        const int folds = static_cast<int>(snap ? snap->folds.size() : 0);
        const auto [begin, end] =
            snap ? snap->fold_steps(o.select->fold) : std::pair<std::size_t, std::size_t>{0, 0};
        const int steps = static_cast<int>(end - begin);
        QString why;
        const auto slot = shown_table().find(o.select->slot.toStdString());
        if (!slot)
          why = QString("slot '%1' is not a slot of this run (a name, or an index 0-%2)")
                    .arg(o.select->slot)
                    .arg(shown_slot_count() - 1);
        else if (o.select->fold >= folds)
          why =
              QString("fold %1 is not in the run (folds 0-%2)").arg(o.select->fold).arg(folds - 1);
        else if (o.select->step >= steps)
          why = QString("fold %1 has steps 0-%2").arg(o.select->fold).arg(steps - 1);
        if (!why.isEmpty()) {
          std::fprintf(stderr, "nanscope: --screenshot-select %d:%d: %s\n", o.select->fold,
                       o.select->step, qPrintable(why));
          timer->stop();
          QApplication::exit(2);
          return;
        }
        w.UI_selectCell(*slot, o.select->fold, o.select->step);
      }
    }
    if (++*phase < 8) return;  // let the views settle (and a selected cell's dump load)
    if (w.inspectPending() && *phase < 400) return;  // a dump or a recomputation on its way
    if (!o.screenshot.isEmpty()) save_screenshot(w, o);
    if (!o.state_json.isEmpty()) w.writeViewState(o.state_json);
    timer->stop();
    QApplication::quit();
  });
  timer->start(150);
}

}  // namespace nanscope::gui
