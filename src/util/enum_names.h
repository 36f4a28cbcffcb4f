// Names of dense enums (enumerators 0..N-1): one table per enum beside its definition, looked
// up by value. Each table sits next to a static_assert that it names every enumerator, which
// keeps the table as long as the enum when one is added (the check a switch's -Wswitch gave).
#pragma once

#include <cstddef>

namespace braid::util {

// The name of `e` in `names`, or `unknown` for a value outside the enum (a corrupted byte).
template <typename E, std::size_t N>
constexpr const char* enum_name(E e, const char* const (&names)[N], const char* unknown) {
  const auto i = static_cast<std::size_t>(e);
  return i < N ? names[i] : unknown;
}

// True when `names` has one entry for each enumerator up to and including `last`.
template <typename E, std::size_t N>
constexpr bool names_every(const char* const (&)[N], E last) {
  return static_cast<std::size_t>(last) + 1 == N;
}

}  // namespace braid::util
