// The run file's /checkpoints (docs/files.md, "Checkpoints"): the states time travel starts from,
// one row each, so that an offline file can be travelled. A state is read one row at a time (a
// hyperslab), never the whole table.
#include <fmt/format.h>

#include "core/errors.h"
#include "io/h5.h"
#include "io/run_file.h"

namespace nanscope::run_checkpoints {

namespace {

constexpr const char* kStateArrays[] = {"params", "target", "adam_m", "adam_v"};

std::vector<double>& state_array(StateSnapshot& s, int k) {
  switch (k) {
    case 0:
      return s.params;
    case 1:
      return s.target;
    case 2:
      return s.adam_m;
    default:
      return s.adam_v;
  }
}

const std::vector<double>& state_array(const StateSnapshot& s, int k) {
  return state_array(const_cast<StateSnapshot&>(s), k);
}

template <class T>
void write_rows(hid_t g, const char* name, const std::vector<Checkpoint>& cps, int k,
                std::size_t width, const std::string& path) {
  std::vector<T> rows;
  rows.reserve(cps.size() * width);
  for (const Checkpoint& c : cps) {
    const std::vector<double>& a = state_array(c.state, k);
    if (a.size() != width)
      throw InternalError(fmt::format("checkpoint at fold {} step {}: {} has {} values, not {}",
                                      c.fold, c.step, name, a.size(), width));
    rows.insert(rows.end(), a.begin(), a.end());
  }
  h5::write_dataset(g, name, rows.data(), {cps.size(), width}, path);
}

}  // namespace

void write(hid_t f, const RunFileData& r, const std::string& path) {
  if (r.checkpoints.empty()) return;
  const std::size_t n = r.checkpoints.size(), width = r.checkpoints.front().state.params.size();
  h5::Handle g = h5::create_group(f, "checkpoints", path);
  std::vector<std::int32_t> fold, step;
  std::vector<std::int64_t> global, adam_t;
  for (const Checkpoint& c : r.checkpoints) {
    fold.push_back(c.fold);
    step.push_back(c.step);
    global.push_back(c.global_step);
    adam_t.push_back(c.state.adam_t);
  }
  h5::write_dataset(g, "fold", fold.data(), {n}, path);
  h5::write_dataset(g, "step", step.data(), {n}, path);
  h5::write_dataset(g, "global_step", global.data(), {n}, path);
  h5::write_dataset(g, "adam_t", adam_t.data(), {n}, path);
  for (int k = 0; k < 4; ++k) {
    if (r.checkpoints_f64)
      write_rows<double>(g, kStateArrays[k], r.checkpoints, k, width, path);
    else
      write_rows<float>(g, kStateArrays[k], r.checkpoints, k, width, path);
  }
}

void read_positions(hid_t f, const std::string& path, RunFileData& r) {
  if (!h5::exists(f, "checkpoints")) return;
  auto fold = h5::read_dataset<std::int32_t>(f, "checkpoints/fold", nullptr, path);
  auto step = h5::read_dataset<std::int32_t>(f, "checkpoints/step", nullptr, path);
  auto global = h5::read_dataset<std::int64_t>(f, "checkpoints/global_step", nullptr, path);
  if (step.size() != fold.size() || global.size() != fold.size())
    throw DataError(fmt::format("{}: the /checkpoints datasets disagree in size", path));
  for (std::size_t i = 0; i < fold.size(); ++i) {
    // The state before a step the file's /steps hold (a checkpoint is taken as its step begins).
    const auto g = static_cast<std::size_t>(global[i]);
    const bool inside = fold[i] >= 0 && static_cast<std::size_t>(fold[i]) < r.folds.size() &&
                        step[i] >= 0 && global[i] >= 0 && g < r.steps.size() &&
                        r.steps[g].fold == fold[i] && r.steps[g].step == step[i];
    if (!inside)
      throw DataError(fmt::format(
          "{}: /checkpoints row {}: fold {} step {} global step {} is not a step of this run", path,
          i, fold[i], step[i], global[i]));
    r.checkpoints.push_back(Checkpoint{fold[i], step[i], global[i], {}});
  }
}

}  // namespace nanscope::run_checkpoints

namespace nanscope {

Checkpoint read_run_checkpoint(const std::string& path, std::size_t row) {
  h5::Handle file = h5::open_read(path);
  const hid_t f = file.id();
  if (!h5::exists(f, "checkpoints"))
    throw DataError(fmt::format("{}: the run file holds no checkpoints (/checkpoints)", path));
  auto fold = h5::read_dataset<std::int32_t>(f, "checkpoints/fold", nullptr, path);
  auto step = h5::read_dataset<std::int32_t>(f, "checkpoints/step", nullptr, path);
  auto global = h5::read_dataset<std::int64_t>(f, "checkpoints/global_step", nullptr, path);
  auto adam_t = h5::read_dataset<std::int64_t>(f, "checkpoints/adam_t", nullptr, path);
  const std::size_t n = fold.size();
  if (step.size() != n || global.size() != n || adam_t.size() != n)
    throw DataError(fmt::format("{}: the /checkpoints datasets disagree in size", path));
  if (row >= n)
    throw DataError(fmt::format("{}: /checkpoints has {} rows, not row {}", path, n, row));
  Checkpoint c{fold[row], step[row], global[row], {}};
  c.state.adam_t = adam_t[row];
  std::uint64_t width = 0;
  for (int k = 0; k < 4; ++k) {
    const std::string name = std::string("checkpoints/") + run_checkpoints::kStateArrays[k];
    const std::vector<std::uint64_t> dims = h5::dataset_dims(f, name, path);
    if (dims.size() != 2 || dims[0] != n || (k > 0 && dims[1] != width))
      throw DataError(fmt::format("{}: /{} must be [{}, {}]", path, name, n, width));
    width = dims[1];
    h5::checked_count(f, name, dims, sizeof(float), path);  // what the file can hold, not more
    h5::Handle set(H5Dopen2(f, name.c_str(), H5P_DEFAULT), H5Dclose);
    h5::check_id(set, path, "/" + name, h5::Op::Read);
    h5::Handle space(H5Dget_space(set), H5Sclose);
    h5::check_id(space, path, "/" + name, h5::Op::Read);
    const hsize_t start[2] = {row, 0}, count[2] = {1, width};
    h5::check(H5Sselect_hyperslab(space, H5S_SELECT_SET, start, nullptr, count, nullptr), path,
              "/" + name, h5::Op::Read);
    h5::Handle memory(H5Screate_simple(2, count, nullptr), H5Sclose);
    std::vector<double>& out = run_checkpoints::state_array(c.state, k);
    out.resize(width);
    // Stored as float32 or float64; read as double either way (exact).
    h5::check(H5Dread(set, H5T_NATIVE_DOUBLE, memory, space, H5P_DEFAULT, out.data()), path,
              "/" + name, h5::Op::Read);
  }
  return c;
}

}  // namespace nanscope
