#include "util/cpu_cache.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <initializer_list>
#include <string>

namespace braid::util {

std::size_t l2_cache_bytes() {
  static const std::size_t bytes = [] {
    const long v = ::sysconf(_SC_LEVEL2_CACHE_SIZE);
    return v > 0 ? static_cast<std::size_t>(v) : std::size_t{1} << 20;
  }();
  return bytes;
}

std::size_t llc_bytes() {
  static const std::size_t bytes = [] {
    // sysfs names the caches cpu0 shares with its neighbours; sysconf's L3 can be the sum over
    // every die of the host (a VM on a 12-die EPYC reports 384 MiB for a 32 MiB L3).
    std::size_t best = 0;
    for (int i = 0; i < 8; ++i) {
      const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
      std::ifstream type(dir + "type");
      std::ifstream size(dir + "size");
      std::string t;
      std::size_t kib = 0;
      char unit = 0;
      if (!(type >> t) || !(size >> kib >> unit)) break;
      if (t != "Instruction" && unit == 'K') best = std::max(best, kib << 10);
    }
    if (best != 0) return best;
    for (const int name : {_SC_LEVEL3_CACHE_SIZE, _SC_LEVEL2_CACHE_SIZE}) {
      const long v = ::sysconf(name);
      if (v > 0) return static_cast<std::size_t>(v);
    }
    return std::size_t{32} << 20;
  }();
  return bytes;
}

}  // namespace braid::util
