#include "io/dump_file.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "core/errors.h"
#include "core/slot_table.h"
#include "io/h5.h"
#include "io/run_file_tables.h"
#include "model/batch_context.h"

namespace nanscope {
namespace {

// Whether a slot's dataset holds float64 values (an SDK trainer's float64 slot).
bool stored_as_float64(hid_t ds) {
  h5::Handle type(H5Dget_type(ds), H5Tclose);
  return type.id() >= 0 && H5Tget_class(type) == H5T_FLOAT && H5Tget_size(type) == 8;
}

template <class T>
void write_context_array(hid_t loc, const std::string& name, const std::vector<double>& v,
                         const std::vector<std::uint64_t>& shape, const std::string& where) {
  std::vector<T> tmp(v.begin(), v.end());
  h5::write_dataset(loc, name, tmp.data(), shape, where);
}

void write_array(hid_t loc, const NamedArray& a, bool f64, const std::string& where) {
  if (a.integer) {
    std::vector<std::int32_t> tmp(a.values.begin(), a.values.end());
    h5::write_dataset(loc, a.name, tmp.data(), a.shape, where);
  } else if (f64) {
    h5::write_dataset(loc, a.name, a.values.data(), a.shape, where);
  } else {
    write_context_array<float>(loc, a.name, a.values, a.shape, where);
  }
}

}  // namespace

std::string dump_file_name(const SlotTable& table, int fold, int step, int entry_slot) {
  std::string name = table.contains(entry_slot) ? table[entry_slot].name : "none";
  for (char& c : name)
    if (c == ':' || c == '#') c = '_';  // a module path's separators, plain in a file's name
  return fmt::format("fold{:03}_step{:08}_{}.h5", fold, step, name);
}

void write_dump(const std::string& path, const DumpData& d) {
  const SlotTable& table = *d.table;
  if (d.flags.size() != static_cast<std::size_t>(table.size()))
    throw std::logic_error(
        fmt::format("{}: flags of {} slots for a table of {}", path, d.flags.size(), table.size()));
  std::size_t hint = 0;
  for (const DumpSlot& s : d.slots) hint += s.values.size() * sizeof(float);
  const std::size_t width = d.context_f64 ? sizeof(double) : sizeof(float);
  hint += 4 * d.state.params.size() * width;
  for (const NamedArray& a : d.batch) hint += a.values.size() * width;
  h5::AtomicFile file(path, hint);
  const hid_t f = file.id();
  h5::write_attr(f, "schema_version", kSchemaVersion, path);
  h5::write_attr(f, "nanscope_version", d.nanscope_version, path);
  h5::write_attr(f, "fold", static_cast<std::int64_t>(d.fold), path);
  h5::write_attr(f, "step", static_cast<std::int64_t>(d.step), path);
  h5::write_attr(f, "global_step", d.global_step, path);
  h5::write_attr(f, "entry_slot", static_cast<std::int64_t>(d.entry_slot), path);
  h5::write_attr(f, "config", d.config_toml, path);
  h5::write_attr(f, "seed", static_cast<std::int64_t>(d.seed), path);
  h5::write_attr(f, "backend", d.backend, path);
  h5::write_attr(f, "run_file", d.run_file, path);
  if (!d.origin.empty()) {
    h5::write_attr(f, "origin", d.origin, path);
    h5::write_attr(f, "checkpoint_step", static_cast<std::int64_t>(d.checkpoint_step), path);
  }
  // Another trainer's dump carries its slot table: its slot names are its own.
  h5::write_attr(f, "trainer", table.trainer(), path);
  if (!table.is_builtin()) run_tables::write_slot_table(f, "trainer_slots", table, path);
  h5::write_attr(f, "context_dtype", std::string(d.context_f64 ? "float64" : "float32"), path);

  {
    h5::Handle slots = h5::create_group(f, "slots", path);
    for (const DumpSlot& s : d.slots) {
      const std::string& name = table.at(s.index).name;
      const bool f64 = !s.values64.empty();
      if (f64)
        h5::write_dataset(slots, name, s.values64.data(), s.shape, path);
      else
        h5::write_dataset(slots, name, s.values.data(), s.shape, path);
      h5::Handle ds(H5Dopen2(slots, name.c_str(), H5P_DEFAULT), H5Dclose);
      const std::string where = path + ":/slots/" + name;
      // Finite range over the finite values, in the slot's type; NaN when there is none.
      const Census c = f64 ? census(s.values64.data(), s.values64.size())
                           : census(s.values.data(), s.values.size());
      const double none = std::numeric_limits<double>::quiet_NaN();
      const double lo = c.finite ? c.finite_min : none, hi = c.finite ? c.finite_max : none;
      h5::write_attr(ds, "index", static_cast<std::int64_t>(s.index), where);
      h5::write_attr(ds, "flags", static_cast<std::int64_t>(s.scan.kinds), where);
      h5::write_attr(ds, "nan_count", c.nan, where);
      h5::write_attr(ds, "posinf_count", c.posinf, where);
      h5::write_attr(ds, "neginf_count", c.neginf, where);
      h5::write_attr(ds, "finite_min", lo, where);
      h5::write_attr(ds, "finite_max", hi, where);
      h5::write_attr(ds, "first_bad_index", s.scan.first_bad_index, where);
    }
  }
  {
    h5::Handle ctx = h5::create_group(f, "context", path);
    h5::Handle batch = h5::create_group(ctx, "batch", path);
    for (const NamedArray& a : d.batch)
      write_array(batch, a, d.context_f64, path + ":/context/batch");
    h5::Handle params = h5::create_group(ctx, "params", path);
    h5::Handle adam = h5::create_group(ctx, "adam", path);
    h5::write_attr(adam, "t", d.state.adam_t, path + ":/context/adam");
    h5::Handle m = h5::create_group(adam, "m", path);
    h5::Handle v = h5::create_group(adam, "v", path);
    std::size_t k = 0;
    for (std::size_t p = 0; p < d.param_names.size(); ++p) {
      std::size_t n = 1;
      for (auto s : d.param_shapes[p]) n *= static_cast<std::size_t>(s);
      auto slice = [&](const std::vector<double>& all) {
        return std::vector<double>(all.begin() + static_cast<std::ptrdiff_t>(k),
                                   all.begin() + static_cast<std::ptrdiff_t>(k + n));
      };
      const auto& name = d.param_names[p];
      const auto& shape = d.param_shapes[p];
      write_array(params, NamedArray{name, shape, slice(d.state.params), false}, d.context_f64,
                  path);
      write_array(params, NamedArray{"target." + name, shape, slice(d.state.target), false},
                  d.context_f64, path);
      write_array(m, NamedArray{name, shape, slice(d.state.adam_m), false}, d.context_f64, path);
      write_array(v, NamedArray{name, shape, slice(d.state.adam_v), false}, d.context_f64, path);
      k += n;
    }
  }
  h5::write_dataset(f, "flags", d.flags.data(), {static_cast<std::uint64_t>(table.size())}, path);
  file.commit();
}

DumpData read_dump(const std::string& path) {
  h5::Handle file = h5::open_read(path);
  const hid_t f = file.id();
  h5::check_schema(f, path, "dump", {"slots", "context"}, kSchemaVersion);
  DumpData d;
  d.path = path;
  d.fold = static_cast<int>(h5::read_attr_int(f, "fold", path));
  d.step = static_cast<int>(h5::read_attr_int(f, "step", path));
  d.global_step = h5::read_attr_int(f, "global_step", path);
  d.entry_slot = static_cast<int>(h5::read_attr_int(f, "entry_slot", path));
  d.config_toml = h5::read_attr_string(f, "config", path);
  d.seed = static_cast<std::uint64_t>(h5::read_attr_int(f, "seed", path));
  d.backend = h5::read_attr_string(f, "backend", path);
  const std::string trainer =
      h5::has_attr(f, "trainer") ? h5::read_attr_string(f, "trainer", path) : "nanscope";
  d.table = run_tables::read_slot_table(f, "trainer_slots", trainer, path);
  const SlotTable& table = *d.table;
  if (h5::has_attr(f, "run_file")) d.run_file = h5::read_attr_string(f, "run_file", path);
  if (h5::has_attr(f, "origin")) {
    d.origin = h5::read_attr_string(f, "origin", path);
    if (h5::has_attr(f, "checkpoint_step"))
      d.checkpoint_step = static_cast<int>(h5::read_attr_int(f, "checkpoint_step", path));
  }

  std::vector<std::uint64_t> dims;
  auto flags = h5::read_dataset<std::uint8_t>(f, "flags", &dims, path);
  const std::size_t width = static_cast<std::size_t>(table.size());
  // nanscope 0.1.0 wrote an SDK trainer's /flags 36 wide whatever its table: the rows past the
  // table are its padding.
  const bool padded_0_1_0 = !table.is_builtin() && width < 36 && flags.size() == 36;
  // A dump of nanscope's own written before its last slots were added (0.1.0's 36 on) holds the
  // flags of the slots it had: the later ones did not exist then (no fire).
  const bool older_builtin = table.is_builtin() && flags.size() >= 36 && flags.size() < width;
  if (dims.size() != 1 || (flags.size() != width && !padded_0_1_0 && !older_builtin))
    throw DataError(fmt::format("{}: /flags must hold {} values, one per slot", path, width));
  flags.resize(width);
  d.flags = std::move(flags);

  h5::Handle slots = h5::open_group(f, "slots", path);
  for (const auto& info : table) {
    const std::string& name = info.name;
    if (!h5::exists(slots, name)) continue;
    DumpSlot s;
    s.index = info.index;
    h5::Handle ds(H5Dopen2(slots, name.c_str(), H5P_DEFAULT), H5Dclose);
    if (stored_as_float64(ds)) {  // an SDK trainer's float64 slot: kept, and rounded for viewers
      s.values64 = h5::read_dataset<double>(slots, name, &s.shape, path + ":/slots");
      s.values.assign(s.values64.begin(), s.values64.end());
    } else {
      s.values = h5::read_dataset<float>(slots, name, &s.shape, path + ":/slots");
    }
    s.scan.kinds =
        static_cast<std::uint8_t>(h5::read_attr_int(ds, "flags", path + ":/slots/" + name));
    s.scan.first_bad_index = h5::read_attr_int(ds, "first_bad_index", path + ":/slots/" + name);
    d.slots.push_back(std::move(s));
  }
  h5::Handle ctx = h5::open_group(f, "context", path);
  h5::Handle batch = h5::open_group(ctx, "batch", path);
  for (const auto& [name, integer] : batch_field_names()) {
    if (!h5::exists(batch, name)) continue;
    NamedArray a;
    a.name = name;
    a.integer = integer;
    a.values = h5::read_dataset<double>(batch, name, &a.shape, path + ":/context/batch");
    d.batch.push_back(std::move(a));
  }
  h5::Handle params = h5::open_group(ctx, "params", path);
  h5::Handle adam = h5::open_group(ctx, "adam", path);
  d.state.adam_t = h5::read_attr_int(adam, "t", path + ":/context/adam");
  h5::Handle m = h5::open_group(adam, "m", path);
  h5::Handle v = h5::open_group(adam, "v", path);
  // Every online parameter present, in name order (replay maps them onto its layout by name). A
  // group that cannot say how many links it has, or claims more than a dump ever holds (two per
  // parameter), or a link whose name cannot be read, is refused at once: a corrupt count read
  // name by name would keep the reader busy for minutes.
  const std::string params_where = path + ":/context/params";
  H5G_info_t info{};
  h5::check(H5Gget_info(params, &info), params_where, "counting the parameters", h5::Op::Read);
  constexpr hsize_t kMaxParamLinks = 1024;
  if (info.nlinks > kMaxParamLinks)
    throw DataError(fmt::format("{}: holds {} links; a dump holds two per parameter (at most {})",
                                params_where, info.nlinks, kMaxParamLinks));
  std::vector<std::string> names;
  for (hsize_t i = 0; i < info.nlinks; ++i) {
    char buf[256];
    const ssize_t len = H5Lget_name_by_idx(params, ".", H5_INDEX_NAME, H5_ITER_INC, i, buf,
                                           sizeof buf, H5P_DEFAULT);
    if (len < 0 || static_cast<std::size_t>(len) >= sizeof buf)
      throw DataError(fmt::format("{}: the name of link {} cannot be read", params_where, i));
    std::string n = buf;
    if (n.rfind("target.", 0) != 0) names.push_back(n);
  }
  d.param_names = names;
  auto append = [&](hid_t g, const std::string& n, std::vector<double>& out,
                    const std::string& where) {
    std::vector<std::uint64_t> shape;
    auto vals = h5::read_dataset<double>(g, n, &shape, where);
    out.insert(out.end(), vals.begin(), vals.end());
    return shape;
  };
  for (const auto& n : names) {
    // The target copy and Adam's moments of a parameter have the parameter's shape: anything else
    // would shift every later parameter's state in a replay.
    const auto shape = append(params, n, d.state.params, path + ":/context/params");
    d.param_shapes.push_back(shape);
    const std::pair<hid_t, std::pair<std::string, std::vector<double>*>> others[] = {
        {params, {"target." + n, &d.state.target}},
        {m, {n, &d.state.adam_m}},
        {v, {n, &d.state.adam_v}}};
    const char* where[] = {":/context/params", ":/context/adam/m", ":/context/adam/v"};
    for (int k = 0; k < 3; ++k) {
      const auto& [g, what] = others[k];
      if (append(g, what.first, *what.second, path + where[k]) != shape)
        throw DataError(
            fmt::format("{}{}/{}: shape differs from the parameter's", path, where[k], what.first));
    }
  }
  // A recomputed step (time travel) may be clean: its entry_slot is then -1.
  const bool clean_recomputed = d.origin == "materialized" && d.entry_slot == -1;
  if (!clean_recomputed && !table.contains(d.entry_slot))
    throw DataError(fmt::format("{}: entry_slot {} is not a slot (0 to {})", path, d.entry_slot,
                                table.size() - 1));
  if (d.slots.empty()) throw DataError(fmt::format("{}: /slots holds no slot buffer", path));
  if (!clean_recomputed && std::none_of(d.slots.begin(), d.slots.end(),
                                        [&](const DumpSlot& x) { return x.index == d.entry_slot; }))
    throw DataError(fmt::format("{}: /slots has no buffer for its entry slot {} {}", path,
                                d.entry_slot, table[d.entry_slot].name));
  return d;
}

}  // namespace nanscope
