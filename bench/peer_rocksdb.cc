// RocksDB behind PeerSession, with OptimisticTransactionDB: a read-only transaction is one
// snapshot read (every get and scan at one snapshot); an updating one is an optimistic
// transaction with a snapshot, validated at commit (Busy -> Conflict: first committer wins,
// as snapshot isolation). Async commit writes the WAL without syncing it; durable syncs it.
// By default the block cache is sized to hold the loaded data, so the runs measure an in-memory
// store; PeerConfig::cache_bytes bounds it instead (one cache for everything, direct reads).
#include <rocksdb/cache.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/table.h>
#include <rocksdb/utilities/optimistic_transaction_db.h>
#include <rocksdb/utilities/transaction.h>
#include <rocksdb/version.h>
#include <rocksdb/write_buffer_manager.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>

#include "peer.h"

namespace braid::bench {
namespace {

Status rocks_error(const char* what, const rocksdb::Status& s) {
  return Status::io_error(std::string("rocksdb ") + what + ": " + s.ToString());
}

rocksdb::Slice slice(std::string_view s) { return {s.data(), s.size()}; }

class RocksSession final : public PeerSession {
 public:
  RocksSession(rocksdb::OptimisticTransactionDB* db, bool durable) : db_(db) {
    write_.sync = durable;
    txn_options_.set_snapshot = true;
  }
  ~RocksSession() override {
    abort();
    delete txn_;
  }

  Status begin(bool read_only) override {
    read_only_ = read_only;
    if (read_only) {
      read_.snapshot = db_->GetSnapshot();
      return Status::ok();
    }
    txn_ = db_->BeginTransaction(write_, txn_options_, txn_);  // reuses the object
    read_.snapshot = txn_->GetSnapshot();
    open_ = true;
    return Status::ok();
  }
  Result<std::string_view> get(std::string_view key) override {
    value_.Reset();
    const rocksdb::Status s =
        read_only_ ? db_->Get(read_, db_->DefaultColumnFamily(), slice(key), &value_)
                   : txn_->Get(read_, db_->DefaultColumnFamily(), slice(key), &value_);
    if (s.IsNotFound()) return Status::not_found();
    if (!s.ok()) return rocks_error("get", s);
    return std::string_view(value_.data(), value_.size());
  }
  Status put(std::string_view key, std::string_view value) override {
    const rocksdb::Status s = txn_->Put(slice(key), slice(value));
    return s.ok() ? Status::ok() : rocks_error("put", s);
  }
  Status insert(std::string_view key, std::string_view value) override {
    value_.Reset();
    const rocksdb::Status g =
        txn_->GetForUpdate(read_, db_->DefaultColumnFamily(), slice(key), &value_);
    if (g.ok()) return Status(Code::kDuplicate);
    if (!g.IsNotFound()) return rocks_error("get", g);
    return put(key, value);
  }
  Status scan(std::string_view from, std::size_t limit, ScanCallback callback) override {
    std::unique_ptr<rocksdb::Iterator> it(read_only_ ? db_->NewIterator(read_)
                                                     : txn_->GetIterator(read_));
    std::size_t n = 0;
    for (it->Seek(slice(from)); it->Valid() && n < limit; it->Next(), ++n) {
      if (!callback({it->key().data(), it->key().size()},
                    {it->value().data(), it->value().size()})) {
        break;
      }
    }
    return it->status().ok() ? Status::ok() : rocks_error("scan", it->status());
  }
  Status commit() override {
    if (read_only_) {
      release_snapshot();
      return Status::ok();
    }
    const rocksdb::Status s = txn_->Commit();
    open_ = false;
    read_.snapshot = nullptr;
    if (s.IsBusy() || s.IsTryAgain()) return Status::conflict();
    return s.ok() ? Status::ok() : rocks_error("commit", s);
  }
  void abort() override {
    if (read_only_) {
      release_snapshot();
      return;
    }
    if (open_) (void)txn_->Rollback();
    open_ = false;
    read_.snapshot = nullptr;
  }

 private:
  void release_snapshot() {
    if (read_.snapshot != nullptr) db_->ReleaseSnapshot(read_.snapshot);
    read_.snapshot = nullptr;
  }

