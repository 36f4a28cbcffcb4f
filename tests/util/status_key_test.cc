#include <braid/braid.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "util/random.h"

namespace braid {
namespace {

TEST(Status, OkAndErrorsCarryCodeAndMessage) {
  Status ok;
  EXPECT_TRUE(ok.is_ok());
  EXPECT_EQ(ok.to_string(), "OK");
  Status e = Status::invalid_argument("key is empty");
  EXPECT_FALSE(e.is_ok());
  EXPECT_EQ(e.code(), Code::kInvalidArgument);
  EXPECT_EQ(e.to_string(), "InvalidArgument: key is empty");
  Status copy = e;
  EXPECT_EQ(copy.message(), "key is empty");
  EXPECT_EQ(Status::not_found().to_string(), "NotFound");
}

TEST(Result, HoldsValueOrStatus) {
  Result<std::string> v(std::string("x"));
  ASSERT_TRUE(v.is_ok());
  EXPECT_EQ(*v, "x");
  Result<std::string> e(Status::busy("full"));
  EXPECT_FALSE(e.is_ok());
  EXPECT_EQ(e.code(), Code::kBusy);
  EXPECT_DEATH((void)e.value(), "error Result");
}

// Encodings must sort like the values they encode.
// `T x = *f();` moves the value out of the temporary Result (Transaction, Pending are
// move-only).
TEST(Result, MovesTheValueOutOfATemporary) {
  auto make = [] { return Result<std::unique_ptr<int>>(std::make_unique<int>(9)); };
  std::unique_ptr<int> from_temporary = *make();
  ASSERT_NE(from_temporary, nullptr);
  EXPECT_EQ(*from_temporary, 9);
  Result<std::unique_ptr<int>> named(std::make_unique<int>(8));
  std::unique_ptr<int> moved = *std::move(named);
  EXPECT_EQ(*moved, 8);
}

TEST(Key, IntegersSortNumerically) {
  util::Rng rng(7);
  std::vector<std::int64_t> vals = {0, 1, -1, INT64_MIN, INT64_MAX, 255, 256, -256};
  for (int i = 0; i < 2000; ++i) vals.push_back(static_cast<std::int64_t>(rng.next()));
  for (std::int64_t a : vals) {
    std::int64_t b = vals[rng.uniform(vals.size())];
    Key ka, kb;
    ka.i64(a);
    kb.i64(b);
    EXPECT_EQ(a < b, ka.view() < kb.view()) << a << " vs " << b;
    std::string_view in = ka.view();
    std::int64_t back;
    ASSERT_TRUE(keycodec::read_i64(in, &back));
    EXPECT_EQ(back, a);
    EXPECT_TRUE(in.empty());
  }
  Key u;
  u.u32(0x01020304).u16(0x0506).u8(7);
  EXPECT_EQ(u.view(), std::string_view("\x01\x02\x03\x04\x05\x06\x07", 7));
}

TEST(Key, CompositeKeysWithStringsSortAsTuples) {
  util::Rng rng(11);
  const std::vector<std::string> words = {"",   "a", std::string("a\0", 2),  std::string("a\0b", 3),
                                          "ab", "b", std::string(1, '\xff'), "abc"};
  using Tuple = std::tuple<std::string, std::uint32_t>;
  std::vector<Tuple> tuples;
  for (const auto& w : words) {
    for (std::uint32_t n : {0u, 1u, 70000u}) tuples.emplace_back(w, n);
  }
  for (const auto& a : tuples) {
    for (const auto& b : tuples) {
      Key ka, kb;
      ka.str(std::get<0>(a)).u32(std::get<1>(a));
      kb.str(std::get<0>(b)).u32(std::get<1>(b));
      EXPECT_EQ(a < b, ka.view() < kb.view());
      EXPECT_EQ(a == b, ka.view() == kb.view());
    }
    Key k;
    k.str(std::get<0>(a)).u32(std::get<1>(a));
    std::string_view in = k.view();
    std::string s;
    std::uint32_t n;
    ASSERT_TRUE(keycodec::read_str(in, &s));
    ASSERT_TRUE(keycodec::read_u32(in, &n));
    EXPECT_EQ(s, std::get<0>(a));
    EXPECT_EQ(n, std::get<1>(a));
  }
}

TEST(Key, OverflowIsSticky) {
  Key k;
  k.append_bytes(std::string(250, 'x'));
  EXPECT_TRUE(k.valid());
  k.u64(1);
  EXPECT_TRUE(k.overflowed());
  EXPECT_FALSE(k.valid());
  k.u8(1);
  EXPECT_FALSE(k.valid());
  k.clear();
  EXPECT_FALSE(k.valid());  // empty keys are not valid either
  k.u8(1);
  EXPECT_TRUE(k.valid());
}

// A string fits when its escaped bytes and terminator do, whether it holds a NUL (escaped byte
// by byte) or not (copied at once): the same limit on both paths, and the same bytes.
TEST(Key, StringsFillTheKeyToTheSameLimitWithOrWithoutANul) {
  const std::string plain(kMaxKeyBytes - 2, 'x');
  Key k;
  k.str(plain);
  ASSERT_TRUE(k.valid());
  EXPECT_EQ(k.size(), kMaxKeyBytes);
  EXPECT_EQ(k.view().substr(0, plain.size()), plain);
  EXPECT_EQ(k.view().substr(plain.size()), std::string_view("\x00\x01", 2));
  Key longer;
  longer.str(plain + "x");
  EXPECT_TRUE(longer.overflowed());
  std::string nul(kMaxKeyBytes - 3, 'x');
  nul[5] = '\0';  // escaped to two bytes
  Key with_nul;
  with_nul.str(nul);
  ASSERT_TRUE(with_nul.valid());
  EXPECT_EQ(with_nul.size(), kMaxKeyBytes);
  Key longer_nul;
  longer_nul.str(nul + "x");
  EXPECT_TRUE(longer_nul.overflowed());
  Key after;  // an appended string after other components takes the same path
  after.u32(7).str("name").u8(1);
  EXPECT_EQ(after.view(), std::string_view("\0\0\0\x07name\x00\x01\x01", 11));
}

TEST(Key, MalformedStringsAreRejected) {
  std::string out;
  std::string_view unterminated("abc", 3);
  EXPECT_FALSE(keycodec::read_str(unterminated, &out));
  std::string_view bad_escape("a\0\x05", 3);
  EXPECT_FALSE(keycodec::read_str(bad_escape, &out));
  std::string_view short_int("\x01", 1);
  std::uint32_t v;
  EXPECT_FALSE(keycodec::read_u32(short_int, &v));
}

}  // namespace
}  // namespace braid
