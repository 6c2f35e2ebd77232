// A thin RAII layer over the HDF5 C API: move-only handles, typed dataset and attribute helpers,
// and errors that name the file and the object. HDF5's own error printing is switched off; every
// failing call becomes an IoError (or a DataError for a file that is not what it should be).
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <string>
#include <vector>

namespace nanscope::h5 {

// A handle closed by its own close function (H5Fclose, H5Gclose, ...).
class Handle {
 public:
  using Closer = herr_t (*)(hid_t);
  Handle() = default;
  Handle(hid_t id, Closer closer) : id_(id), closer_(closer) {}
  Handle(Handle&& o) noexcept : id_(o.id_), closer_(o.closer_) { o.id_ = -1; }
  Handle& operator=(Handle&& o) noexcept;
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle();
  hid_t id() const { return id_; }
  operator hid_t() const { return id_; }
  // Closes now and reports failure (a file's close flushes: this is where a full disk shows).
  bool close();

 private:
  hid_t id_ = -1;
  Closer closer_ = nullptr;
};

// A file built in memory (HDF5's core driver) and written out by commit(): one plain write to
// `path + ".tmp"`, then a rename into place. A failing write (full disk, file-size limit) is
// reported with the system's reason and leaves nothing under either name; HDF5 itself never sees
// a failing disk, which its 1.10 metadata cache does not survive gracefully.
class AtomicFile {
 public:
  // `size_hint`: the expected file size, so the in-memory image grows once, not step by step.
  explicit AtomicFile(const std::string& path, std::size_t size_hint = 0);
  ~AtomicFile();
  hid_t id() const { return file_.id(); }
  const std::string& path() const { return path_; }
  void commit();

 private:
  std::string path_, tmp_;
  Handle file_;
  bool committed_ = false;
};

// Opens an existing file read-only; throws MissingInputError or DataError ("not an HDF5 file").
Handle open_read(const std::string& path);

// The HDF5 library's version, "1.10.8".
std::string hdf5_version();

// What a call was doing when it failed: writing (IoError, exit 74) or reading a file (the file's
// data is at fault: DataError, exit 78).
enum class Op { Write, Read };
// Throws with HDF5's own reason when a call that returns a status gave a negative one...
void check(herr_t status, const std::string& where, const std::string& what, Op op = Op::Write);
// ... or a call that returns an identifier gave a negative one.
void check_id(hid_t id, const std::string& where, const std::string& what, Op op = Op::Write);
// HDF5 prints its error stack to stderr unless told not to, per thread: every entry point of this
// wrapper (open_read, AtomicFile, the dump reader) calls this first; nanscope reports errors
// itself.
void quiet_errors();
// The elements `dims` claim, refused (DataError) when they overflow or exceed what the file of
// `loc` can hold.
std::size_t checked_count(hid_t loc, const std::string& name,
                          const std::vector<std::uint64_t>& dims, std::size_t elem_bytes,
                          const std::string& where);

Handle create_group(hid_t loc, const std::string& name, const std::string& where);
Handle open_group(hid_t loc, const std::string& name, const std::string& where);
bool exists(hid_t loc, const std::string& name);

template <class T>
void write_dataset(hid_t loc, const std::string& name, const T* data,
                   const std::vector<std::uint64_t>& dims, const std::string& where);
template <class T>
std::vector<T> read_dataset(hid_t loc, const std::string& name, std::vector<std::uint64_t>* dims,
                            const std::string& where);
std::vector<std::uint64_t> dataset_dims(hid_t loc, const std::string& name,
                                        const std::string& where);

void write_attr(hid_t loc, const std::string& name, std::int64_t v, const std::string& where);
void write_attr(hid_t loc, const std::string& name, double v, const std::string& where);
void write_attr(hid_t loc, const std::string& name, const std::string& v, const std::string& where);
// A one-dimensional array of variable-length strings on `object` (h5py reads a list of str).
void write_attr_strings(hid_t loc, const std::string& object, const std::string& name,
                        const std::vector<std::string>& values, const std::string& where);
bool has_attr(hid_t loc, const std::string& name);
std::int64_t read_attr_int(hid_t loc, const std::string& name, const std::string& where);
double read_attr_double(hid_t loc, const std::string& name, const std::string& where);
std::string read_attr_string(hid_t loc, const std::string& name, const std::string& where);

// Refuses a file that lacks `required` objects or `schema_version` (not a nanscope `kind`), or
// whose schema_version is above `known`.
void check_schema(hid_t file, const std::string& path, const std::string& kind,
                  const std::vector<std::string>& required, std::int64_t known);

// Variable-length UTF-8 string type (attributes) and a fixed-length one (compound tables).
Handle string_type(std::size_t fixed_length = 0);

}  // namespace nanscope::h5
