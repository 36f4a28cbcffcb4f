#include "util/assert.h"

#include <cstdio>
#include <cstdlib>

namespace braid::util {

void assert_failed(const char* expr, const char* file, int line, const char* func) {
  std::fprintf(stderr, "braid: assertion failed: %s\n  at %s:%d in %s\n", expr, file, line, func);
  std::fflush(stderr);
  std::abort();
}

}  // namespace braid::util
