// Where a B+-tree's evicted nodes go and come back from (docs/internals/index-paging.md): the
// tree writes a node's image (index/node_image.h) through it before its parent names the image's
// address instead of the node, and reads the image back when a descent meets that address. The
// engine's store is its node segments (storage/node_segment.h); the tests' are in memory, with
// faults.
#pragma once

#include <braid/status.h>

#include <cstddef>
#include <cstdint>
#include <span>

namespace braid::index {

class NodeStore {
 public:
  virtual ~NodeStore() = default;
  // Takes a slot for an image: its address (a word with bit 0 set) and where to write the
  // image (kNodeImageBytes, valid until flush()). Called by one thread at a time (the tree's
  // evictions are serialized); IOError when no slot can be had.
  virtual Result<std::uint64_t> add(char** slot) = 0;
  // Writes the images added since the last flush; once it answers OK, read() answers them.
  virtual Status flush() = 0;
  // Reads the image at `address` into `out` (kNodeImageBytes, 64-byte aligned), unverified.
  // Any thread, concurrently. IOError or Corruption saying what failed and where.
  virtual Status read(std::uint64_t address, char* out) = 0;
  // Reads the images at `addresses` into `out`, one after another (kNodeImageBytes each,
  // 64-byte aligned), unverified: a store whose images lie side by side reads them with one
  // request. IOError or Corruption as read().
  // The default reads one image at a time (index/paging.cc).
  virtual Status read_many(std::span<const std::uint64_t> addresses, char* out);
  // No node names `address` any more (it was loaded back, or its eviction gave up): its slot
  // holds garbage from now on. Any thread.
  virtual void release(std::uint64_t address) = 0;
};

}  // namespace braid::index
