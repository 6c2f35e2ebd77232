/* ABI 1's first surface: every call of the frozen header (abi1/nanscope/nanscope.h) defined with
 * no behaviour, built as a shared library with debug information and libnanscope's version node,
 * so that abidiff compares the current library's ABI against ABI 1's (abi_check.sh). Only the
 * signatures and the types matter here. */
#include <nanscope/nanscope.h>

#define UNUSED(x) (void)(x)

NS_API void ns_version(int* major, int* minor, int* patch) {
  UNUSED(major), UNUSED(minor), UNUSED(patch);
}
NS_API int ns_abi_version(void) {
  return NS_ABI_VERSION;
}
NS_API const char* ns_last_error(void) {
  return "";
}
NS_API const char* ns_status_string(int32_t status) {
  UNUSED(status);
  return "";
}
NS_API ns_status ns_session_open(const ns_session_options* options, ns_session* out) {
  UNUSED(options), UNUSED(out);
  return NS_OK;
}
NS_API ns_status ns_session_close(ns_session session) {
  UNUSED(session);
  return NS_OK;
}
NS_API ns_status ns_slot_register(ns_session session, const ns_slot_desc* desc, int32_t* id) {
  UNUSED(session), UNUSED(desc), UNUSED(id);
  return NS_OK;
}
NS_API ns_status ns_slot_set_address(ns_session session, int32_t slot, uint64_t address) {
  UNUSED(session), UNUSED(slot), UNUSED(address);
  return NS_OK;
}
NS_API ns_status ns_slot_undefer(ns_session session, int32_t slot) {
  UNUSED(session), UNUSED(slot);
  return NS_OK;
}
NS_API ns_status ns_fold_begin(ns_session session, int32_t fold) {
  UNUSED(session), UNUSED(fold);
  return NS_OK;
}
NS_API ns_status ns_fold_end(ns_session session, int32_t fold) {
  UNUSED(session), UNUSED(fold);
  return NS_OK;
}
NS_API ns_status ns_step_begin(ns_session session, int32_t step, void* stream) {
  UNUSED(session), UNUSED(step), UNUSED(stream);
  return NS_OK;
}
NS_API ns_status ns_check(ns_session session, const int32_t* slots, int32_t count, void* stream) {
  UNUSED(session), UNUSED(slots), UNUSED(count), UNUSED(stream);
  return NS_OK;
}
NS_API ns_status ns_step_end(ns_session session, ns_step_result* result) {
  UNUSED(session), UNUSED(result);
  return NS_OK;
}
NS_API ns_status ns_step_replayed(ns_session session, void* stream, ns_step_result* result) {
  UNUSED(session), UNUSED(stream), UNUSED(result);
  return NS_OK;
}
NS_API ns_status ns_guard_allows_update(ns_session session, int32_t* allowed) {
  UNUSED(session), UNUSED(allowed);
  return NS_OK;
}
NS_API ns_status ns_guard_word(ns_session session, uint64_t* address) {
  UNUSED(session), UNUSED(address);
  return NS_OK;
}
NS_API ns_status ns_writer_status(ns_session session, int32_t* pending) {
  UNUSED(session), UNUSED(pending);
  return NS_OK;
}
NS_API ns_status ns_get_api(int32_t abi_version, const ns_api_1** table) {
  UNUSED(abi_version), UNUSED(table);
  return NS_OK;
}
