// Assertions in two tiers (after TigerBeetle):
//   BRAID_ASSERT  — always on, also in release builds. For cheap checks off the hot path whose
//                   failure would otherwise corrupt data silently.
//   BRAID_DASSERT — debug builds only (BRAID_DEBUG_CHECKS). For hot-path pre/postconditions and
//                   expensive invariant walks.
// Split compound conditions into separate asserts so a failure names the clause that broke.
#pragma once

namespace braid::util {
[[noreturn]] void assert_failed(const char* expr, const char* file, int line, const char* func);
}  // namespace braid::util

#define BRAID_ASSERT(cond)                                               \
  do {                                                                   \
    if (!(cond)) [[unlikely]]                                            \
      ::braid::util::assert_failed(#cond, __FILE__, __LINE__, __func__); \
  } while (0)

#if defined(BRAID_DEBUG_CHECKS)
#define BRAID_DASSERT(cond) BRAID_ASSERT(cond)
#else
#define BRAID_DASSERT(cond) \
  do {                      \
    (void)sizeof(!(cond));  \
  } while (0)
#endif
