// The C ABI (include/nanscope/nanscope.h): handles, statuses and the last error around
// sdk::Session. No exception and no bad handle crosses it: every call is wrapped, every handle is
// looked up in a table (closed ones are gone from it, ids are never reused) and every struct is
// read through its own struct_size.
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <string>

#include <fmt/format.h>
#include <hdf5.h>

#include "core/version.h"
#include "nanscope/nanscope.h"
#include "sdk_session.h"

namespace {

using nanscope::sdk::Error;
using nanscope::sdk::Session;

thread_local std::string last_error;

struct Entry {
  std::mutex calls;  // a session's calls one at a time, whichever threads make them
  std::unique_ptr<Session> session;
  std::filesystem::path run_dir;  // absolute: two open sessions never share one
};

std::mutex registry_mutex;
std::map<ns_session, std::shared_ptr<Entry>>& registry() {
  static std::map<ns_session, std::shared_ptr<Entry>> r;
  return r;
}
// Ids start far from small integers so that a 0, 1 or a pointer passed by mistake is refused.
ns_session next_id = 0x6e73000000000001ull;

ns_status fail(ns_status s, const std::string& what) {
  last_error = what;
  return s;
}

// Runs `body` with the errors turned into statuses.
template <class Body>
ns_status guarded(const char* call, Body&& body) {
  last_error.clear();
  try {
    body();
    return NS_OK;
  } catch (const Error& e) {
    return fail(e.status, e.what());
  } catch (const std::bad_alloc&) {
    return fail(NS_ERR_MEMORY, fmt::format("{}: out of memory", call));
  } catch (const std::exception& e) {
    return fail(NS_ERR_IO, fmt::format("{}: {}", call, e.what()));
  } catch (...) {
    return fail(NS_ERR_IO, fmt::format("{}: an unknown failure", call));
  }
}

std::shared_ptr<Entry> find(ns_session id, const char* call) {
  std::lock_guard lock(registry_mutex);
  auto it = registry().find(id);
  if (it == registry().end())
    throw Error(
        NS_ERR_HANDLE,
        fmt::format("{}: session {:#x} is not open (closed, never opened or made up)", call, id));
  return it->second;
}

// Runs `body(session)` on an open session, its calls serialised.
template <class Body>
ns_status on_session(ns_session id, const char* call, Body&& body) {
  return guarded(call, [&] {
    std::shared_ptr<Entry> e = find(id, call);
    std::lock_guard lock(e->calls);
    if (!e->session) throw Error(NS_ERR_HANDLE, fmt::format("{}: the session was closed", call));
    body(*e->session);
  });
}

// A struct the caller passed in, read through its struct_size: smaller than this ABI's is refused;
// larger is accepted when the part this library does not know is all zero.
template <class T>
T read_struct(const T* in, const char* what) {
  if (!in) throw Error(NS_ERR_ARGUMENT, fmt::format("{} is NULL", what));
  const std::uint32_t size = in->struct_size;
  if (size < sizeof(T))
    throw Error(NS_ERR_VERSION, fmt::format("{}.struct_size is {}, less than the {} bytes of ABI "
                                            "{} (set it to sizeof)",
                                            what, size, sizeof(T), NS_ABI_VERSION));
  if (size > 4096)
    throw Error(NS_ERR_VERSION, fmt::format("{}.struct_size {} is not a size", what, size));
  const auto* bytes = reinterpret_cast<const unsigned char*>(in);
  for (std::uint32_t i = sizeof(T); i < size; ++i)
    if (bytes[i] != 0)
      throw Error(NS_ERR_VERSION,
                  fmt::format("{} sets fields after byte {} that this library (ABI {}) does not "
                              "know",
                              what, sizeof(T), NS_ABI_VERSION));
  T out;
  std::memcpy(&out, in, sizeof(T));
  return out;
}

}  // namespace

