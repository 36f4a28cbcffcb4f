// A B+-tree node's stored form: the image a node segment holds (docs/internals/index-paging.md,
// "A persistent index"). An image is the node's own 1 KiB with its header's in-memory words
// replaced by what a reader needs to trust it:
//
//   bytes  0..3   CRC32C of bytes 4..1023
//   bytes  4..7   the tree's id (an image read for another index is not taken for this one)
//   bytes  8..15  count, heap start, garbage, level: as in the node; the insert-run hint is 0
//   bytes 16..23  inner: the leftmost child's address; leaf: 0
//   bytes 24..31  the image's own address: a read that lands on another node's image (a
//                 misdirected write or read, an address gone stale) fails instead of
//                 answering with the wrong keys
//   bytes 32..    the heads, the tails and the key heap, as in the node, with the value hints
//                 zeroed (a hint names memory) and the unused bytes between tails and heap
//                 zeroed; an inner node's child values are addresses
//
// Why the node's layout and not a serialization of its keys: a load copies the image into a
// frame and the node is ready, with no rebuild of heads, tails and heap, and an image is exactly
// one node, so a 4 KiB block holds four and their addresses stay fixed as the tree changes
// around them (copy-on-write: a changed node gets a new image at a new address).
//
// Addresses are opaque here: a word with bit 0 set (the storage layer packs file, offset and
// size into it, storage/cold_address.h, as a cold record's entry does), never a pointer, which
// is 64-byte aligned. The in-memory words an image drops (the version lock, SSN's stamp) are the
// frame's: a load keeps the frame's lock counting across lives and gives the leaf a stamp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "index/btree.h"

namespace braid::index {

inline constexpr std::size_t kNodeImageBytes = kNodeBytes;

// Writes the image of `n` into `out` (kNodeImageBytes). `n` must hold still: the caller holds
// its lock, owns it alone, or reads a private copy that validated. An inner node's children are
// named by `children` (leftmost first, then entry by entry: count + 1 addresses); a leaf takes
// none. `address` is where the image will be written, in tree `tree`.
void encode_node_image(const Node& n, std::uint32_t tree, std::uint64_t address,
                       std::span<const std::uint64_t> children, char* out);

// The image of a leaf holding keys[i] -> values[i] (strictly ascending), as a leaf holding them
// evicted to `address` would have: for a leaf kept on storage in another form, which its store
// turns into an image when a descent reads it (the engine's checkpoint runs). False when the
// entries do not fit one node.
[[nodiscard]] bool encode_leaf_image(std::span<const std::string_view> keys,
                                     std::span<const std::uint64_t> values, std::uint32_t tree,
                                     std::uint64_t address, char* out);

// Checks that the kNodeImageBytes at `image` are the image of a node of tree `tree` written at
// `address` (checksum, identity, a node's shape: node_shape_error) and copies the node into
// `*out`: every byte after the version lock, except SSN's stamp, which stay the frame's. An
// inner node's children are left as the image names them, addresses. Answers why not (the
// node is then unchanged), or null.
[[nodiscard]] const char* decode_node_image(const char* image, std::uint32_t tree,
                                            std::uint64_t address, Node* out);

// The address an image says it was written at, and the tree it says it belongs to: for a tool
// that walks a segment without knowing which node each slot holds (braid check). Trusted only
// once decode_node_image() agreed.
std::uint64_t image_address(const char* image);
std::uint32_t image_tree(const char* image);

}  // namespace braid::index
