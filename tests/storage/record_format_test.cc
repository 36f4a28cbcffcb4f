// Write records verify on their own and sit at 16-byte multiples of their segment file: what a
// cold entry's address (mvcc/version.h) needs to read one record back without its block.
#include <gtest/gtest.h>

#include <braid/braid.h>

#include <map>
#include <string>

#include "durability_util.h"
#include "storage/log_format.h"
#include "storage/sim_fs.h"
#include "util/random.h"

namespace braid::storage {
namespace {

std::string encoded(WriteOp op, std::uint32_t table, std::string_view key, std::string_view value,
                    std::uint64_t cts) {
  std::string out(
      record_size(static_cast<std::uint32_t>(key.size()), static_cast<std::uint32_t>(value.size())),
      '\xee');
  encode_record(out.data(), op, table, key, value, cts);
  return out;
}

TEST(RecordFormat, RoundTripsEverySizeAndPadsToSixteen) {
  util::Rng rng(7);
  for (int i = 0; i < 2000; ++i) {
    const std::string key(1 + rng.uniform(kMaxKeyBytes), static_cast<char>('a' + i % 26));
    const bool remove = i % 5 == 0;
    const std::string value = remove ? "" : std::string(rng.uniform(3000), static_cast<char>(i));
    const std::uint64_t cts = rng.next() >> 1;  // the top bit is refused (below)
    const std::uint32_t table = static_cast<std::uint32_t>(rng.uniform(100));
    const std::string rec =
        encoded(remove ? WriteOp::kRemove : WriteOp::kPut, table, key, value, cts);
    ASSERT_EQ(rec.size() % kRecordAlign, 0u);
    ASSERT_LT(rec.size() - (kRecordHeaderBytes + key.size() + value.size()), kRecordAlign);
    for (std::size_t b = kRecordHeaderBytes + key.size() + value.size(); b < rec.size(); ++b) {
      ASSERT_EQ(rec[b], 0) << "padding byte " << b;
    }
    RecordView v;
    ASSERT_EQ(decode_record(rec.data(), rec.size(), RecordCheck::kCrc, &v), "");
    EXPECT_EQ(v.op, remove ? WriteOp::kRemove : WriteOp::kPut);
    EXPECT_EQ(v.table, table);
    EXPECT_EQ(v.cts, cts);
    EXPECT_EQ(v.key, key);
    EXPECT_EQ(v.value, value);
    EXPECT_EQ(v.size, rec.size());
  }
}

// A cold read gets exactly a record's bytes: any damage to header, key or value, and any
// shortfall, must be refused.
TEST(RecordFormat, EveryDamagedByteAndEveryTruncationIsRefused) {
  const std::string key = "user:000042";
  const std::string value(37, 'v');
  const std::string rec = encoded(WriteOp::kPut, 3, key, value, 123456789);
  const std::size_t covered = kRecordHeaderBytes + key.size() + value.size();
  for (std::size_t at = 0; at < covered; ++at) {
    for (const char mask : {'\x01', '\x80', '\xff'}) {
      std::string bad = rec;
      bad[at] = static_cast<char>(bad[at] ^ mask);
      RecordView v;
      EXPECT_NE(decode_record(bad.data(), bad.size(), RecordCheck::kCrc, &v), "") << "byte " << at;
    }
  }
  for (std::size_t n = 0; n < rec.size(); ++n) {
    RecordView v;
    EXPECT_NE(decode_record(rec.data(), n, RecordCheck::kCrc, &v), "") << n << " bytes";
  }
}

// A timestamp with the top bit set is an in-memory owner tag, never a commit's: a checkpoint
// once wrote such tags, and a record carrying one must be refused, not loaded as a version
// whose owner readers would wait on forever.
TEST(RecordFormat, AnOwnerTagAsTimestampIsRefused) {
  for (const std::uint64_t cts :
       {std::uint64_t{1} << 63, (std::uint64_t{1} << 63) | 0x4b000b, ~std::uint64_t{0}}) {
    const std::string rec = encoded(WriteOp::kPut, 1, "k", "v", cts);
    RecordView v;
    EXPECT_EQ(decode_record(rec.data(), rec.size(), RecordCheck::kCrc, &v),
              "write record with an impossible timestamp");
  }
  const std::string ok = encoded(WriteOp::kPut, 1, "k", "v", (std::uint64_t{1} << 63) - 1);
  RecordView v;
  EXPECT_EQ(decode_record(ok.data(), ok.size(), RecordCheck::kCrc, &v), "");
}

// Every write record of a real log, written by workers and application threads with values of
// many sizes, starts at a multiple of 16 in its segment file and decodes from its own bytes.
TEST(RecordFormat, RecordsInTheLogAreAddressable) {
  auto fs = std::make_shared<SimFileSystem>(3);
  Options o = test::wl_options(0);
  std::map<std::string, std::string> expect;
  {
    auto db = test::open_sim(o, fs);
    ASSERT_TRUE(db.is_ok()) << db.status().to_string();
    Table* t = *(*db)->create_table("t");
    util::Rng rng(11);
    for (int i = 0; i < 400; ++i) {
      Transaction tx = (*db)->begin().value();
      for (int w = 0; w < 1 + i % 3; ++w) {
        const std::string key = "k" + std::to_string(rng.uniform(150));
        const std::string value(rng.uniform(700), static_cast<char>('a' + i % 26));
        ASSERT_TRUE(tx.put(*t, key, value).is_ok());
        expect[key] = value;
      }
      ASSERT_TRUE(tx.commit().is_ok());
    }
  }
  std::vector<std::string> names;
  ASSERT_TRUE(fs->list("/db", &names).is_ok());
  std::map<std::string, std::string> newest;  // key -> value of its highest-cts record
  std::map<std::string, std::uint64_t> newest_cts;
  std::uint64_t records = 0;
  for (const std::string& name : names) {
    LogName ln;
    if (!parse_log_file_name(name, &ln)) continue;
    std::string img;
    ASSERT_TRUE(fs->peek("/db/" + name, &img));
    // Blocks (the next-segment marker included) are padded to 16, so a segment grows in
    // 16-byte steps and every later block stays aligned.
    ASSERT_EQ(img.size() % kRecordAlign, 0u) << name;
    std::uint64_t off = kSegmentHeaderBytes;
    while (off + kBlockHeaderBytes <= img.size()) {
      ASSERT_EQ(off % kRecordAlign, 0u) << name;
      const auto b = load<BlockHeader>(img.data() + off);
      if (b.magic != kBlockMagic) break;
      if (b.kind == static_cast<std::uint32_t>(BlockKind::kData)) {
        std::uint64_t p = off + kBlockHeaderBytes;
        for (std::uint32_t t = 0; t < b.txn_count; ++t) {
          const auto th = load<TxnHeader>(img.data() + p);
          p += kTxnHeaderBytes;
          for (std::uint32_t w = 0; w < th.nwrites; ++w) {
            ASSERT_EQ(p % kRecordAlign, 0u) << name << " at " << p;
            // Only the record's own bytes, as a cold read of its address would fetch them.
            const auto rh = load<RecordHeader>(img.data() + p);
            const std::string alone = img.substr(p, record_size(rh.key_len, rh.value_len));
            RecordView v;
            ASSERT_EQ(decode_record(alone.data(), alone.size(), RecordCheck::kCrc, &v), "")
                << name << " at " << p;
            ASSERT_EQ(v.cts, th.cts);
            const std::string k(v.key);
            if (newest_cts[k] < v.cts) {
              newest_cts[k] = v.cts;
              newest[k] = std::string(v.value);
            }
            p += v.size;
            ++records;
          }
        }
      }
      off += b.padded_len;
    }
  }
  EXPECT_GT(records, 400u);
  EXPECT_EQ(newest, expect);  // the log alone (no checkpoint yet) holds every record's newest value
}

}  // namespace
}  // namespace braid::storage