extern "C" {

NS_API void ns_version(int* major, int* minor, int* patch) {
  if (major) *major = NS_VERSION_MAJOR;
  if (minor) *minor = NS_VERSION_MINOR;
  if (patch) *patch = NS_VERSION_PATCH;
}

NS_API int ns_abi_version(void) {
  return NS_ABI_VERSION;
}

NS_API const char* ns_last_error(void) {
  return last_error.c_str();
}

NS_API ns_status ns_session_open(const ns_session_options* options, ns_session* out) {
  return guarded("ns_session_open", [&] {
    if (!out) throw Error(NS_ERR_ARGUMENT, "ns_session_open: out is NULL");
    *out = 0;
    const ns_session_options o = read_struct(options, "ns_session_open: options");
    // Sessions are independent (each its own table, bank, writer and files): a process opens as
    // many as it likes, from any threads, as long as each writes its own run directory.
    // The directory as one spelling: absolute, normalised, without a trailing separator (which
    // weakly_canonical keeps for a directory that does not exist yet), symlinks resolved.
    std::error_code ec;
    std::filesystem::path dir =
        std::filesystem::absolute(o.run_dir ? o.run_dir : "", ec).lexically_normal();
    if (!dir.has_filename()) dir = dir.parent_path();
    dir = std::filesystem::weakly_canonical(dir, ec);
    std::lock_guard lock(registry_mutex);
    // Each session's writer thread calls libhdf5: side by side only when it is built thread-safe.
    hbool_t threadsafe = 0;
    if (!registry().empty() && (H5is_library_threadsafe(&threadsafe) < 0 || !threadsafe))
      throw Error(NS_ERR_UNSUPPORTED,
                  "ns_session_open: this libhdf5 is not built thread-safe, so a process runs one "
                  "session at a time (close the open one first)");
    for (const auto& [other, entry] : registry())
      if (!ec && o.run_dir && *o.run_dir && entry->run_dir == dir)
        throw Error(NS_ERR_STATE,
                    fmt::format("ns_session_open: session {:#x} is open on run_dir '{}'; each "
                                "session writes a run directory of its own",
                                other, dir.string()));
    auto e = std::make_shared<Entry>();
    e->session = std::make_unique<Session>(o);
    e->run_dir = dir;
    const ns_session id = next_id++;
    registry()[id] = std::move(e);
    *out = id;
  });
}

NS_API ns_status ns_session_close(ns_session session) {
  return guarded("ns_session_close", [&] {
    std::shared_ptr<Entry> e;
    {
      std::lock_guard lock(registry_mutex);
      auto it = registry().find(session);
      if (it == registry().end())
        throw Error(NS_ERR_HANDLE,
                    fmt::format("ns_session_close: session {:#x} is not open", session));
      e = it->second;
      registry().erase(it);
    }
    std::lock_guard lock(e->calls);
    std::unique_ptr<Session> s = std::move(e->session);
    s->close();  // its error (a write that failed) is the call's; the session is gone either way
  });
}

NS_API ns_status ns_slot_register(ns_session session, const ns_slot_desc* desc, int32_t* id) {
  return on_session(session, "ns_slot_register", [&](Session& s) {
    if (!id) throw Error(NS_ERR_ARGUMENT, "ns_slot_register: id is NULL");
    *id = -1;
    *id = s.register_slot(read_struct(desc, "ns_slot_register: desc"));
  });
}

NS_API ns_status ns_slot_set_address(ns_session session, int32_t slot, uint64_t address) {
  return on_session(session, "ns_slot_set_address",
                    [&](Session& s) { s.set_address(slot, address); });
}

NS_API ns_status ns_slot_undefer(ns_session session, int32_t slot) {
  return on_session(session, "ns_slot_undefer", [&](Session& s) { s.undefer(slot); });
}

NS_API ns_status ns_fold_begin(ns_session session, int32_t fold) {
  return on_session(session, "ns_fold_begin", [&](Session& s) { s.begin_fold(fold); });
}

NS_API ns_status ns_fold_end(ns_session session, int32_t fold) {
  return on_session(session, "ns_fold_end", [&](Session& s) { s.end_fold(fold); });
}

NS_API ns_status ns_step_begin(ns_session session, int32_t step, void* stream) {
  return on_session(session, "ns_step_begin", [&](Session& s) { s.begin_step(step, stream); });
}

NS_API ns_status ns_check(ns_session session, const int32_t* slots, int32_t count, void* stream) {
  return on_session(session, "ns_check", [&](Session& s) { s.check(slots, count, stream); });
}

namespace {

// Writes a step's result into the caller's struct, whose struct_size was checked by result_size.
std::uint32_t result_size(const ns_step_result* result, const char* call) {
  if (!result) return 0;
  const std::uint32_t size = result->struct_size;
  if (size < sizeof(ns_step_result) || size > 4096)
    throw Error(
        NS_ERR_VERSION,
        fmt::format("{}: result->struct_size is {}, not sizeof(ns_step_result) ({}) or more", call,
                    size, sizeof(ns_step_result)));
  return size;
}

void put_result(ns_step_result* result, std::uint32_t size, const ns_step_result& r) {
  if (!result) return;
  std::memset(static_cast<void*>(result), 0, size);
  std::memcpy(static_cast<void*>(result), &r, sizeof(r));
  result->struct_size = size;
}

}  // namespace

NS_API ns_status ns_step_end(ns_session session, ns_step_result* result) {
  return on_session(session, "ns_step_end", [&](Session& s) {
    const std::uint32_t size = result_size(result, "ns_step_end");
    put_result(result, size, s.end_step());
  });
}

NS_API ns_status ns_step_replayed(ns_session session, void* stream, ns_step_result* result) {
  return on_session(session, "ns_step_replayed", [&](Session& s) {
    const std::uint32_t size = result_size(result, "ns_step_replayed");
    put_result(result, size, s.step_replayed(stream));
  });
}

NS_API ns_status ns_guard_allows_update(ns_session session, int32_t* allowed) {
  return on_session(session, "ns_guard_allows_update", [&](Session& s) {
    if (!allowed) throw Error(NS_ERR_ARGUMENT, "ns_guard_allows_update: allowed is NULL");
    *allowed = s.allows_update() ? 1 : 0;
  });
}

NS_API ns_status ns_guard_word(ns_session session, uint64_t* address) {
  return on_session(session, "ns_guard_word", [&](Session& s) {
    if (!address) throw Error(NS_ERR_ARGUMENT, "ns_guard_word: address is NULL");
    *address = s.guard_word_address();
  });
}

}  // extern "C"
