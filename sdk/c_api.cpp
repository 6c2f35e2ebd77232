// The C ABI (include/nanscope/nanscope.h): handles, statuses and the last error around
// sdk::Session. No exception and no bad handle crosses it: every call is wrapped, every handle is
// looked up in a table (closed ones are gone from it, ids are never reused) and every struct is
// read and written through its own struct_size (struct_io.h).
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
#include "struct_io.h"

namespace {

using nanscope::sdk::Error;
using nanscope::sdk::read_struct;
using nanscope::sdk::refuse_reserved;
using nanscope::sdk::result_size;
using nanscope::sdk::Session;
using nanscope::sdk::write_result;

thread_local std::string last_error;

struct Entry {
  std::mutex calls;  // a session's calls one at a time, whichever threads make them
  std::unique_ptr<Session> session;
  std::filesystem::path run_dir;  // absolute: two open sessions never share one
};

std::mutex registry_mutex;
std::map<std::uint64_t, std::shared_ptr<Entry>>& registry() {
  static std::map<std::uint64_t, std::shared_ptr<Entry>> r;
  return r;
}
// Ids start far from small integers so that a 0, 1 or a pointer passed by mistake is refused.
std::uint64_t next_id = 0x6e73000000000001ull;

ns_status fail(ns_status s, const std::string& what) {
  last_error = what;
  return s;
}

// Runs `body` with the errors turned into statuses: the SDK's own refusals keep theirs, an
// allocation that failed is NS_ERR_OUT_OF_MEMORY, and anything else that escapes the session is a
// defect of the library, NS_ERR_INTERNAL.
template <class Body>
ns_status guarded(const char* call, Body&& body) {
  last_error.clear();
  try {
    body();
    return NS_OK;
  } catch (const Error& e) {
    return fail(e.status, e.what());
  } catch (const std::bad_alloc&) {
    return fail(NS_ERR_OUT_OF_MEMORY, fmt::format("{}: out of memory", call));
  } catch (const std::exception& e) {
    return fail(NS_ERR_INTERNAL, fmt::format("{}: an internal error of libnanscope ({}); please "
                                             "report it",
                                             call, e.what()));
  } catch (...) {
    return fail(
        NS_ERR_INTERNAL,
        fmt::format("{}: an unknown internal error of libnanscope; please report it", call));
  }
}

std::shared_ptr<Entry> find(ns_session id, const char* call) {
  std::lock_guard lock(registry_mutex);
  auto it = registry().find(id.id);
  if (it == registry().end())
    throw Error(NS_ERR_HANDLE, fmt::format("{}: session {:#x} is not open (closed, never opened "
                                           "or made up)",
                                           call, id.id));
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

NS_API const char* ns_status_string(int32_t status) {
  switch (status) {
    case NS_OK:
      return "NS_OK: the call did what it was asked";
    case NS_ERR_ARGUMENT:
      return "NS_ERR_ARGUMENT: a null, out-of-range or inconsistent argument";
    case NS_ERR_HANDLE:
      return "NS_ERR_HANDLE: a session handle that is not open";
    case NS_ERR_STATE:
      return "NS_ERR_STATE: a call at the wrong time (or one a CUDA capture would break)";
    case NS_ERR_SLOT:
      return "NS_ERR_SLOT: a slot that is not registered, or in the wrong state";
    case NS_ERR_MEMORY:
      return "NS_ERR_MEMORY: a buffer that cannot be read where it was said to be";
    case NS_ERR_IO:
      return "NS_ERR_IO: a file or the run directory could not be written";
    case NS_ERR_UNSUPPORTED:
      return "NS_ERR_UNSUPPORTED: something this library does not do, or a limit passed";
    case NS_ERR_VERSION:
      return "NS_ERR_VERSION: a struct or ABI version this library does not take";
    case NS_ERR_DEVICE:
      return "NS_ERR_DEVICE: CUDA refused a call of the device path";
    case NS_ERR_OUT_OF_MEMORY:
      return "NS_ERR_OUT_OF_MEMORY: the library could not allocate what the call needs";
    case NS_ERR_INTERNAL:
      return "NS_ERR_INTERNAL: a defect of libnanscope (please report it)";
    default:
      break;
  }
  return "not an ns_status";
}

NS_API ns_status ns_session_open(const ns_session_options* options, ns_session* out) {
  return guarded("ns_session_open", [&] {
    if (!out) throw Error(NS_ERR_ARGUMENT, "ns_session_open: out is NULL");
    *out = ns_session{0};
    const ns_session_options o = read_struct(options, "ns_session_open: options");
    refuse_reserved(o.reserved0, "ns_session_open: options.reserved0");
    refuse_reserved(o.reserved1, "ns_session_open: options.reserved1");
    refuse_reserved(o.reserved2, "ns_session_open: options.reserved2");
    // Sessions are independent (each its own table, bank, writer and files): a process opens as
    // many as it likes, from any threads, as long as each writes its own run directory.
    // The directory as one spelling: absolute, normalised, without a trailing separator (which
    // weakly_canonical keeps for a directory that does not exist yet), symlinks resolved.
    std::error_code ec;
    std::filesystem::path dir =
        std::filesystem::absolute(o.run_dir ? o.run_dir : "", ec).lexically_normal();
    if (!dir.has_filename()) dir = dir.parent_path();
    dir = std::filesystem::weakly_canonical(dir, ec);
    // The directory is reserved under the registry's lock (an entry without a session yet), and
    // the session made outside it: opening one (its directory made, an earlier run removed) never
    // holds up the calls of the others.
    auto e = std::make_shared<Entry>();
    e->run_dir = dir;
    std::uint64_t id = 0;
    {
      std::lock_guard lock(registry_mutex);
      // Each session's writer thread calls libhdf5: side by side only when it is built
      // thread-safe.
      hbool_t threadsafe = 0;
      if (!registry().empty() && (H5is_library_threadsafe(&threadsafe) < 0 || !threadsafe))
        throw Error(NS_ERR_UNSUPPORTED,
                    "ns_session_open: this libhdf5 is not built thread-safe, so a process runs "
                    "one session at a time (close the open one first)");
      for (const auto& [other, entry] : registry())
        if (!ec && o.run_dir && *o.run_dir && entry->run_dir == dir)
          throw Error(NS_ERR_STATE,
                      fmt::format("ns_session_open: session {:#x} is open on run_dir '{}'; each "
                                  "session writes a run directory of its own",
                                  other, dir.string()));
      id = next_id++;
      registry()[id] = e;
    }
    try {
      std::lock_guard calls(e->calls);
      e->session = std::make_unique<Session>(o);
    } catch (...) {
      std::lock_guard lock(registry_mutex);
      registry().erase(id);
      throw;
    }
    *out = ns_session{id};
  });
}

NS_API ns_status ns_session_close(ns_session session) {
  return guarded("ns_session_close", [&] {
    std::shared_ptr<Entry> e = find(session, "ns_session_close");
    std::lock_guard lock(e->calls);
    if (!e->session) throw Error(NS_ERR_HANDLE, "ns_session_close: the session was closed");
    // Refused while the trainer captures the session's stream: closing waits for the stream, which
    // would invalidate the trainer's capture; the session stays open.
    e->session->refuse_close_during_capture();
    // The entry stays registered (its run directory taken) until the last file is written, so a
    // new session on the same directory cannot start while this one still writes there.
    std::unique_ptr<Session> s = std::move(e->session);
    const auto forget = [&] {
      std::lock_guard registry_lock(registry_mutex);
      registry().erase(session.id);
    };
    try {
      s->close();
    } catch (...) {
      forget();  // the session is gone either way; its error (a write that failed) is the call's
      throw;
    }
    forget();
  });
}

NS_API ns_status ns_slot_register(ns_session session, const ns_slot_desc* desc, int32_t* id) {
  return on_session(session, "ns_slot_register", [&](Session& s) {
    if (!id) throw Error(NS_ERR_ARGUMENT, "ns_slot_register: id is NULL");
    *id = -1;
    const ns_slot_desc d = read_struct(desc, "ns_slot_register: desc");
    refuse_reserved(d.reserved0, "ns_slot_register: desc.reserved0");
    refuse_reserved(d.reserved1, "ns_slot_register: desc.reserved1");
    refuse_reserved(d.reserved2, "ns_slot_register: desc.reserved2");
    *id = s.register_slot(d);
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

NS_API ns_status ns_check_at(ns_session session, const int32_t* slots, const uint64_t* addresses,
                             int32_t count, void* stream) {
  return on_session(session, "ns_check_at", [&](Session& s) {
    if (count > 0 && !addresses) throw Error(NS_ERR_ARGUMENT, "ns_check_at: addresses is NULL");
    s.check(slots, count, stream, addresses);
  });
}

NS_API ns_status ns_loss_scale(ns_session session, double scale, int32_t skipped) {
  return on_session(session, "ns_loss_scale",
                    [&](Session& s) { s.report_loss_scale(scale, skipped != 0); });
}

NS_API ns_status ns_step_end(ns_session session, ns_step_result* result) {
  return on_session(session, "ns_step_end", [&](Session& s) {
    const std::uint32_t size = result_size(result, "ns_step_end: result");
    write_result(result, size, s.end_step());
  });
}

NS_API ns_status ns_step_replayed(ns_session session, void* stream, ns_step_result* result) {
  return on_session(session, "ns_step_replayed", [&](Session& s) {
    const std::uint32_t size = result_size(result, "ns_step_replayed: result");
    write_result(result, size, s.step_replayed(stream));
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

NS_API ns_status ns_writer_status(ns_session session, int32_t* pending) {
  return on_session(session, "ns_writer_status", [&](Session& s) {
    int waiting = 0;
    try {
      s.writer_status(&waiting);  // NS_ERR_IO for the failures not yet reported
    } catch (...) {
      if (pending) *pending = waiting;
      throw;
    }
    if (pending) *pending = waiting;
  });
}

NS_API ns_status ns_get_api(int32_t abi_version, const ns_api_1** table) {
  static const ns_api_1 kApi1 = {
      sizeof(ns_api_1),       NS_ABI_VERSION,  ns_version,       ns_last_error,
      ns_status_string,       ns_session_open, ns_session_close, ns_slot_register,
      ns_slot_set_address,    ns_slot_undefer, ns_fold_begin,    ns_fold_end,
      ns_step_begin,          ns_check,        ns_step_end,      ns_step_replayed,
      ns_guard_allows_update, ns_guard_word,   ns_writer_status, ns_check_at,
      ns_loss_scale};
  return guarded("ns_get_api", [&] {
    if (!table) throw Error(NS_ERR_ARGUMENT, "ns_get_api: table is NULL");
    *table = nullptr;
    if (abi_version != 1)
      throw Error(NS_ERR_VERSION,
                  fmt::format("ns_get_api({}): this library (nanscope {}.{}.{}) "
                              "has ABI 1 only",
                              abi_version, NS_VERSION_MAJOR, NS_VERSION_MINOR, NS_VERSION_PATCH));
    *table = &kApi1;
  });
}

}  // extern "C"
