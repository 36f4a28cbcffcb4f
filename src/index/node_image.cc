#include "index/node_image.h"

#include <cstring>
#include <new>

#include "util/assert.h"
#include "util/crc32c.h"

namespace braid::index {

namespace {

// The image's header, over the node's (node_image.h). Fields at the node's offsets where they
// mean the same, so the body and the shared fields copy straight across.
struct ImageHeader {
  std::uint32_t crc;
  std::uint32_t tree;
  std::uint16_t count;
  std::uint16_t heap_begin;
  std::uint16_t garbage;
  std::uint8_t level;
  std::uint8_t run_end;
  std::uint64_t leftmost;
  std::uint64_t address;
};
static_assert(sizeof(ImageHeader) == Node::kHeader);
static_assert(offsetof(ImageHeader, count) == offsetof(Node, count));
static_assert(offsetof(ImageHeader, heap_begin) == offsetof(Node, heap_begin));
static_assert(offsetof(ImageHeader, garbage) == offsetof(Node, garbage));
static_assert(offsetof(ImageHeader, level) == offsetof(Node, level));
static_assert(offsetof(ImageHeader, run_end) == offsetof(Node, run_end));
static_assert(offsetof(ImageHeader, leftmost) == offsetof(Node, leftmost));
static_assert(sizeof(Node*) == sizeof(std::uint64_t), "a child word is a pointer or an address");
// The node's bytes an image carries: [kShared, kSharedEnd) of the header and the whole body.
// The lock before them and SSN's stamp after them stay the frame's.
constexpr std::size_t kShared = offsetof(Node, count);
constexpr std::size_t kSharedEnd = offsetof(Node, leftmost);
static_assert(kShared == sizeof(std::uint64_t), "the lock is the node's first word");
static_assert(offsetof(Node, pstamp) + sizeof(std::uint64_t) == Node::kHeader);

constexpr std::size_t kCrcFrom = sizeof(std::uint32_t);

std::uint64_t load_u64(const char* p) {
  std::uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
void store_u64(char* p, std::uint64_t v) { std::memcpy(p, &v, sizeof v); }

// Where tail `i` of a node or image with `count` entries starts, from the node's first byte.
std::size_t tail_at(std::size_t count, std::size_t i) {
  return Node::kHeader + count * sizeof(std::uint64_t) + i * sizeof(Tail);
}

}  // namespace

bool encode_leaf_image(std::span<const std::string_view> keys,
                       std::span<const std::uint64_t> values, std::uint32_t tree,
                       std::uint64_t address, char* out) {
  alignas(64) char frame[kNodeBytes];
  Node* n = new (frame) Node;
  if (!fill_leaf(n, keys, values)) return false;
  encode_node_image(*n, tree, address, {}, out);
  return true;
}

void encode_node_image(const Node& n, std::uint32_t tree, std::uint64_t address,
                       std::span<const std::uint64_t> children, char* out) {
  BRAID_ASSERT(is_address(address));
  BRAID_ASSERT(n.count <= Node::kMaxSlots);
  BRAID_ASSERT(n.level < kMaxLevels);
  const std::size_t count = n.count;
  BRAID_ASSERT(children.size() == (n.level == 0 ? 0 : count + 1));
  // The body only: the header is built from the fields below, and the version lock and SSN's
  // stamp, which other threads touch atomically even while the node is held, are not read.
  std::memcpy(out + Node::kHeader, n.raw() + Node::kHeader, kNodeImageBytes - Node::kHeader);
  // Bytes no entry owns carry whatever the frame's earlier lives left: zeroed, an image says
  // only what the node holds.
  const std::size_t arrays_end = Node::kHeader + count * kEntryBytes;
  BRAID_ASSERT(arrays_end <= n.heap_begin);
  std::memset(out + arrays_end, 0, n.heap_begin - arrays_end);
  for (std::size_t i = 0; i < count; ++i) {
    char* t = out + tail_at(count, i);
    std::memset(t + offsetof(Tail, pad), 0, sizeof(Tail::pad));
    std::memset(t + offsetof(Tail, value_hint), 0, sizeof(Tail::value_hint));
    if (n.level != 0) {
      BRAID_ASSERT(is_address(children[i + 1]));
      store_u64(t + offsetof(Tail, value), children[i + 1]);
    }
  }
  ImageHeader h;
  h.crc = 0;
  h.tree = tree;
  h.count = n.count;
  h.heap_begin = n.heap_begin;
  h.garbage = n.garbage;
  h.level = n.level;
  h.run_end = 0;  // the insert-run hint describes the node's recent inserts, not its contents
  if (n.level != 0) BRAID_ASSERT(is_address(children[0]));
  h.leftmost = n.level != 0 ? children[0] : 0;
  h.address = address;
  std::memcpy(out, &h, sizeof h);
  h.crc = util::crc32c(out + kCrcFrom, kNodeImageBytes - kCrcFrom);
  std::memcpy(out, &h.crc, sizeof h.crc);
}

const char* decode_node_image(const char* image, std::uint32_t tree, std::uint64_t address,
                              Node* out) {
  BRAID_DASSERT(is_address(address));
  ImageHeader h;
  std::memcpy(&h, image, sizeof h);
  if (util::crc32c(image + kCrcFrom, kNodeImageBytes - kCrcFrom) != h.crc) {
    return "node image checksum mismatch";
  }
  if (h.tree != tree) return "node image of another index";
  if (h.address != address) return "node image written for another address";
  if (h.level >= kMaxLevels) return "node image with an impossible level";
  if (h.count > Node::kMaxSlots) return "node image with more entries than a node holds";
  if (h.level == 0) {
    if (h.leftmost != 0) return "leaf image with a leftmost child";
  } else {
    if (!is_address(h.leftmost)) return "inner node image whose leftmost child is no address";
    for (std::size_t i = 0; i < h.count; ++i) {
      if (!is_address(load_u64(image + tail_at(h.count, i) + offsetof(Tail, value)))) {
        return "inner node image whose child is no address";
      }
    }
  }
  // The shape is checked on a copy, so a node that does not take the image stays as it was.
  Node scratch;
  std::memcpy(scratch.raw() + kShared, image + kShared, kSharedEnd - kShared);
  store_u64(scratch.raw() + offsetof(Node, leftmost), h.leftmost);
  std::memcpy(scratch.raw() + Node::kHeader, image + Node::kHeader,
              kNodeImageBytes - Node::kHeader);
  if (const char* why = node_shape_error(scratch); why != nullptr) return why;
  std::memcpy(out->raw() + kShared, scratch.raw() + kShared,
              kSharedEnd - kShared + sizeof(h.leftmost));
  std::memcpy(out->raw() + Node::kHeader, scratch.raw() + Node::kHeader,
              kNodeImageBytes - Node::kHeader);
  return nullptr;
}

std::uint64_t image_address(const char* image) {
  return load_u64(image + offsetof(ImageHeader, address));
}

std::uint32_t image_tree(const char* image) {
  std::uint32_t t;
  std::memcpy(&t, image + offsetof(ImageHeader, tree), sizeof t);
  return t;
}

}  // namespace braid::index
