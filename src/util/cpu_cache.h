// The data caches of the CPU the process runs on, as the C library reports them.
#pragma once

#include <cstddef>

namespace braid::util {

// Bytes of one core's L2 cache (sysconf), read once; 1 MiB where the system does not say. The
// B+-tree compares its own size with it to tell whether a plain descent's levels are likely
// misses (index/btree.h, BTree::outgrew_cache).
std::size_t l2_cache_bytes();

// Bytes of the largest data cache the first core has (sysfs; else sysconf's L3, else its L2),
// read once; 32 MiB where the system says nothing. The B+-tree hints only part of a node on a level
// larger than this (index/btree.h, Lookup::next_lines).
std::size_t llc_bytes();

}  // namespace braid::util
