// The header's initialisers from C++ under -Wall -Wextra -Werror (the C side is abi1_program.c and
// optional_nanscope.c): each gives its struct's size and zero everywhere else, so a field appended
// later reads as its zero default in code that uses them.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "nanscope/nanscope.h"

template <class T>
bool zero_after_size(const T& t) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(&t);
  for (std::size_t i = sizeof(std::uint32_t); i < sizeof t; ++i)
    if (bytes[i] != 0) return false;
  return t.struct_size == sizeof t;
}

int main() {
  const ns_session_options o = NS_SESSION_OPTIONS_INIT;
  const ns_slot_desc d = NS_SLOT_DESC_INIT;
  const ns_step_result r = NS_STEP_RESULT_INIT;
  const ns_session none{};
  if (!zero_after_size(o) || !zero_after_size(d) || !zero_after_size(r) || none.id != 0) {
    std::fprintf(stderr, "an initialiser is not its size and zeros\n");
    return 1;
  }
  std::printf("initialisers: options %zu, slot %zu, result %zu bytes\n", sizeof o, sizeof d,
              sizeof r);
  return 0;
}
