// Node images (index/node_image.h): a tree written bottom-up as images reads back whole from
// them alone, and an image that is damaged, misdirected or of another tree is refused with a
// reason and leaves the node it was read into as it was.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "index/btree.h"
#include "index/node_image.h"
#include "index/tree_util.h"
#include "util/crc32c.h"
#include "util/random.h"

namespace braid::index {
namespace {

constexpr std::uint32_t kTree = 7;

// Images by address, as a node segment would hold them.
using Images = std::map<std::uint64_t, std::string>;

// An address word as the storage layer would make one: bit 0 set, distinct per node.
std::uint64_t fake_address(std::size_t n) { return (std::uint64_t{n} << 13) | kAddressBit; }

// Writes every node of `t` as an image; answers the root's address.
std::uint64_t write_images(const BTree& t, Images* images) {
  return t.visit_bottom_up([&](const Node& n, std::span<const std::uint64_t> children) {
    const std::uint64_t a = fake_address(images->size() + 1);
    std::string img(kNodeImageBytes, '\0');
    encode_node_image(n, kTree, a, children, img.data());
    images->emplace(a, std::move(img));
    return a;
  });
}

std::unique_ptr<Node> fresh_node() { return std::make_unique<Node>(); }

// Reads the tree back from its images alone, root first; every entry of every leaf, in order.
void read_back(const Images& images, std::uint64_t address, std::uint8_t want_level,
               std::vector<std::pair<std::string, std::uint64_t>>* out) {
  const auto it = images.find(address);
  ASSERT_NE(it, images.end());
  auto n = fresh_node();
  const char* why = decode_node_image(it->second.data(), kTree, address, n.get());
  ASSERT_EQ(why, nullptr) << why;
  if (want_level != 0xff) {
    ASSERT_EQ(n->level, want_level);
  }
  if (n->level == 0) {
    for (unsigned i = 0; i < n->count; ++i) {
      out->emplace_back(key_of(*n, i), n->tails(n->count)[i].value);
      EXPECT_EQ(n->tails(n->count)[i].value_hint, 0u);
    }
    return;
  }
  const auto child_level = static_cast<std::uint8_t>(n->level - 1);
  read_back(images, reinterpret_cast<std::uint64_t>(n->leftmost), child_level, out);
  for (unsigned i = 0; i < n->count; ++i) {
    read_back(images, n->tails(n->count)[i].value, child_level, out);
  }
}

template <typename T>
void put(std::string* img, std::size_t off, T v) {
  std::memcpy(img->data() + off, &v, sizeof v);
}
template <typename T>
T get(const std::string& img, std::size_t off) {
  T v;
  std::memcpy(&v, img.data() + off, sizeof v);
  return v;
}

TEST(NodeImage, ATreeReadsBackWholeFromItsImages) {
  struct Case {
    std::size_t keys;
    std::size_t max_len;
  };
  // One leaf; many levels of short keys (heads only); long keys (suffixes in the heap).
  for (const Case c : {Case{20, 8}, Case{50'000, 8}, Case{8'000, 60}, Case{600, 255}}) {
    SCOPED_TRACE(testing::Message() << c.keys << " keys of up to " << c.max_len << " bytes");
    const auto t = random_tree(c.keys * 31 + c.max_len, c.keys, c.max_len, 0, 256);
    // Removals leave heap garbage and merged nodes: images carry what the node holds.
    const auto before = entries_of(*t);
    for (std::size_t i = 0; i < before.size(); i += 3) {
      ASSERT_TRUE(t->remove(before[i].first, before[i].second));
    }
    t->check_invariants();
    Images images;
    const std::uint64_t root = write_images(*t, &images);
    EXPECT_EQ(images.size(), t->node_count());
    // An image says only what its node holds: the bytes between the entry arrays and the key
    // heap, which removals left behind in the frames, are zeros.
    std::size_t gap_bytes = 0;
    for (const auto& [a, img] : images) {
      const auto count = get<std::uint16_t>(img, offsetof(Node, count));
      const auto heap = get<std::uint16_t>(img, offsetof(Node, heap_begin));
      for (std::size_t b = Node::kHeader + count * kEntryBytes; b < heap; ++b, ++gap_bytes) {
        ASSERT_EQ(img[b], 0) << "byte " << b;
      }
    }
    EXPECT_GT(gap_bytes, 0u);
    std::vector<std::pair<std::string, std::uint64_t>> back;
    read_back(images, root, 0xff, &back);
    EXPECT_EQ(back, entries_of(*t));
  }
}

TEST(NodeImage, ImagesAreDeterministicAndRoundTripExactly) {
  const auto t = random_tree(3, 5'000, 40, 0, 256);
  Images first;
  Images second;
  write_images(*t, &first);
  write_images(*t, &second);
  ASSERT_EQ(first, second);  // no byte of a frame's earlier lives leaks into an image
  // Decoding an image and encoding the node again gives the same bytes: nothing is lost.
  for (const auto& [address, img] : first) {
    auto n = fresh_node();
    ASSERT_EQ(decode_node_image(img.data(), kTree, address, n.get()), nullptr);
    std::vector<std::uint64_t> children;
    if (n->level != 0) {
      children.push_back(reinterpret_cast<std::uint64_t>(n->leftmost));
      for (unsigned i = 0; i < n->count; ++i) children.push_back(n->tails(n->count)[i].value);
    }
    std::string again(kNodeImageBytes, '\0');
    encode_node_image(*n, kTree, address, children, again.data());
    ASSERT_EQ(again, img);
    EXPECT_EQ(image_address(img.data()), address);
    EXPECT_EQ(image_tree(img.data()), kTree);
  }
}

// One leaf image and one inner image of a small tree.
struct Pair {
  std::uint64_t leaf_address = 0;
  std::string leaf;
  std::uint64_t inner_address = 0;
  std::string inner;
};
Pair leaf_and_inner() {
  const auto t = random_tree(11, 2'000, 30, 0, 256);
  Images images;
  const std::uint64_t root = write_images(*t, &images);
  Pair p;
  p.inner_address = root;
  p.inner = images.at(root);
  for (const auto& [a, img] : images) {
    auto n = fresh_node();
    if (decode_node_image(img.data(), kTree, a, n.get()) == nullptr && n->level == 0) {
      p.leaf_address = a;
      p.leaf = img;
      break;
    }
  }
  return p;
}

TEST(NodeImage, EveryFlippedBitIsRefusedAndLeavesTheNodeAsItWas) {
  const Pair p = leaf_and_inner();
  ASSERT_FALSE(p.leaf.empty());
  util::Rng rng(5);
  for (const auto& [address, img] :
       {std::pair{p.leaf_address, p.leaf}, std::pair{p.inner_address, p.inner}}) {
    auto n = fresh_node();
    std::memset(n->raw() + sizeof(OptLock), 0x5a, kNodeBytes - sizeof(OptLock));
    const std::string before(n->raw(), kNodeBytes);
    for (std::size_t byte = 0; byte < kNodeImageBytes; ++byte) {
      std::string bad = img;
      bad[byte] = static_cast<char>(bad[byte] ^ (1 << rng.uniform(8)));
      const char* why = decode_node_image(bad.data(), kTree, address, n.get());
      ASSERT_NE(why, nullptr) << "byte " << byte;
      ASSERT_EQ(std::string(n->raw(), kNodeBytes), before) << "byte " << byte;
    }
  }
}

TEST(NodeImage, AnImageOfAnotherTreeOrAnotherAddressIsRefused) {
  const Pair p = leaf_and_inner();
  auto n = fresh_node();
  const char* why = decode_node_image(p.leaf.data(), kTree + 1, p.leaf_address, n.get());
  ASSERT_NE(why, nullptr);
  EXPECT_STREQ(why, "node image of another index");
  why = decode_node_image(p.leaf.data(), kTree, p.inner_address, n.get());
  ASSERT_NE(why, nullptr);
  EXPECT_STREQ(why, "node image written for another address");
  EXPECT_EQ(decode_node_image(p.leaf.data(), kTree, p.leaf_address, n.get()), nullptr);
}

// An image changed and then checksummed again: what a writer bug (or a forged file) would give.
// The shape checks, not the checksum, must catch it.
std::string resealed(std::string img) {
  const std::uint32_t crc = util::crc32c(img.data() + 4, img.size() - 4);
  std::memcpy(img.data(), &crc, sizeof crc);
  return img;
}
TEST(NodeImage, AWellSealedImageOfNoNodeIsRefusedByItsShape) {
  const Pair p = leaf_and_inner();
  const auto refused = [](const std::string& img, std::uint64_t a, const char* want) {
    auto n = fresh_node();
    const char* why = decode_node_image(resealed(img).data(), kTree, a, n.get());
    ASSERT_NE(why, nullptr) << want;
    EXPECT_STREQ(why, want);
  };
  const auto count = get<std::uint16_t>(p.leaf, offsetof(Node, count));
  ASSERT_GE(count, 2u);
  {
    std::string img = p.leaf;
    put<std::uint16_t>(&img, offsetof(Node, count), Node::kMaxSlots + 1);
    refused(img, p.leaf_address, "node image with more entries than a node holds");
  }
  {
    std::string img = p.leaf;
    put<std::uint8_t>(&img, offsetof(Node, level), kMaxLevels);
    refused(img, p.leaf_address, "node image with an impossible level");
  }
  {
    std::string img = p.leaf;
    put<std::uint16_t>(&img, offsetof(Node, heap_begin), Node::kHeader + count * kEntryBytes - 8);
    refused(img, p.leaf_address, "key heap overlaps the entry arrays");
  }
  {
    std::string img = p.leaf;  // the first two heads swapped: keys out of order
    const std::size_t h0 = Node::kHeader;
    const auto a = get<std::uint64_t>(img, h0);
    const auto b = get<std::uint64_t>(img, h0 + 8);
    put(&img, h0, b);
    put(&img, h0 + 8, a);
    auto n = fresh_node();
    EXPECT_NE(decode_node_image(resealed(img).data(), kTree, p.leaf_address, n.get()), nullptr);
  }
  {
    std::string img = p.leaf;
    put<std::uint64_t>(&img, offsetof(Node, leftmost), 0x1001);
    refused(img, p.leaf_address, "leaf image with a leftmost child");
  }
  {
    std::string img = p.inner;  // a child named by a pointer, not an address
    put<std::uint64_t>(&img, offsetof(Node, leftmost), 0x1000);
    refused(img, p.inner_address, "inner node image whose leftmost child is no address");
  }
  {
    std::string img = p.inner;
    const auto ic = get<std::uint16_t>(img, offsetof(Node, count));
    ASSERT_GE(ic, 1u);
    put<std::uint64_t>(&img, Node::kHeader + ic * 8 + offsetof(Tail, value), 0x2000);
    refused(img, p.inner_address, "inner node image whose child is no address");
  }
  {
    std::string img = p.leaf;  // a key claimed longer than its head, with no suffix in the heap
    const auto len_at = Node::kHeader + count * 8 + offsetof(Tail, len);
    put<std::uint8_t>(&img, len_at, 200);
    auto n = fresh_node();
    EXPECT_NE(decode_node_image(resealed(img).data(), kTree, p.leaf_address, n.get()), nullptr);
  }
}

}  // namespace
}  // namespace braid::index
