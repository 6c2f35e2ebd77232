// The workbench's time travel (engine thread): the buffer of any cell of the slot x step grid,
// recomputed from the latest checkpoint at or before it (session/materialize.h) — the live
// session's ring, or an offline run file's /checkpoints. The recomputing session is kept between
// requests (a CUDA backend and its graph are built once); a request is cancelled between steps as
// soon as a newer one is asked for.
#pragma once

#include <QString>
#include <QVariantMap>
#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "io/run_file.h"
#include "models/snapshot.h"
#include "session/materialize.h"
#include "session/step_compare.h"

namespace nanscope::gui {

struct TravelRequest {
  int slot = -1, fold = 0, step = 0;
  QString run_file;  // empty: the live session
  int generation = 0;
};

class TimeTravel {
 public:
  // The newest request asked for (thread-safe): an older one still running stops between steps.
  void supersede(int generation) { newest_.store(generation); }
  // The cell's buffer recomputed, or a None answer saying why not (throws nanscope::Error for a
  // file or device failure). `live` is the live session when the request is for it.
  BufferStats travel(const TravelRequest& r, Session* live, const BackendFactory& make_backend,
                     const std::function<void(int done, int total)>& progress);
  // Step compare's element-wise part: one slot's buffers at two steps of a fold, recomputed,
  // compared (session/step_compare.h); "ok" false with "text" saying why not.
  QVariantMap compare(int slot, int fold, int step_a, int step_b, const QString& run_file,
                      Session* live, const BackendFactory& make_backend);
  // Drops the recomputing session and the states it kept (a new live run, another backend).
  void reset();

 private:
  struct Start {
    Checkpoint from;
    Config config;
    std::string run_backend;
    bool graph = false;
  };
  std::variant<Start, QString> start_for(int fold, int step, const QString& run_file,
                                         Session* live);
  Materializer& materializer(const Config& config, const std::string& backend, bool graph,
                             const BackendFactory& make_backend);
  // The states recomputations passed through near their cells (Materializer's `keep`), for the
  // run and model they were computed for (near_key_): a neighbouring cell (Shift+F10, F10) starts
  // from the nearest one, one step away. At most kNearBytes of them (a state of the default
  // model is a few MB), the farthest from the newest request dropped first.
  static constexpr std::size_t kNearBytes = std::size_t{256} << 20;
  void keepNear(Checkpoint&& c, int fold, int step);
  const Checkpoint* nearest(int fold, int step, const Checkpoint& from) const;
  std::vector<Checkpoint> near_;
  std::string near_key_;
  std::atomic<int> newest_{0};
  std::unique_ptr<Materializer> materializer_;
  std::string materializer_key_;
  QString file_;  // the run file whose checkpoint positions are cached
  RunFileData file_data_;
};

}  // namespace nanscope::gui
