// The sweep view in the real window (offscreen): a sweep run by nanscope-run's local scheduler
// opens as a task x fold table that agrees with each task's own --json summary on every task and
// fold; sorting by first fire, the variant filter, a double-click opening that run at its fold,
// and the refresh while a task runs.
#include <QDir>
#include <QDockWidget>
#include <QJsonArray>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QtTest>
#include <fstream>

#include <unistd.h>

#include "gui/gui_fixture.h"
#include "gui/gui_test_registry.h"
#include "sweep/sweep_status.h"
#include "widgets/sweep_panel.h"

using namespace nanscope;
using namespace nanscope::gui;
using namespace nanscope::gui_test;

class SweepViewTest : public QObject, public GuiFixture {
  Q_OBJECT

  QString sweep_;

  // Two variants that fire (fold 1 step 3; fold 0 step 5), one clean, two seeds each.
  QString makeSweep() {
    const QString spec = dir_.filePath("spec.toml");
    QStringList sets;
    for (const QString& s : kSmall) sets << "\"" + s + "\"";
    sets << "\"run.folds=3\""
         << "\"run.steps_per_fold=8\""
         << "\"halt.on_fire=never\"";
    std::ofstream(spec.toStdString())
        << "[sweep]\nname = \"view\"\nseeds = [1, 2]\nbackend = \"cpu\"\nset = ["
        << sets.join(", ").toStdString() << "]\n"
        << "[[variant]]\nname = \"late\"\ninject = [\"slot:h_s2@1:3\"]\n"
        << "[[variant]]\nname = \"early\"\ninject = [\"slot:aux_loss@0:5:posinf\"]\n"
        << "[[variant]]\nname = \"clean\"\n";
    const QString out = dir_.filePath("sweep");
    QProcess p;
    p.start(NANSCOPE_RUN_BINARY, {"sweep", spec, "--out", out, "--jobs", "2", "--quiet"});
    if (!p.waitForFinished(120000) || p.exitCode() != 0) return {};
    return out;
  }

  static QJsonObject sweepState(MainWindow& w) { return w.viewState()["sweep"].toObject(); }

  static QJsonObject summaryOf(const QString& sweep, const QString& task) {
    QFile f(sweep + "/tasks/" + task + "/summary.json");
    if (!f.open(QIODevice::ReadOnly)) return {};
    return QJsonDocument::fromJson(f.readAll()).object();
  }

 private Q_SLOTS:
  void initTestCase() {
    setUpCase();
    sweep_ = makeSweep();
    QVERIFY(!sweep_.isEmpty());
  }

  // A sweep shown in one window is not an empty Sweep dock in the next: the saved layout keeps the
  // dock's place, and the dock shows only with a sweep.
  void aLaterWindowHasNoEmptySweepDock() {
    QSettings().clear();
    {
      MainWindow w(settings("healthy"), sweep_);
      w.show();
      QTRY_VERIFY_WITH_TIMEOUT(!sweepState(w).isEmpty(), 10000);
      QVERIFY(w.findChild<QDockWidget*>("sweepDock")->isVisible());
      w.close();  // saves the layout, as quitting does
    }
    MainWindow later(settings("healthy"));
    later.show();
    waitReady(later);
    QVERIFY(!later.findChild<QDockWidget*>("sweepDock")->isVisible());
    QSettings().clear();
  }

