// The data caches of the CPU the process runs on, as the C library reports them.
#pragma once

#include <cstddef>

namespace braid::util {

// Bytes of one core's L2 cache (sysconf), read once; 1 MiB where the system does not say. The
// B+-tree compares its own size with it to tell whether a plain descent's levels are likely
// misses (index/btree.h, BTree::outgrew_cache).
std::size_t l2_cache_bytes();

}  // namespace braid::util