  rocksdb::OptimisticTransactionDB* db_;
  rocksdb::WriteOptions write_;
  rocksdb::OptimisticTransactionOptions txn_options_;
  rocksdb::ReadOptions read_;
  rocksdb::Transaction* txn_ = nullptr;
  rocksdb::PinnableSlice value_;
  bool read_only_ = false;
  bool open_ = false;
};

class Rocks final : public PeerEngine {
 public:
  ~Rocks() override { delete db_; }
  Status open(const PeerConfig& c) {
    durable_ = c.durable;
    bounded_ = c.cache_bytes != 0;
    std::error_code ec;
    std::filesystem::create_directories(c.dir, ec);
    if (ec) return Status::io_error("cannot create " + c.dir + ": " + ec.message());
    rocksdb::Options o;
    o.create_if_missing = true;
    o.error_if_exists = true;
    rocksdb::BlockBasedTableOptions t;
    t.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
    t.cache_index_and_filter_blocks = true;
    if (c.cache_bytes == 0) {
      // A cache that holds every block of the loaded data (with room for index and filters).
      const std::uint64_t data = c.records * (c.key_bytes + c.value_bytes + 32);
      t.block_cache =
          rocksdb::NewLRUCache(std::max<std::uint64_t>(2 * data, std::uint64_t{64} << 20));
    } else {
      // The bound a user of an embedded store under a memory limit sets: one LRU cache of
      // cache_bytes, with the memtables' memory charged to it (a quarter of it at most, two
      // memtables), index and filter blocks in it (the first level's pinned, as RocksDB's
      // tuning guide advises), and reads that bypass the page cache, which would otherwise
      // hold the data outside the bound and outside the process's RSS.
      // Shards of at least 8 MiB. RocksDB's default cuts even a small cache into 64 shards,
      // and then two threads ran at a hundredth of one (2 M records under 48 MiB: 757 txn/s
      // on 2 threads against 21 K on 1; with 4 shards 91 K and 43 K). The likely cause: a
      // table file's filter and index blocks (megabytes with 8-byte values) do not fit one
      // shard, so they are read from the disk again and again.
      int shard_bits = 0;
      while (shard_bits < 6 && (c.cache_bytes >> (shard_bits + 1)) >= (std::uint64_t{8} << 20)) {
        ++shard_bits;
      }
      t.block_cache = rocksdb::NewLRUCache(c.cache_bytes, shard_bits);
      t.pin_l0_filter_and_index_blocks_in_cache = true;
      const std::uint64_t memtables = std::max<std::uint64_t>(c.cache_bytes / 4, 512 << 10);
      o.write_buffer_manager =
          std::make_shared<rocksdb::WriteBufferManager>(memtables, t.block_cache);
      o.write_buffer_size = memtables / 2;
      o.max_write_buffer_number = 2;
      o.use_direct_reads = true;
      o.use_direct_io_for_flush_and_compaction = true;
    }
    o.table_factory.reset(rocksdb::NewBlockBasedTableFactory(t));
    const rocksdb::Status s = rocksdb::OptimisticTransactionDB::Open(o, c.dir, &db_);
    return s.ok() ? Status::ok() : rocks_error(("open " + c.dir).c_str(), s);
  }
  std::string name() const override { return "rocksdb"; }
  std::string version() const override {
    return std::to_string(ROCKSDB_MAJOR) + "." + std::to_string(ROCKSDB_MINOR) + "." +
           std::to_string(ROCKSDB_PATCH);
  }
  std::unique_ptr<PeerSession> session() override {
    return std::make_unique<RocksSession>(db_, durable_);
  }
  // The load leaves memtables and level-0 files: flush and compact so every run reads the
  // same settled tree.
  Status settle() override {
    if (rocksdb::Status s = db_->Flush(rocksdb::FlushOptions()); !s.ok()) {
      return rocks_error("flush", s);
    }
    if (rocksdb::Status s = db_->CompactRange(rocksdb::CompactRangeOptions(), nullptr, nullptr);
        !s.ok()) {
      return rocks_error("compact", s);
    }
    if (!bounded_) return Status::ok();
    // Under a bound, direct I/O leaves the block cache empty after the compaction, while
    // BraidDB's bulk load leaves its budget full of records: one pass over the data fills the
    // cache (up to its size), so both start warm and the runs measure the bound, not the
    // warm-up (at QD 1 a 1.6 GiB cache takes minutes to fill from misses alone).
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
    }
    return it->status().ok() ? Status::ok() : rocks_error("warm-up scan", it->status());
  }

 private:
  rocksdb::OptimisticTransactionDB* db_ = nullptr;
  bool durable_ = false;
  bool bounded_ = false;  // PeerConfig::cache_bytes set
};

}  // namespace

Result<std::unique_ptr<PeerEngine>> open_rocksdb(const PeerConfig& config) {
  auto e = std::make_unique<Rocks>();
  if (Status s = e->open(config); !s.is_ok()) return s;
  return std::unique_ptr<PeerEngine>(std::move(e));
}

}  // namespace braid::bench