  void theViewAgreesWithEachTasksSummary() {
    MainWindow w(settings("healthy"), sweep_);
    w.show();
    QTRY_VERIFY_WITH_TIMEOUT(!sweepState(w).isEmpty(), 10000);
    const QJsonObject s = sweepState(w);
    const QJsonArray tasks = s["tasks"].toArray();
    QCOMPARE(tasks.size(), 6);
    for (const QJsonValue& v : tasks) {
      const QJsonObject t = v.toObject();
      const QString name = t["name"].toString();
      const QJsonObject summary = summaryOf(sweep_, name);
      QVERIFY2(!summary.isEmpty(), qPrintable(name));
      QCOMPARE(t["state"].toString(), QString("done"));
      QCOMPARE(t["outcome"].toString(), summary["entry"].isNull() ? QString("clean") : "fired");
      const QJsonArray folds = t["folds"].toArray(), theirs = summary["folds"].toArray();
      QCOMPARE(folds.size(), theirs.size());
      for (int f = 0; f < folds.size(); ++f) {
        const QJsonObject mine = folds[f].toObject(),
                          entry = theirs[f].toObject()["entry"].toObject();
        if (entry.isEmpty()) {
          QCOMPARE(mine["state"].toString(), QString("clean"));
        } else {
          QCOMPARE(mine["state"].toString(), QString("fired"));
          QCOMPARE(mine["entry_slot"].toInt(), entry["slot"].toInt());
          QCOMPARE(mine["entry_step"].toInt(), entry["step"].toInt());
        }
      }
    }
    QVERIFY(s["summary"].toString().contains("2 clean, 4 fired, 0 warned, 0 failed, 0 running"));
    // The slots that fired first most often: h_s2 and aux_loss, two tasks each.
    const QJsonArray top = s["first_firing_slots"].toArray();
    QCOMPARE(top.size(), 2);
    QCOMPARE(top[0].toObject()["tasks"].toInt(), 2);

    // Sorted by first fire: the early variant (fold 0) first, then the late one, the clean last.
    w.findChild<QPushButton*>("sweepSort")->click();
    QJsonArray rows = sweepState(w)["rows"].toArray();
    QCOMPARE(rows.size(), 6);
    QVERIFY(rows[0].toString().startsWith("early-"));
    QVERIFY(rows[1].toString().startsWith("early-"));
    QVERIFY(rows[2].toString().startsWith("late-"));
    QVERIFY(rows[5].toString().startsWith("clean-"));
    // Filtered by variant.
    w.sweepPanel()->filterVariant("late");
    rows = sweepState(w)["rows"].toArray();
    QCOMPARE(rows.size(), 2);
    QVERIFY(rows[0].toString().startsWith("late-"));
    w.sweepPanel()->filterVariant({});
    QCOMPARE(sweepState(w)["rows"].toArray().size(), 6);

    // A double-click on a task's fold opens that run at that fold.
    QTableView* table = w.sweepPanel()->table();
    int row = 0;
    while (!table->model()->index(row, SweepModel::Task).data().toString().startsWith("late-"))
      ++row;
    const QString task = table->model()->index(row, SweepModel::Task).data().toString();
    Q_EMIT table->doubleClicked(table->model()->index(row, SweepModel::FoldColumns + 1));
    QTRY_VERIFY_WITH_TIMEOUT(w.offline() && w.snapshot() && w.snapshot()->source.contains(task),
                             10000);
    QTRY_COMPARE(w.selectedFold(), 1);
    QVERIFY2(w.windowTitle().startsWith("sweep task " + task + " (offline"),
             qPrintable(w.windowTitle()));

    // A task without a run file (not started) says so instead of opening nothing silently.
    const QString run = sweep_ + "/tasks/" + task + "/run";
    QVERIFY(QDir().rename(run, run + ".away"));
    Q_EMIT table->doubleClicked(table->model()->index(row, SweepModel::FoldColumns));
    const QString said = w.statusBar()->currentMessage();
    QVERIFY(QDir().rename(run + ".away", run));
    QVERIFY2(said.contains("task " + task) && said.contains("no run file yet"), qPrintable(said));
  }

  // Sorted by first fire: fired tasks by their first fire, then failed, warned, running, pending,
  // and the clean ones last.
  void sortingByFirstFirePutsTroubleFirst() {
    auto status = std::make_shared<SweepStatus>();
    status->folds = 1;
    const auto task = [](const char* name, TaskState state, TaskOutcome outcome,
                         std::optional<RunEntry> entry) {
      TaskStatus t;
      t.task.name = name;
      t.state = state;
      t.outcome = outcome;
      t.entry = entry;
      t.folds.resize(1);
      return t;
    };
    status->tasks = {task("clean", TaskState::Done, TaskOutcome::Clean, std::nullopt),
                     task("warned", TaskState::Done, TaskOutcome::Warned, std::nullopt),
                     task("late", TaskState::Done, TaskOutcome::Fired, RunEntry{2, 0, 9}),
                     task("pending", TaskState::Pending, TaskOutcome::None, std::nullopt),
                     task("early", TaskState::Done, TaskOutcome::Fired, RunEntry{2, 0, 3})};
    SweepModel model;
    model.setStatus(status);
    QSortFilterProxyModel sorted;
    sorted.setSourceModel(&model);
    sorted.setSortRole(SweepModel::SortRole);
    sorted.sort(SweepModel::FirstFire);
    QStringList order;
    for (int r = 0; r < sorted.rowCount(); ++r)
      order << sorted.index(r, SweepModel::Task).data().toString();
    QCOMPARE(order, (QStringList{"early", "late", "warned", "pending", "clean"}));
  }

  // A running task (its process alive, no status yet) shows as running, and the view follows it
  // to its end without being asked.
  void theViewRefreshesWhileATaskRuns() {
    const QString task = sweep_ + "/tasks/clean-seed2";
    QFile::rename(task + "/status", task + "/status.kept");
    write_task_started(task.toStdString(), static_cast<long>(getpid()));  // this process: alive
    MainWindow w(settings("healthy"), sweep_);
    w.show();
    QTRY_VERIFY_WITH_TIMEOUT(!sweepState(w).isEmpty(), 10000);
    auto state_of = [&] {
      for (const QJsonValue& v : sweepState(w)["tasks"].toArray())
        if (v.toObject()["name"] == "clean-seed2") return v.toObject()["state"].toString();
      return QString();
    };
    QCOMPARE(state_of(), QString("running"));
    QVERIFY(sweepState(w)["summary"].toString().contains("1 running"));
    QFile::rename(task + "/status.kept", task + "/status");
    QTRY_COMPARE_WITH_TIMEOUT(state_of(), QString("done"), 6000);
  }
};

NANSCOPE_GUI_TEST("sweep", SweepViewTest);
#include "sweep_test.moc"
