// The peer adapters (bench/peer.h) through their session interface, at tiny size: what braid-
// bench's transactions ask of them answers as it does on BraidDB. A build without an adapter
// skips its cases.
#include "peer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace braid::bench {
namespace {

class PeerAdapter : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const std::vector<std::string> built = built_peers();
    if (std::find(built.begin(), built.end(), GetParam()) == built.end()) {
      Result<std::unique_ptr<PeerEngine>> e = open_peer(GetParam(), {});
      ASSERT_FALSE(e.is_ok());
      EXPECT_EQ(e.code(), Code::kNotFound) << e.status().to_string();
      GTEST_SKIP() << "this build has no " << GetParam() << " adapter";
    }
    dir_ = (std::filesystem::temp_directory_path() /
            ("braid-peer-test-" + GetParam() + "-" + std::to_string(::getpid())))
               .string();
    std::filesystem::remove_all(dir_);
    PeerConfig c;
    c.dir = dir_;
    c.records = 16;
    Result<std::unique_ptr<PeerEngine>> e = open_peer(GetParam(), c);
    ASSERT_TRUE(e.is_ok()) << e.status().to_string();
    engine_ = std::move(e).value();
  }
  void TearDown() override {
    engine_.reset();
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  std::string dir_;
  std::unique_ptr<PeerEngine> engine_;
};

TEST_P(PeerAdapter, WritesReadsScansAndRefusesDuplicates) {
  EXPECT_EQ(engine_->name(), GetParam());
  EXPECT_FALSE(engine_->version().empty());
  std::unique_ptr<PeerSession> s = engine_->session();
  ASSERT_TRUE(s->begin(false).is_ok());
  for (const char* k : {"k3", "k1", "k2"}) ASSERT_TRUE(s->insert(k, std::string("v") + k).is_ok());
  EXPECT_EQ(s->insert("k1", "again").code(), Code::kDuplicate);
  ASSERT_TRUE(s->commit().is_ok());

  ASSERT_TRUE(s->begin(false).is_ok());
  ASSERT_TRUE(s->put("k2", "new").is_ok());
  ASSERT_TRUE(s->commit().is_ok());

  ASSERT_TRUE(s->begin(true).is_ok());
  Result<std::string_view> got = s->get("k2");
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  EXPECT_EQ(*got, "new");
  EXPECT_EQ(s->get("absent").code(), Code::kNotFound);
  std::vector<std::string> keys;
  ASSERT_TRUE(s->scan("k1", 2, [&](std::string_view k, std::string_view) {
                 keys.emplace_back(k);
                 return true;
               }).is_ok());
  EXPECT_EQ(keys, (std::vector<std::string>{"k1", "k2"}));
  ASSERT_TRUE(s->commit().is_ok());

  // An aborted write leaves nothing.
  ASSERT_TRUE(s->begin(false).is_ok());
  ASSERT_TRUE(s->put("k9", "gone").is_ok());
  s->abort();
  ASSERT_TRUE(s->begin(true).is_ok());
  EXPECT_EQ(s->get("k9").code(), Code::kNotFound);
  ASSERT_TRUE(s->commit().is_ok());
}

TEST(PeerAdapterNames, AnUnknownEngineIsInvalidArgument) {
  Result<std::unique_ptr<PeerEngine>> e = open_peer("sqlite", {});
  ASSERT_FALSE(e.is_ok());
  EXPECT_EQ(e.code(), Code::kInvalidArgument);
}

INSTANTIATE_TEST_SUITE_P(Peers, PeerAdapter, ::testing::Values("lmdb", "rocksdb"),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

}  // namespace
}  // namespace braid::bench
