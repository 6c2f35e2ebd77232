#include "io/h5.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <vector>

#include "core/errors.h"
#include "core/input_file.h"

namespace nanscope::h5 {
namespace {

template <class T>
hid_t native_type();
template <>
hid_t native_type<float>() {
  return H5T_NATIVE_FLOAT;
}
template <>
hid_t native_type<double>() {
  return H5T_NATIVE_DOUBLE;
}
template <>
hid_t native_type<std::int32_t>() {
  return H5T_NATIVE_INT32;
}
template <>
hid_t native_type<std::int64_t>() {
  return H5T_NATIVE_INT64;
}
template <>
hid_t native_type<std::uint8_t>() {
  return H5T_NATIVE_UINT8;
}

}  // namespace

Handle& Handle::operator=(Handle&& o) noexcept {
  if (this != &o) {
    close();
    id_ = o.id_;
    closer_ = o.closer_;
    o.id_ = -1;
  }
  return *this;
}

Handle::~Handle() {
  close();
}

bool Handle::close() {
  if (id_ < 0) return true;
  const herr_t r = closer_(id_);
  id_ = -1;
  return r >= 0;
}

std::string hdf5_version() {
  unsigned major = 0, minor = 0, release = 0;
  H5get_libversion(&major, &minor, &release);
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(release);
}

std::string hdf5_reason() {
  // The innermost error of HDF5's stack for this thread says what went wrong (errno would be
  // whatever the last system call left there).
  std::string reason;
  H5Ewalk2(
      H5E_DEFAULT, H5E_WALK_UPWARD,
      [](unsigned n, const H5E_error2_t* e, void* out) -> herr_t {
        if (n == 0 && e && e->desc) *static_cast<std::string*>(out) = e->desc;
        return 0;
      },
      &reason);
  return reason;
}

void check(herr_t status, const std::string& where, const std::string& what, Op op) {
  if (status >= 0) return;
  const std::string reason = hdf5_reason();
  const std::string message =
      fmt::format("{}: {} failed{}", where, what, reason.empty() ? "" : " (" + reason + ")");
  if (op == Op::Read) throw DataError(message);
  throw IoError(message);
}

void check_id(hid_t id, const std::string& where, const std::string& what, Op op) {
  check(id < 0 ? -1 : 0, where, what, op);
}

void quiet_errors() {
  thread_local const bool quiet = H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr) >= 0;
  (void)quiet;
}

AtomicFile::AtomicFile(const std::string& path, std::size_t size_hint)
    : path_(path), tmp_(path + ".tmp") {
  quiet_errors();
  Handle fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
  const std::size_t increment = std::max<std::size_t>(1 << 20, size_hint + (1 << 20));
  check(H5Pset_fapl_core(fapl, increment, /*backing_store=*/0), path_,
        "setting up the in-memory file");
  hid_t f = H5Fcreate(tmp_.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
  check_id(f, path_, "creating the file");
  file_ = Handle(f, H5Fclose);
}

AtomicFile::~AtomicFile() {
  if (!committed_) file_.close();
}

void AtomicFile::commit() {
  check(H5Fflush(file_.id(), H5F_SCOPE_GLOBAL), path_, "finishing the file");
  const ssize_t size = H5Fget_file_image(file_.id(), nullptr, 0);
  check(size < 0 ? -1 : 0, path_, "sizing the file image");
  const std::size_t bytes = static_cast<std::size_t>(size);
  std::unique_ptr<char[]> image(new char[bytes]);  // no zero-fill: the image overwrites it all
  check(H5Fget_file_image(file_.id(), image.get(), bytes) < 0 ? -1 : 0, path_,
        "copying the file image");
  file_.close();

  errno = 0;
  std::FILE* out = std::fopen(tmp_.c_str(), "wb");
  bool ok = out != nullptr;
  if (ok) ok = std::fwrite(image.get(), 1, bytes, out) == bytes;
  if (ok) ok = std::fflush(out) == 0;
  const int err = errno;
  if (out && std::fclose(out) != 0) ok = false;
  if (!ok) {
    std::remove(tmp_.c_str());
    throw IoError(fmt::format("{}: writing failed ({}); nothing was written under this name", path_,
                              std::strerror(err ? err : EIO)));
  }
  std::error_code ec;
  std::filesystem::rename(tmp_, path_, ec);
  if (ec) {
    std::remove(tmp_.c_str());
    throw IoError(fmt::format("{}: renaming {} into place failed ({})", path_, tmp_, ec.message()));
  }
  committed_ = true;
}

Handle open_read(const std::string& path) {
  quiet_errors();
  check_input_file(path, "HDF5 file", std::uintmax_t{1} << 40);
  if (H5Fis_hdf5(path.c_str()) <= 0)
    throw DataError(fmt::format("{}: not an HDF5 file (empty, truncated or another format)", path));
  hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f < 0) throw DataError(fmt::format("{}: cannot be opened as HDF5 (truncated?)", path));
  return Handle(f, H5Fclose);
}

