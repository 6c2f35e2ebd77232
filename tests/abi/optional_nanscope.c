/* A trainer that makes nanscope optional: one dlopen, one dlsym of ns_get_api, every call through
 * the table (nanscope.h, ns_api_1). It is not linked to libnanscope. Built with the initialisers
 * under -Wall -Wextra -Werror in C99.
 *
 * optional_nanscope LIBRARY RUN_DIR */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>

#include <nanscope/nanscope.h>

#define CHECK(call)                                                                   \
  do {                                                                                \
    ns_status status_ = (call);                                                       \
    if (status_ != NS_OK) {                                                           \
      fprintf(stderr, "%s: %s (%s)\n", #call, api->status_string(status_),            \
              api->last_error());                                                     \
      return 1;                                                                       \
    }                                                                                 \
  } while (0)

int main(int argc, char** argv) {
  static float w[16];
  const ns_api_1* api = NULL;
  ns_get_api_fn get_api;
  void* lib;
  ns_session_options o = NS_SESSION_OPTIONS_INIT;
  ns_slot_desc d = NS_SLOT_DESC_INIT;
  ns_step_result r = NS_STEP_RESULT_INIT;
  ns_session s;
  int32_t iw = -1, pending = -1;
  if (argc != 3) {
    fprintf(stderr, "usage: optional_nanscope LIBRARY RUN_DIR\n");
    return 2;
  }
  lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    printf("optional_nanscope: no nanscope (%s); training goes on unwatched\n", dlerror());
    return 3;
  }
  *(void**)(&get_api) = dlsym(lib, "ns_get_api");
  if (!get_api || get_api(NS_ABI_VERSION, &api) != NS_OK || !api) {
    fprintf(stderr, "no ns_get_api of ABI %d\n", NS_ABI_VERSION);
    return 1;
  }
  if (api->abi_version != 1 || api->struct_size < sizeof(ns_api_1)) {
    fprintf(stderr, "a table of ABI %d, %u bytes\n", api->abi_version, api->struct_size);
    return 1;
  }
  if (get_api(2, &api) != NS_ERR_VERSION || api != NULL) {
    fprintf(stderr, "ns_get_api(2) gave a table\n");
    return 1;
  }
  get_api(NS_ABI_VERSION, &api);
  o.run_dir = argv[2];
  o.trainer = "optional";
  o.overwrite = 1;
  CHECK(api->session_open(&o, &s));
  d.name = "w";
  d.count = 16;
  d.address = (uint64_t)(uintptr_t)w;
  CHECK(api->slot_register(s, &d, &iw));
  CHECK(api->fold_begin(s, 0));
  w[3] = INFINITY;
  CHECK(api->step_begin(s, 0, NULL));
  CHECK(api->check(s, &iw, 1, NULL));
  CHECK(api->step_end(s, &r));
  CHECK(api->fold_end(s, 0));
  CHECK(api->writer_status(s, &pending));
  CHECK(api->session_close(s));
  if (r.fired != 1 || r.entry_slot != iw || r.replays != 1 || r.halt_step != -1) {
    fprintf(stderr, "result: fired %d entry %d replays %d halt_step %d\n", r.fired, r.entry_slot,
            r.replays, r.halt_step);
    return 1;
  }
  printf("optional_nanscope: w fired through the table of ABI %d\n", api->abi_version);
  dlclose(lib);
  return 0;
}
