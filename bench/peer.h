// Peer engines behind braid-bench ycsb's transactions (--engine lmdb|rocksdb): the same keys,
// values and transaction shapes as BraidDB's runs, through one small session interface. Each
// adapter lives in its own file (peer_lmdb.cc, peer_rocksdb.cc) and is compiled only where its
// Debian package is installed; elsewhere open_peer answers why it is missing.
#pragma once

#include <braid/database.h>
#include <braid/status.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace braid::bench {

struct PeerConfig {
  std::string dir;       // the engine's directory (created; must be new or empty)
  bool durable = false;  // commits synced to disk (LMDB: no MDB_NOSYNC; RocksDB: sync writes)
  std::uint64_t records = 0;
  std::uint32_t key_bytes = 8;
  std::uint32_t value_bytes = 8;
  // RocksDB: the one cache (block cache, index and filter blocks, memtables charged to it) and
  // direct reads, so the cache is all the memory its data takes; 0: sized to hold the data.
  std::uint64_t cache_bytes = 0;
};

// One application thread's handle. Between begin and commit/abort it holds one transaction:
// LMDB a read-only or the write transaction, RocksDB a snapshot read or an optimistic
// transaction. Views returned by get stay valid until the next call.
class PeerSession {
 public:
  virtual ~PeerSession() = default;
  [[nodiscard]] virtual Status begin(bool read_only) = 0;
  [[nodiscard]] virtual Result<std::string_view> get(std::string_view key) = 0;
  // A blind write of an existing key (YCSB's update), or an upsert.
  [[nodiscard]] virtual Status put(std::string_view key, std::string_view value) = 0;
  // Duplicate when the key exists.
  [[nodiscard]] virtual Status insert(std::string_view key, std::string_view value) = 0;
  // At most `limit` records from `from` on, in key order.
  [[nodiscard]] virtual Status scan(std::string_view from, std::size_t limit,
                                    ScanCallback callback) = 0;
  // Conflict when the engine refuses the commit (RocksDB's optimistic validation).
  [[nodiscard]] virtual Status commit() = 0;
  virtual void abort() = 0;
};

class PeerEngine {
 public:
  virtual ~PeerEngine() = default;
  virtual std::string name() const = 0;
  virtual std::string version() const = 0;
  virtual std::unique_ptr<PeerSession> session() = 0;
  // Called once after the load: compaction, so the runs read a settled store.
  [[nodiscard]] virtual Status settle() { return Status::ok(); }
};

// "lmdb" or "rocksdb". InvalidArgument for another name; NotFound (with the package to install)
// when this build has no such adapter.
Result<std::unique_ptr<PeerEngine>> open_peer(const std::string& engine, const PeerConfig& config);
// The peers this build has.
std::vector<std::string> built_peers();

// Adapters (defined only where their library was found at configure time).
Result<std::unique_ptr<PeerEngine>> open_lmdb(const PeerConfig& config);
Result<std::unique_ptr<PeerEngine>> open_rocksdb(const PeerConfig& config);

}  // namespace braid::bench