Handle create_group(hid_t loc, const std::string& name, const std::string& where) {
  hid_t g = H5Gcreate2(loc, name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  check_id(g, where, "creating group " + name);
  return Handle(g, H5Gclose);
}

Handle open_group(hid_t loc, const std::string& name, const std::string& where) {
  if (!exists(loc, name)) throw DataError(fmt::format("{}: missing group {}", where, name));
  hid_t g = H5Gopen2(loc, name.c_str(), H5P_DEFAULT);
  check_id(g, where, "opening group " + name, Op::Read);
  return Handle(g, H5Gclose);
}

bool exists(hid_t loc, const std::string& name) {
  // Checks each path component, as H5Lexists requires.
  std::size_t pos = 0;
  while (true) {
    pos = name.find('/', pos + 1);
    const std::string part = name.substr(0, pos);
    if (H5Lexists(loc, part.c_str(), H5P_DEFAULT) <= 0) return false;
    if (pos == std::string::npos) return true;
  }
}

template <class T>
void write_dataset(hid_t loc, const std::string& name, const T* data,
                   const std::vector<std::uint64_t>& dims, const std::string& where) {
  std::vector<hsize_t> d(dims.begin(), dims.end());
  Handle space(H5Screate_simple(static_cast<int>(d.size()), d.data(), nullptr), H5Sclose);
  check_id(space.id(), where, "creating a dataspace for " + name);
  Handle dset(
      H5Dcreate2(loc, name.c_str(), native_type<T>(), space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
      H5Dclose);
  check_id(dset.id(), where, "creating dataset " + name);
  hsize_t n = 1;
  for (auto x : d) n *= x;
  if (n > 0)
    check(H5Dwrite(dset, native_type<T>(), H5S_ALL, H5S_ALL, H5P_DEFAULT, data), where,
          "writing " + name);
  if (!dset.close()) check(-1, where, "closing " + name);
}

std::vector<std::uint64_t> dataset_dims(hid_t loc, const std::string& name,
                                        const std::string& where) {
  if (!exists(loc, name)) throw DataError(fmt::format("{}: missing dataset {}", where, name));
  if (H5Oexists_by_name(loc, name.c_str(), H5P_DEFAULT) <= 0)
    throw DataError(fmt::format("{}: {} is a dangling or looping link", where, name));
  H5O_info_t info{};
  check(H5Oget_info_by_name2(loc, name.c_str(), &info, H5O_INFO_BASIC, H5P_DEFAULT), where,
        "looking at " + name, Op::Read);
  if (info.type != H5O_TYPE_DATASET)
    throw DataError(fmt::format("{}: {} is not a dataset", where, name));
  Handle dset(H5Dopen2(loc, name.c_str(), H5P_DEFAULT), H5Dclose);
  check_id(dset.id(), where, "opening " + name, Op::Read);
  Handle space(H5Dget_space(dset), H5Sclose);
  check_id(space.id(), where, "reading the shape of " + name, Op::Read);
  const int rank = H5Sget_simple_extent_ndims(space);
  if (rank < 0 || rank > 8)
    throw DataError(fmt::format("{}: {} has an unreadable shape", where, name));
  std::vector<hsize_t> d(static_cast<std::size_t>(rank));
  H5Sget_simple_extent_dims(space, d.data(), nullptr);
  return std::vector<std::uint64_t>(d.begin(), d.end());
}

namespace {
// The size of the file that holds loc: the bound on what its metadata may claim.
std::uint64_t file_size_of(hid_t loc) {
  hsize_t bytes = 0;
  Handle file(H5Iget_file_id(loc), H5Fclose);
  if (file.id() >= 0) H5Fget_filesize(file, &bytes);
  return bytes;
}
}  // namespace

std::size_t checked_count(hid_t loc, const std::string& name,
                          const std::vector<std::uint64_t>& dims, std::size_t elem_bytes,
                          const std::string& where) {
  // The elements a dataspace claims, refused before any allocation when they overflow or cannot
  // come from this file: even compressed (gzip of a constant buffer), a file does not hold more
  // than ~1000 times its own size.
  std::uint64_t n = 1;
  for (auto x : dims) {
    if (x != 0 && n > std::numeric_limits<std::uint64_t>::max() / x)
      throw DataError(fmt::format("{}: {} claims more elements than can be counted", where, name));
    n *= x;
  }
  const std::uint64_t file_bytes = file_size_of(loc);
  const std::uint64_t bound =
      1024 * static_cast<std::uint64_t>(file_bytes) + (std::uint64_t{1} << 20);
  if (n > bound / elem_bytes)
    throw DataError(
        fmt::format("{}: {} claims {} elements ({} bytes), more than a file of {} bytes can hold",
                    where, name, n, n * elem_bytes, file_bytes));
  return static_cast<std::size_t>(n);
}

template <class T>
std::vector<T> read_dataset(hid_t loc, const std::string& name, std::vector<std::uint64_t>* dims,
                            const std::string& where) {
  auto d = dataset_dims(loc, name, where);
  const std::size_t n = checked_count(loc, name, d, sizeof(T), where);
  std::vector<T> out(n);
  Handle dset(H5Dopen2(loc, name.c_str(), H5P_DEFAULT), H5Dclose);
  check_id(dset.id(), where, "opening " + name, Op::Read);
  if (n > 0) {
    herr_t r = H5Dread(dset, native_type<T>(), H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data());
    if (r < 0)
      throw DataError(
          fmt::format("{}: cannot read dataset {} (truncated or wrong type)", where, name));
  }
  if (dims) *dims = d;
  return out;
}

#define NANSCOPE_H5_INSTANTIATE(T)                                                                \
  template void write_dataset<T>(hid_t, const std::string&, const T*,                             \
                                 const std::vector<std::uint64_t>&, const std::string&);          \
  template std::vector<T> read_dataset<T>(hid_t, const std::string&, std::vector<std::uint64_t>*, \
                                          const std::string&);
NANSCOPE_H5_INSTANTIATE(float)
NANSCOPE_H5_INSTANTIATE(double)
NANSCOPE_H5_INSTANTIATE(std::int32_t)
NANSCOPE_H5_INSTANTIATE(std::int64_t)
NANSCOPE_H5_INSTANTIATE(std::uint8_t)
#undef NANSCOPE_H5_INSTANTIATE

void check_schema(hid_t file, const std::string& path, const std::string& kind,
                  const std::vector<std::string>& required, std::int64_t known) {
  bool ok = has_attr(file, "schema_version");
  for (const auto& r : required) ok = ok && exists(file, r);
  if (!ok)
    throw DataError(fmt::format("{}: not a nanscope {} (no schema_version, /{})", path, kind,
                                fmt::join(required, " or /")));
  const auto version = read_attr_int(file, "schema_version", path);
  if (version > known)
    throw DataError(
        fmt::format("{}: written by a newer nanscope (schema_version {} > {}); "
                    "upgrade nanscope to read it",
                    path, version, known));
}

Handle string_type(std::size_t fixed_length) {
  hid_t t = H5Tcopy(H5T_C_S1);
  H5Tset_size(t, fixed_length ? fixed_length : H5T_VARIABLE);
  H5Tset_cset(t, H5T_CSET_UTF8);
  H5Tset_strpad(t, H5T_STR_NULLTERM);
  return Handle(t, H5Tclose);
}

namespace {
void write_scalar_attr(hid_t loc, const std::string& name, hid_t type, const void* v,
                       const std::string& where) {
  Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  Handle attr(H5Acreate2(loc, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  check_id(attr.id(), where, "creating attribute " + name);
  check(H5Awrite(attr, type, v), where, "writing attribute " + name);
}

// An attribute nanscope reads as one value. H5Aread writes every element the attribute's
// dataspace holds, so one of a hostile file's attributes with more than one would overrun the
// single value it is read into: refused before reading.
Handle open_attr(hid_t loc, const std::string& name, const std::string& where) {
  if (H5Aexists(loc, name.c_str()) <= 0)
    throw DataError(fmt::format("{}: missing attribute {}", where, name));
  Handle a(H5Aopen(loc, name.c_str(), H5P_DEFAULT), H5Aclose);
  check_id(a.id(), where, "opening attribute " + name, Op::Read);
  Handle space(H5Aget_space(a), H5Sclose);
  check_id(space.id(), where, "reading the shape of attribute " + name, Op::Read);
  if (H5Sget_simple_extent_npoints(space) != 1)
    throw DataError(fmt::format("{}: attribute {} is not a single value", where, name));
  return a;
}
}  // namespace

void write_attr_strings(hid_t loc, const std::string& object, const std::string& name,
                        const std::vector<std::string>& values, const std::string& where) {
  const hsize_t n = values.size();
  Handle space(H5Screate_simple(1, &n, nullptr), H5Sclose);
  const Handle type = string_type();
  Handle attr(H5Acreate_by_name(loc, object.c_str(), name.c_str(), type, space, H5P_DEFAULT,
                                H5P_DEFAULT, H5P_DEFAULT),
              H5Aclose);
  check_id(attr.id(), where, "creating attribute " + object + "/" + name);
  std::vector<const char*> c;
  for (const auto& v : values) c.push_back(v.c_str());
  check(H5Awrite(attr, type, c.data()), where, "writing attribute " + object + "/" + name);
}

void write_attr(hid_t loc, const std::string& name, std::int64_t v, const std::string& where) {
  write_scalar_attr(loc, name, H5T_NATIVE_INT64, &v, where);
}
void write_attr(hid_t loc, const std::string& name, double v, const std::string& where) {
  write_scalar_attr(loc, name, H5T_NATIVE_DOUBLE, &v, where);
}
void write_attr(hid_t loc, const std::string& name, const std::string& v,
                const std::string& where) {
  Handle type = string_type();
  const char* p = v.c_str();
  write_scalar_attr(loc, name, type, &p, where);
}

bool has_attr(hid_t loc, const std::string& name) {
  return H5Aexists(loc, name.c_str()) > 0;
}

std::int64_t read_attr_int(hid_t loc, const std::string& name, const std::string& where) {
  Handle a = open_attr(loc, name, where);
  std::int64_t v = 0;
  if (H5Aread(a, H5T_NATIVE_INT64, &v) < 0)
    throw DataError(fmt::format("{}: attribute {} is not an integer", where, name));
  return v;
}

double read_attr_double(hid_t loc, const std::string& name, const std::string& where) {
  Handle a = open_attr(loc, name, where);
  double v = 0;
  if (H5Aread(a, H5T_NATIVE_DOUBLE, &v) < 0)
    throw DataError(fmt::format("{}: attribute {} is not a number", where, name));
  return v;
}

std::string read_attr_string(hid_t loc, const std::string& name, const std::string& where) {
  Handle a = open_attr(loc, name, where);
  Handle ftype(H5Aget_type(a), H5Tclose);
  if (H5Tget_class(ftype) != H5T_STRING)
    throw DataError(fmt::format("{}: attribute {} is not a string", where, name));
  if (H5Tis_variable_str(ftype) > 0) {
    Handle t = string_type();
    char* p = nullptr;
    if (H5Aread(a, t, &p) < 0)
      throw DataError(fmt::format("{}: cannot read attribute {}", where, name));
    std::string s = p ? p : "";
    H5free_memory(p);
    return s;
  }
  // A fixed-length string's bytes are stored whole in the file: a size beyond it is hostile.
  const std::size_t n = H5Tget_size(ftype);
  if (n == 0 || n > file_size_of(loc))
    throw DataError(fmt::format("{}: attribute {} claims a string of {} bytes", where, name, n));
  std::string s(n, '\0');
  Handle t = string_type(n);
  if (H5Aread(a, t, s.data()) < 0)
    throw DataError(fmt::format("{}: cannot read attribute {}", where, name));
  s.resize(std::strlen(s.c_str()));
  return s;
}

}  // namespace nanscope::h5
