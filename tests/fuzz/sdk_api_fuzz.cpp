// libFuzzer harness: the SDK's C API driven by arbitrary call sequences, as a buggy trainer might
// make them: every call with handles, slot ids, struct sizes, counts, element types and addresses
// from the input (valid buffers, null, misaligned, past a mapping, unmapped, made up), NaN and Inf
// written into the buffers between calls. Every call must return a status; none may crash, hang
// or leak.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <string>

#include "nanscope/nanscope.h"

namespace {

std::string run_dir() {  // the sessions' run directory, removed when the fuzzer exits
  static const std::string dir =
      (std::filesystem::temp_directory_path() / ("nanscope_fuzz_sdk_" + std::to_string(getpid())))
          .string();
  return dir;
}

struct Input {
  const std::uint8_t* data;
  std::size_t size, at = 0;
  std::uint8_t byte() { return at < size ? data[at++] : 0; }
  bool done() const { return at >= size; }
};

float buffer[64];
std::uintptr_t hole = 0;  // a page that was unmapped: reading it would crash

std::uint64_t address(Input& in) {
  const auto base = reinterpret_cast<std::uint64_t>(buffer);
  switch (in.byte() % 8) {
    case 0:
      return 0;
    case 1:
      return base;
    case 2:
      return base + 1;  // misaligned
    case 3:
      return base + 60 * sizeof(float);  // near the end: a count may run past it
    case 4:
      return 0x7f0000000000ull;  // where a device pointer could be
    case 5:
      return hole;
    case 6:
      return ~std::uint64_t{0} - 8;  // wraps around
    default:
      return base + 4 * sizeof(float);
  }
}

std::int64_t count(Input& in) {
  static const std::int64_t counts[] = {0, -1, 1, 4, 16, 64, 1 << 20, std::int64_t{1} << 41};
  return counts[in.byte() % 8];
}

// ABI 1's first ns_step_result ended at `updated` (nanscope.h).
constexpr std::uint32_t kAbi1StepResult = offsetof(ns_step_result, halt_step);

// Sizes around the struct-size rule: ABI 1's first struct (`abi1`), one byte less, this header's,
// a newer caller's (its tail is zero below), none at all and a made-up one.
std::uint32_t struct_size(Input& in, std::uint32_t right, std::uint32_t abi1) {
  switch (in.byte() % 8) {
    case 0:
      return 0;
    case 1:
      return abi1 - 1;
    case 2:
      return right + 8;
    case 3:
      return 100000;
    case 4:
      return abi1;
    default:
      return right;
  }
}

// A result's bytes past what the call may write (the smaller of the caller's size and the
// library's) hold the canary the caller left there.
void expect_written_within(const unsigned char* bytes, std::size_t room, std::uint32_t size) {
  // A size the rule refuses gets nothing written past the caller's own struct_size field.
  const bool taken = size >= kAbi1StepResult && size <= 4096 && size % 4 == 0;
  const std::size_t limit = taken ? std::min<std::size_t>(size, sizeof(ns_step_result)) : 4;
  for (std::size_t i = limit; i < room; ++i)
    if (bytes[i] != 0xab) {
      std::fprintf(stderr, "a result was written at byte %zu past its size %u\n", i, size);
      std::abort();
    }
}

const char* name(Input& in) {
  static const char* names[] = {"a",      "b",     "c",
                                "x_norm", "",      "../up",
                                "a,b",    nullptr, "a_name_that_is_far_too_long_for_a_slot",
                                "d",      "e",     "f"};
  return names[in.byte() % 12];
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const long page = sysconf(_SC_PAGESIZE);
  void* p = mmap(nullptr, page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  munmap(p, page);
  hole = reinterpret_cast<std::uintptr_t>(p);
  // The directory's name made before the handler is registered: exit runs the handler before it
  // destroys the name (the reverse order), not after.
  (void)run_dir();
  std::atexit([] {
    std::error_code ec;
    std::filesystem::remove_all(run_dir(), ec);
  });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string dir = run_dir();
  Input in{data, size};
  for (float& f : buffer) f = 1.0f;
  ns_session current{}, closed{};
  int calls = 0;
  // Each struct with room for a newer caller's zero tail.
  struct {
    ns_session_options o;
    std::uint8_t tail[16];
  } opts{};
  struct {
    ns_slot_desc d;
    std::uint8_t tail[16];
  } desc{};
  struct {
    ns_step_result r;
    std::uint8_t tail[16];
  } result{};
  while (!in.done() && calls++ < 400) {
    const ns_session handles[] = {current, ns_session{0}, ns_session{current.id + 1}, ns_session{1},
                                  closed};
    const ns_session h = handles[in.byte() % 5];
    switch (in.byte() % 18) {
      case 0: {
        std::memset(&opts, 0, sizeof opts);
        opts.o.struct_size =
            struct_size(in, sizeof(ns_session_options), sizeof(ns_session_options));
        opts.o.run_dir = in.byte() % 8 ? dir.c_str() : nullptr;
        opts.o.trainer = in.byte() % 8 ? "fuzz" : "nanscope";
        opts.o.guard = in.byte() % 2;
        opts.o.health = in.byte() % 2;
        opts.o.capture = in.byte() % 2;
        opts.o.halt_on_nan = in.byte() % 2;
        opts.o.grad_collapse_below = (in.byte() % 3) ? 0.0 : -1.0;
        opts.o.overwrite = 1;
        opts.o.reserved1 = in.byte() % 16 ? 0 : 1;
        opts.o.folds = in.byte() % 4;
        ns_session s{};
        if (ns_session_open(in.byte() % 16 ? &opts.o : nullptr, &s) == NS_OK) current = s;
        break;
      }
      case 1:
        if (ns_session_close(h) == NS_OK && h.id == current.id) closed = current, current = {};
        break;
      case 2: {
        std::memset(&desc, 0, sizeof desc);
        desc.d.struct_size = struct_size(in, sizeof(ns_slot_desc), sizeof(ns_slot_desc));
        desc.d.reserved2 = in.byte() % 16 ? 0 : 7;
        desc.d.name = name(in);
        desc.d.phase = in.byte() % 4 ? "forward" : nullptr;
        desc.d.order = static_cast<std::int8_t>(in.byte());
        desc.d.consumers = in.byte() % 3 ? nullptr : name(in);
        desc.d.count = count(in);
        desc.d.dtype = in.byte() % 6 - 1;
        desc.d.memory = in.byte() % 3;
        desc.d.address = address(in);
        desc.d.state = in.byte() % 4;
        desc.d.role = in.byte() % 4;
        desc.d.ndim = in.byte() % 10 - 1;
        for (auto& n : desc.d.shape) n = in.byte() % 8 ? in.byte() % 17 : -1;
        std::int32_t id = -1;
        ns_slot_register(h, in.byte() % 16 ? &desc.d : nullptr, in.byte() % 16 ? &id : nullptr);
        break;
      }
      case 3:
        ns_slot_set_address(h, static_cast<std::int8_t>(in.byte()), address(in));
        break;
      case 4:
        ns_slot_undefer(h, static_cast<std::int8_t>(in.byte()));
        break;
      case 5:
        ns_fold_begin(h, in.byte() % 4 - 1);
        break;
      case 6:
        ns_fold_end(h, in.byte() % 4 - 1);
        break;
      case 7:
        ns_step_begin(h, in.byte() % 5 - 1, nullptr);
        break;
      case 8: {
        std::int32_t ids[4];
        for (auto& i : ids) i = static_cast<std::int8_t>(in.byte()) % 8;
        ns_check(h, in.byte() % 8 ? ids : nullptr, in.byte() % 6 - 1, nullptr);
        break;
      }
      case 9: {
        std::memset(&result, 0xab, sizeof result);
        result.r.struct_size = struct_size(in, sizeof(ns_step_result), kAbi1StepResult);
        ns_step_end(h, in.byte() % 8 ? &result.r : nullptr);
        expect_written_within(reinterpret_cast<const unsigned char*>(&result), sizeof result,
                              result.r.struct_size);
        break;
      }
      case 10: {
        std::int32_t allowed = 0;
        ns_guard_allows_update(h, in.byte() % 8 ? &allowed : nullptr);
        break;
      }
      case 11: {
        std::uint64_t word = 0;
        if (ns_guard_word(h, &word) == NS_OK && word)
          (void)*reinterpret_cast<volatile std::uint32_t*>(word);
        break;
      }
      case 12: {
        std::memset(&result, 0xab, sizeof result);
        result.r.struct_size = struct_size(in, sizeof(ns_step_result), kAbi1StepResult);
        ns_step_replayed(h, nullptr, in.byte() % 8 ? &result.r : nullptr);
        expect_written_within(reinterpret_cast<const unsigned char*>(&result), sizeof result,
                              result.r.struct_size);
        break;
      }
      case 13: {
        std::int32_t pending = -1;
        ns_writer_status(h, in.byte() % 8 ? &pending : nullptr);
        break;
      }
      case 14: {
        const ns_api_1* api = nullptr;
        const ns_status got = ns_get_api(in.byte() % 4 - 1, in.byte() % 8 ? &api : nullptr);
        if (got == NS_OK && (!api || api->abi_version != 1 || !api->check)) std::abort();
        break;
      }
      case 16: {
        std::int32_t ids[4];
        std::uint64_t at[4];
        for (auto& i : ids) i = static_cast<std::int8_t>(in.byte()) % 8;
        for (auto& a : at) a = address(in);
        ns_check_at(h, in.byte() % 8 ? ids : nullptr, in.byte() % 8 ? at : nullptr,
                    in.byte() % 6 - 1, nullptr);
        break;
      }
      case 15:
        if (!ns_status_string(static_cast<std::int8_t>(in.byte()))) std::abort();
        break;
      default: {
        if (in.byte() % 2) {
          const float values[] = {std::numeric_limits<float>::quiet_NaN(),
                                  std::numeric_limits<float>::infinity(),
                                  -std::numeric_limits<float>::infinity(), 0.0f, 1e30f};
          buffer[in.byte() % 64] = values[in.byte() % 5];
          break;
        }
        // A 16-bit value for a bfloat16 or float16 slot over the same memory: NaNs with
        // payloads, both infinities, the largest finite values, subnormals, -0.
        const std::uint16_t halves[] = {0x7fc1, 0xff81, 0x7f80, 0xff80, 0x7f7f, 0x0001,
                                        0x7e01, 0xfc00, 0x7c00, 0x7bff, 0x03ff, 0x8000};
        const std::uint16_t h = halves[in.byte() % std::size(halves)];
        std::memcpy(reinterpret_cast<unsigned char*>(buffer) + 2 * (in.byte() % 128), &h, 2);
        break;
      }
    }
    (void)ns_last_error();
  }
  if (current.id) ns_session_close(current);
  return 0;
}
