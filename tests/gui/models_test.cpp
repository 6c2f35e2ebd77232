// The workbench's models on their own, without a window: each under QAbstractItemModelTester while
// a recorded run's picture grows step by step, folds change and comparisons are set and cleared,
// and what they give back checked against the run file.
#include <QAbstractItemModelTester>
#include <QtTest>

#include "core/config_io.h"
#include "gui/gui_test_registry.h"
#include "io/run_file.h"
#include "models/events_model.h"
#include "models/offline.h"
#include "models/slot_grid_model.h"
#include "models/slot_table_model.h"
#include "models/step_compare_model.h"
#include "session/injection.h"
#include "session/session.h"

using namespace nanscope;
using namespace nanscope::gui;

class ModelsTest : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  QString run_;  // 2 folds x 10 steps: h_s2 fires in fold 0 at step 4, aux_loss in fold 1 at 6

 private Q_SLOTS:
  void initTestCase() {
    ConfigBuilder b;
    for (const char* s : {"data.bars=600", "model.batch=16", "model.hidden=16",
                          "model.bottleneck=8", "model.iqn_n=4", "model.iqn_n_target=4",
                          "model.iqn_k=4", "model.iqn_cos=8", "model.aux_hidden=8", "run.folds=2",
                          "run.steps_per_fold=10", "halt.on_fire=never", "guard.enabled=true"})
      b.set(s);
    const Config c = b.build();
    SessionOptions o;
    o.injections = {parse_injection("slot:h_s2@0:4"), parse_injection("slot:aux_loss@1:6")};
    o.out_dir = dir_.filePath("run").toStdString();
    Session s(c, make_cpu_backend(c), o);
    s.run();
    run_ = QString::fromStdString(s.run_file_path());
  }

  // The picture grows one step at a time (as live updates do): every model stays consistent.
  void everyModelStaysConsistentAsThePictureGrows() {
    const UpdatePtr whole = load_run_update(run_);
    Snapshot view;
    SlotGridModel folds(SlotGridModel::Folds), steps(SlotGridModel::Steps);
    SlotTableModel table;
    EventsModel events;
    for (auto* m : std::initializer_list<QAbstractItemModel*>{&folds, &steps, &table, &events})
      new QAbstractItemModelTester(m, QAbstractItemModelTester::FailureReportingMode::QtTest, m);
    folds.setView(&view);
    steps.setView(&view);
    table.setView(&view);
    events.setView(&view);
    // First the head alone, then the steps in pieces of 3, then the events and folds.
    SnapshotUpdate head = *whole;
    head.steps.clear();
    head.health.clear();
    head.events.clear();
    head.folds.clear();
    QVERIFY(apply_update(view, head));
    for (std::size_t at = 0; at < whole->steps.size(); at += 3) {
      SnapshotUpdate u;
      u.seq = head.seq + 1 + at;
      u.epoch = whole->epoch;
      u.head = whole->head;
      u.first_step = at;
      const std::size_t end = std::min(at + 3, whole->steps.size());
      u.steps.assign(whole->steps.begin() + static_cast<std::ptrdiff_t>(at),
                     whole->steps.begin() + static_cast<std::ptrdiff_t>(end));
      u.health.assign(whole->health.begin() + static_cast<std::ptrdiff_t>(at),
                      whole->health.begin() + static_cast<std::ptrdiff_t>(end));
      u.first_fold = 0;
      u.folds = whole->folds;
      u.first_event = view.events.size();
      if (end == whole->steps.size()) u.events = whole->events;
      QVERIFY(apply_update(view, u));
      folds.refresh(false);
      steps.refresh(false);
      table.refresh();
      events.refresh(false);
    }
    QCOMPARE(view.steps.size(), std::size_t{20});
    QCOMPARE(folds.columnCount(), 2);
    QCOMPARE(steps.columnCount(), 10);
    steps.setFold(1);
    table.setFold(1);
    QCOMPARE(steps.columnCount(), 10);
    const RunFileData file = read_run_file(run_.toStdString());
    QCOMPARE(events.rowCount(), static_cast<int>(file.events.size()));
    QCOMPARE(table.stateOf(kAuxLoss), QString("fired"));
    QCOMPARE(table.stateOf(kHS2), QString("clean"));
    table.setFold(0);
    QCOMPARE(table.stateOf(kHS2), QString("fired"));
    QCOMPARE(steps.index(row_of_slot(kAuxLoss), 6).data(SlotGridModel::CodeRole).toInt(),
             int(kCellNaN));
    // The count column says what it counts: the header and each cell's tooltip.
    QVERIFY(table.headerData(SlotTableModel::Count, Qt::Horizontal, Qt::ToolTipRole)
                .toString()
                .contains("non-finite at that first fire"));
    const QModelIndex count = table.index(row_of_slot(kHS2), SlotTableModel::Count);
    QCOMPARE(count.data().toLongLong(), file.folds[0].slots[kHS2].count);
    QCOMPARE(count.data(Qt::ToolTipRole).toString(),
             QString("%1 non-finite values in the buffer at its first fire (step 4 of fold 0)")
                 .arg(file.folds[0].slots[kHS2].count));
    QCOMPARE(
        table.index(row_of_slot(kBatch), SlotTableModel::Count).data(Qt::ToolTipRole).toString(),
        QString("no fire in this fold"));
  }

  // Step compare's model: rows in the comparison's order, set, replaced and cleared.
  void theStepCompareModelShowsTheComparison() {
    const UpdatePtr whole = load_run_update(run_);
    Snapshot view;
    QVERIFY(apply_update(view, *whole));
    StepCompareModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QCOMPARE(model.rowCount(), 0);
    const auto pair = default_compare_steps(view, 0);
    QVERIFY(pair);
    QCOMPARE(pair->steps, std::make_pair(3, 4));  // the last clean step and the fire
    auto c = compare_in_view(view, 0, pair->steps.first, pair->steps.second);
    QVERIFY(c);
    model.setComparison(c);
    QCOMPARE(model.rowCount(), static_cast<int>(c->rows.size()));
    QCOMPARE(model.columnCount(), int(StepCompareModel::kColumnCount));
    // The slots that went non-finite (h_s2 among them) lead the table, marked jumped.
    int h_s2_row = -1, last_new_nonfinite = -1;
    for (int r = 0; r < model.rowCount(); ++r) {
      const SlotChange& row = c->rows[static_cast<std::size_t>(r)];
      QCOMPARE(model.index(r, 0).data(StepCompareModel::SlotRole).toInt(), row.slot);
      QCOMPARE(model.index(r, 0).data(StepCompareModel::JumpedRole).toBool(), row.jumped);
      if (row.slot == kHS2) h_s2_row = r;
      if (row.went_nonfinite) {
        QCOMPARE(last_new_nonfinite, r - 1);  // contiguous from the top
        last_new_nonfinite = r;
      }
    }
    QVERIFY(h_s2_row >= 0 && h_s2_row <= last_new_nonfinite);
    // Those in dataflow order: the fold's entry point first. Their counts beside their names.
    QVERIFY(view.fold_entry(0));
    QCOMPARE(model.index(0, 0).data(StepCompareModel::SlotRole).toInt(), view.fold_entry(0)->slot);
    QVERIFY(
        model.headerData(1, Qt::Horizontal, Qt::DisplayRole).toString().startsWith("non-finite"));
    QVERIFY(
        model.headerData(2, Qt::Horizontal, Qt::DisplayRole).toString().startsWith("non-finite"));
    QVERIFY(model.index(h_s2_row, 0).data(StepCompareModel::JumpedRole).toBool());
    const std::vector<int> jumped = model.jumpedSlots();
    QVERIFY(std::find(jumped.begin(), jumped.end(), kHS2) != jumped.end());
    model.setComparison(compare_in_view(view, 1, 0, 9));
    QCOMPARE(model.comparison()->fold, 1);
    model.setComparison(std::nullopt);
    QCOMPARE(model.rowCount(), 0);
    QVERIFY(!compare_in_view(view, 0, 0, 10));  // a step the fold does not have
  }
};

NANSCOPE_GUI_TEST("models", ModelsTest);
#include "models_test.moc"
