// Optimistic reads of shared node memory (OLC): a reader races with writers by design and
// validates afterwards, discarding whatever it derived unless its version check passes.
#pragma once

// These functions must not be instrumented by ThreadSanitizer (their reads are volatile, never
// torn words, and every value derived from them is discarded unless the version check passes).
#if defined(__clang__) || defined(__GNUC__)
#define BRAID_OPTIMISTIC __attribute__((no_sanitize("thread")))
#else
#define BRAID_OPTIMISTIC
#endif

namespace braid::index {

// An optimistic read of a node field: a volatile load is never split or repeated by the
// compiler, so a torn node state is possible but a torn word is not (btree.cc).
template <typename T>
BRAID_OPTIMISTIC inline T racy(const T& x) {
  return *static_cast<const volatile T*>(&x);
}

}  // namespace braid::index
