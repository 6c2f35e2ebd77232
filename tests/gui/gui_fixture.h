// What the workbench's Qt tests share: a small run's settings, a 3-fold run file with a fire in
// each fold, waits for the window, and helpers that read what the grids show.
#pragma once

#include <QAbstractItemModelTester>
#include <QApplication>
#include <QJsonArray>
#include <QJsonDocument>
#include <QMessageBox>
#include <QProcess>
#include <QPushButton>
#include <QSignalSpy>
#include <QStatusBar>
#include <QTableView>
#include <QTemporaryDir>
#include <QtTest>

#include "core/config_io.h"
#include "io/run_file.h"
#include "plots/grid_plot.h"
#include "plots/metrics_plot.h"
#include "session/session.h"
#include "unit/delegating_backend.h"
#include "widgets/inspector_widget.h"
#include "widgets/main_window.h"

namespace nanscope::gui_test {

using namespace nanscope;
using namespace nanscope::gui;

const QStringList kSmall = {"data.bars=600",      "model.batch=16",       "model.hidden=16",
                            "model.bottleneck=8", "model.iqn_n=4",        "model.iqn_n_target=4",
                            "model.iqn_k=4",      "model.iqn_cos=8",      "model.aux_hidden=8",
                            "run.folds=2",        "run.steps_per_fold=20"};

inline std::vector<int> grid_codes(SlotGridModel* m) {
  std::vector<int> out;
  for (int r = 0; r < m->rowCount(); ++r)
    for (int c = 0; c < m->columnCount(); ++c)
      out.push_back(m->index(r, c).data(SlotGridModel::CodeRole).toInt());
  return out;
}

inline int step_code(MainWindow& w, int slot, int column) {
  return w.stepGrid()->index(row_of_slot(slot), column).data(SlotGridModel::CodeRole).toInt();
}

// A backend that fails like a CUDA device at a given global step.
class FailingDevice final : public test::DelegatingBackend {
 public:
  FailingDevice(const Config& c, std::int64_t at)
      : DelegatingBackend(make_cpu_backend(c)), at_(at) {}
  BackendKind kind() const override { return BackendKind::Cuda; }
  void run_phase(Phase phase, const StepKey& key) override {
    if (key.global_step == at_)
      throw DeviceError("CUDA error: an illegal memory access was encountered (test)");
    inner_->run_phase(phase, key);
  }

 private:
  std::int64_t at_;
};

inline QMessageBox* error_box(MainWindow& w) {
  for (auto* b : w.findChildren<QMessageBox*>("errorBox"))
    if (b->isVisible()) return b;
  return nullptr;
}

inline QPushButton* button(QMessageBox* box, const QString& text) {
  for (auto* b : box->buttons())
    if (b->text() == text) return qobject_cast<QPushButton*>(b);
  return nullptr;
}

// The pixel centre of a grid cell (column, slot's row) in plot coordinates.
inline QPoint cell_pixel(GridPlot* p, int column, int slot) {
  return QPoint(static_cast<int>(p->xAxis->coordToPixel(column)),
                static_cast<int>(p->yAxis->coordToPixel(row_of_slot(slot))));
}

// The fixture's state and helpers; each test class derives from QObject and from this.
class GuiFixture {
 protected:
  QTemporaryDir dir_;
  QString three_fold_run_;  // a run file with a fire in each of its 3 folds

  EngineSettings settings(const QString& scenario, QStringList extra = {}) {
    EngineSettings s;
    s.scenario = scenario;
    s.sets = kSmall + extra;
    s.out_root = dir_.path();
    return s;
  }
  static void waitReady(MainWindow& w) {
    QTRY_VERIFY_WITH_TIMEOUT(w.snapshot() != nullptr && w.hasLiveSession(), 10000);
  }
  static void waitOffline(MainWindow& w, const QString& source) {
    QTRY_VERIFY_WITH_TIMEOUT(
        w.offline() && w.snapshot() && w.snapshot()->source.endsWith(QFileInfo(source).fileName()),
        10000);
  }

  // A run of `c` on the CPU backend with `injections`, recorded in the case's directory `name`:
  // its run file.
  QString recordRun(const QString& name, const Config& c,
                    const std::vector<std::string>& injections = {}) {
    SessionOptions o;
    for (const auto& f : injections) o.injections.push_back(parse_injection(f));
    o.out_dir = dir_.filePath(name).toStdString();
    Session s(c, make_cpu_backend(c), o);
    s.run();
    return QString::fromStdString(s.run_file_path());
  }

  // The CLI's run, in process: 3 folds, a fire in each (fold 0 at step 5, 1 at 3, 2 at 7).
  QString makeThreeFoldRun(const QString& name) {
    ConfigBuilder b;
    for (const auto& s : kSmall) b.set(s.toStdString());
    b.set("run.folds=3");
    b.set("run.steps_per_fold=12");
    b.set("halt.on_fire=never");
    b.set("guard.enabled=true");  // each fire stays in its step: the weights stay finite
    return recordRun(
        name, b.build(),
        {"slot:bn_d_concat@0:5:neginf", "slot:aux_pred_nb@1:3", "slot:c51_loss@2:7:posinf"});
  }

  // The tests' window layout and recent files, apart from the user's; the 3-fold run file.
  void setUpCase() {
    QCoreApplication::setOrganizationName("nanscope-tests");
    QSettings().clear();
    three_fold_run_ = makeThreeFoldRun("three");
  }
};

}  // namespace nanscope::gui_test
