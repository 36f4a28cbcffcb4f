// The simulated disk of the crash and fault tests (after TigerBeetle's simulated storage and
// SQLite's crash tests): an in-process FileSystem that keeps, per file, the durable image and
// the writes not yet synced, and per directory the durable and the volatile names.
//
//   * Asynchronous requests complete after a seeded number of polls, in seeded order.
//   * power_loss() applies to each unsynced write one of: persist, drop, tear at a 512-byte
//     boundary, corrupt one 512-byte sector; names created, renamed or removed since the last
//     sync_dir are rolled back. Directories themselves are durable once created.
//   * crash_after(k) makes the k-th mutating operation the last one to take effect: every later
//     one fails with EIO ("power lost") until power_loss().
//   * inject() fails the n-th write or sync with EIO, ENOSPC, a short write, or EIO on sync,
//     once or for good. A failed sync drops the file's unsynced writes from the durable path
//     (what Linux does to dirty pages after a writeback error: the fsyncgate lesson).
//
// Thread-safe (one mutex); workers each get their own queue.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "storage/file_system.h"
#include "util/random.h"

namespace braid::storage {

class SimFileSystem final : public FileSystem {
 public:
  enum class Fault : std::uint8_t { kNone, kEio, kEnospc, kShortWrite, kSyncEio, kReadEio };
  enum class Damage : std::uint8_t { kDropAll, kPersistAll, kTear, kCorrupt, kRandom };
  static constexpr int kDamageKinds = 5;

  explicit SimFileSystem(std::uint64_t seed, std::uint32_t max_latency_polls = 3);

  // Fails the n-th write (kEio, kEnospc, kShortWrite), sync (kSyncEio) or read, synchronous or
  // asynchronous (kReadEio), counted from now; `forever`: that one and every later one.
  void inject(Fault fault, std::uint64_t nth, bool forever);
  // Narrows the injected fault's writes and reads (and their count) to files whose name at
  // creation contains `part` (empty: every file). A test that fills the disk for one kind of
  // file only (node segments) keeps the log writing; inject() keeps the filter.
  void fault_only(std::string part);
  // Power is lost right after the k-th mutating operation from now (0: never).
  void crash_after(std::uint64_t k);
  bool crashed() const;
  // Mutating operations (writes, syncs, truncates, creates, renames, removes, directory syncs)
  // that took effect so far.
  std::uint64_t ops() const;
  // Faults that fired.
  std::uint64_t faults_fired() const;
  // A copy of the whole disk state (open files are not carried over).
  std::unique_ptr<SimFileSystem> clone(std::uint64_t seed) const;
  // Power loss: damages the unsynced state, forgets open files, clears faults and the crash.
  void power_loss(Damage damage, std::uint64_t seed);
  // A stalled disk: while held, asynchronous requests do not complete (a poll answers nothing;
  // a waiting poll returns nothing after 100 us, as a wait that timed out). The durability-wait
  // tests hold a commit in flight. Release before closing a database on it.
  void hold_io(bool held) { held_.store(held, std::memory_order_release); }
  bool io_held() const { return held_.load(std::memory_order_acquire); }
  // Test helpers: a file's current (volatile) bytes, and an overwrite that bypasses the model.
  bool peek(const std::string& path, std::string* out) const;
  void poke(const std::string& path, std::uint64_t offset, const std::string& bytes, bool create);

  std::string name() const override { return "sim"; }
  Status open_dir(const std::string& dir, bool create) override;
  Status lock_dir(const std::string& dir, bool create) override;
  Status list(const std::string& dir, std::vector<std::string>* names) override;
  Status sync_dir(const std::string& dir) override;
  Status rename(const std::string& from, const std::string& to) override;
  Status remove(const std::string& path) override;
  Result<FileId> open(const std::string& path, const OpenOptions& options) override;
  void close(FileId file) override;
  Result<std::uint64_t> size(FileId file) override;
  Status read(FileId file, std::uint64_t offset, std::size_t len, char* out,
              std::size_t* got) override;
  Status write(FileId file, std::uint64_t offset, const char* data, std::size_t len) override;
  Status sync(FileId file) override;
  Status truncate(FileId file, std::uint64_t size) override;
  Result<std::unique_ptr<IoQueue>> make_queue(std::uint32_t depth) override;

  // Used by the queues (under the lock): executes one request as of now.
  std::int64_t execute(const IoRequest& request);

 private:
  struct Pending {
    bool truncate;
    std::uint64_t offset;  // truncate: the new size
    std::string data;
  };
  struct Inode {
    std::string name;  // at creation (fault_only)
    std::string durable;
    std::string current;
    std::vector<Pending> pending;
  };
  enum class Kind : std::uint8_t { kWrite, kSync, kMeta, kRead };
  // Counts a mutating operation; false (with *err) when it must fail instead.
  // `inode`: the file a write or a read touches (-1 for metadata and syncs).
  bool begin_op(Kind kind, int inode, int* err, std::size_t* short_len, std::size_t len);
  // A metadata operation's begin_op: its failure as a Status naming `what`.
  Status meta_op(const std::string& what);
  void end_op();
  std::int64_t do_write(int inode, std::uint64_t offset, const char* data, std::size_t len);
  std::int64_t do_sync(int inode);
  std::int64_t do_read(int inode, std::uint64_t offset, char* out, std::size_t len);
  int inode_of(FileId f) const;
  // Frees the bytes of every file nothing can reach any more: no name, no durable name (a crash
  // would bring it back), no open handle. A database that creates and removes files all the
  // time (node segments) otherwise keeps every one it ever wrote. Under mu_.
  void free_unreachable();
  static std::string parent(const std::string& path);

  mutable std::mutex mu_;
  util::Rng rng_;
  std::uint32_t max_latency_;
  std::uint32_t queues_ = 0;
  std::vector<Inode> inodes_;
  std::map<std::string, int> names_;
  std::map<std::string, int> durable_names_;
  std::map<std::string, bool> dirs_;
  std::vector<int> fds_;  // FileId -> inode (-1: closed)
  std::uint64_t ops_ = 0;
  std::uint64_t crash_at_ = 0;
  bool crashed_ = false;
  Fault fault_ = Fault::kNone;
  std::uint64_t fault_nth_ = 0;
  bool fault_forever_ = false;
  std::string fault_only_;
  std::uint64_t writes_seen_ = 0;
  std::uint64_t syncs_seen_ = 0;
  std::uint64_t reads_seen_ = 0;
  std::uint64_t faults_fired_ = 0;
  std::atomic<bool> held_{false};

  friend class SimQueue;
};

}  // namespace braid::storage
