#include "util/cpu_cache.h"

#include <unistd.h>

namespace braid::util {

std::size_t l2_cache_bytes() {
  static const std::size_t bytes = [] {
    const long v = ::sysconf(_SC_LEVEL2_CACHE_SIZE);
    return v > 0 ? static_cast<std::size_t>(v) : std::size_t{1} << 20;
  }();
  return bytes;
}

}  // namespace braid::util
