// CRC32C (Castagnoli), the checksum of every log block, checkpoint chunk and catalog file.
//
// Written here rather than taken from a library: Debian 12 packages no C/C++ CRC32C library,
// and it sits on the commit path. The SSE4.2 instruction computes 8 bytes per step; inputs of
// 96 bytes and more run three independent chains of it and join them (crc32c.cc). Machines
// without it use a table, chosen once at start-up.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace braid::util {

// Extends `crc` (0 for a fresh checksum) over `data`.
std::uint32_t crc32c_extend(std::uint32_t crc, const void* data, std::size_t n);
inline std::uint32_t crc32c(const void* data, std::size_t n) { return crc32c_extend(0, data, n); }
inline std::uint32_t crc32c(std::string_view s) { return crc32c(s.data(), s.size()); }
// True when the hardware instruction is in use.
bool crc32c_hardware();
// The table's answer whatever the machine has: the reference the tests hold the fast path to.
std::uint32_t crc32c_extend_portable(std::uint32_t crc, const void* data, std::size_t n);

}  // namespace braid::util
