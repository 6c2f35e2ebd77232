// Enums the user, the files and the JSON spell by name: each enum's names live in one array
// (EnumNames<E>::kNames, in enumerator order), read once where text comes in and written where
// it goes out; code in between compares enumerators, never text.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>

namespace nanscope {

template <class E>
struct EnumNames;

template <class E>
constexpr std::string_view name_of(E e) {
  return EnumNames<E>::kNames[static_cast<std::size_t>(e)];
}

template <class E>
constexpr std::optional<E> parse_enum(std::string_view text) {
  const auto& names = EnumNames<E>::kNames;
  for (std::size_t i = 0; i < names.size(); ++i)
    if (names[i] == text) return static_cast<E>(i);
  return std::nullopt;
}

}  // namespace nanscope
