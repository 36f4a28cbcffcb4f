// The storage path of the coroutine modes as a stepper that never suspends (engine/access.h's
// pattern: the steppers decide, the drivers wait), so that the nested coroutine (cold_fetch,
// MosaicDB §4.1's selective nesting: the default) and the path inlined into the operation's own
// coroutine (StoragePath::kFlattened, the paper's "flattened" variant of Fig. 11) are one
// algorithm. BRAID_COLD_DRIVE is the one driver loop both expand.
#pragma once

#include <algorithm>
#include <atomic>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <string>
#include <string_view>

#include "engine/cold_store.h"
#include "engine/op_env.h"
#include "engine/table.h"
#include "engine/tx_state.h"
#include "runtime/miss.h"

namespace braid::engine {

class ColdFetch {
 public:
  // What the driver waits for before the next step.
  enum class Wait : std::uint8_t {
    kNone,  // finished: status() and entry()
    kBusy,  // every load is in use: suspend once (a memory-style pause) and step again
    kIo,    // a read in flight: park the slot on load() (IoPark) and step again
  };

  // Rounds are bounded by ColdStore::kMaxMissRounds.

  // `ahead`: a scan's read issued before the scan needs it (ColdStore::join): its first join
  // takes a load only beyond the reserve, and answers kBusy otherwise.
  ColdFetch(OpEnv env, std::atomic<std::uint64_t>* slot, const Table& table, std::string_view key,
            bool ahead = false)
      : env_(env), slot_(slot), table_(table), key_(key), ahead_(ahead) {}
  ColdFetch(const ColdFetch&) = delete;
  ColdFetch& operator=(const ColdFetch&) = delete;
  ~ColdFetch() { BRAID_ASSERT(load_ == nullptr); }  // a driver steps to kNone

  Wait step();
  ColdLoad* load() const { return load_; }
  Status& status() { return status_; }
  std::uint64_t entry() const { return entry_; }

 private:
  OpEnv env_;
  std::atomic<std::uint64_t>* slot_;
  const Table& table_;
  std::string_view key_;
  bool ahead_;
  ColdLoad* load_ = nullptr;  // joined, not yet released
  int round_ = 0;
  Status status_;
  std::uint64_t entry_ = 0;
};

// A scan's cold reads issued ahead of the leaf-batch entry it is at (the coroutine modes, on a
// worker's ring). Entry k's fetch lives in cell k % kMax from its issue until the scan reaches
// k: the scan issues only below at + depth() and consumes every entry below `at` first, so a
// cell has one possible occupant. Every cold entry in [at, next()) has its fetch (drop()
// keeps it so). The reads complete in any order; the scan drives each to its
// end when it gets there, so records are still delivered in key order. The cells are raw
// storage: a scan that meets no cold record pays a few words, not kMax constructions.
class ScanAhead {
 public:
  static constexpr std::uint32_t kMax = 32;

  explicit ScanAhead(std::uint32_t depth) : depth_(depth < kMax ? depth : kMax) {}
  ScanAhead(const ScanAhead&) = delete;
  ScanAhead& operator=(const ScanAhead&) = delete;
  ~ScanAhead() { BRAID_ASSERT(held_ == 0); }  // every fetch was driven to its end and done()

  // Read ahead at all: a depth of 0 or 1 is one read at a time.
  bool on() const { return depth_ > 1; }
  // The scan met a cold record: it reads ahead from there on (until it ends). Before, it does
  // not look at entries twice for nothing.
  void arm() { armed_ = true; }
  bool armed() const { return armed_; }
  // Entries of the batch looked at for issuing so far.
  std::size_t next() const { return next_; }
  // A new leaf batch. Precondition: nothing held.
  void restart() {
    BRAID_ASSERT(held_ == 0);
    next_ = 0;
  }
  // The scan is at entry `at`: entries it passed without a fetch (after a drop()) are not
  // looked at again.
  void catch_up(std::size_t at) {
    if (next_ < at) next_ = at;
  }
  // While the scan is at entry `at` (after catch_up(at)): whether to refill the window now.
  // It is refilled once half of it was consumed, not an entry at a time: a refill's reads go to
  // the ring together (ColdPort::plug), so neighbouring records among them are one extent, and
  // a refill of depth/2 records reads what one record at a time would read in as many reads.
  bool refill_due(std::size_t at) const {
    BRAID_DASSERT(next_ >= at);
    return next_ - at <= depth_ / 2;
  }
  // While the scan is at entry `at` of `n` (after catch_up(at)): whether entry next() is
  // inside the window.
  bool may_issue(std::size_t at, std::size_t n) const {
    BRAID_DASSERT(next_ >= at);
    return next_ < n && next_ < at + depth_;
  }
  // Entry next() needs no read (hot, or left to the scan's own path): look past it.
  void skip() { ++next_; }
  // Entry next()'s fetch; the caller steps it once at once (which issues the read) and tells
  // the outcome: finish() if that step ended it, drop() if every load was busy.
  ColdFetch& start(OpEnv env, std::atomic<std::uint64_t>* slot, const Table& table,
                   std::string_view key) {
    const std::uint32_t c = cell(next_);
    BRAID_ASSERT((held_ & bit(c)) == 0);
    held_ |= bit(c);
    ++next_;
    return *new (cells_[c]) ColdFetch(env, slot, table, key, /*ahead=*/true);
  }
  void finish(std::size_t k) { finished_ |= bit(cell(k)); }
  // Entry k (the last started) found every load busy: it is not issued, and nothing past it
  // will be until the scan gets there. So a scan waits for a free load only while it holds
  // none ahead: scans holding loads while waiting for more could take them all and wait on
  // each other for good.
  void drop(std::size_t k) {
    BRAID_ASSERT(k + 1 == next_);
    done(k);
    next_ = k;
  }
  // Entry k's fetch, if one was started (k at or past the entry the scan is at).
  bool holds(std::size_t k) const { return k < next_ && (held_ & bit(cell(k))) != 0; }
  bool finished(std::size_t k) const { return (finished_ & bit(cell(k))) != 0; }
  ColdFetch& at(std::size_t k) {
    BRAID_ASSERT(holds(k));
    return *std::launder(reinterpret_cast<ColdFetch*>(cells_[cell(k)]));
  }
  // Entry k's fetch is over (driven to its end, or never issued): its cell is free.
  void done(std::size_t k) {
    at(k).~ColdFetch();
    held_ &= ~bit(cell(k));
    finished_ &= ~bit(cell(k));
  }

 private:
  static std::uint32_t cell(std::size_t k) { return static_cast<std::uint32_t>(k % kMax); }
  static std::uint64_t bit(std::uint32_t c) { return std::uint64_t{1} << c; }

  const std::uint32_t depth_;
  bool armed_ = false;
  std::size_t next_ = 0;
  std::uint64_t held_ = 0;
  std::uint64_t finished_ = 0;
  alignas(ColdFetch) unsigned char cells_[kMax][sizeof(ColdFetch)];
};
static_assert(ScanAhead::kMax <= 64, "held_ and finished_ are 64-bit masks");
static_assert(ScanAhead::kMax == kMaxScanReadAhead, "Options::scan_read_ahead fits a scan");

// A scan's own extents (Options::scan_extent_bytes): a scan that meets cold records lying in file
// order reads the file itself, an extent of `bytes` at a time, and takes each record from
// there (verified as a load's read is), without a load, a version or a read per record (Umbra
// §3: a scan reads pages, not tuples). The extent after the one it reads from is issued as soon
// as the scan takes a record from it (backwards for a reverse scan), so the next read is in
// flight while the scan works; consecutive extents do not overlap, so every block is read once, and
// a record that straddles two is put together from both. A record in no extent the scan holds is a
// jump: a new extent starts at it. Jumps in a row whose extents served at most one record each mean
// the records are scattered (updated since the load, moved by checkpoints out of order): from then
// on the scan reads record by record (ScanAhead). Used only where a scan may take a record's value
// without installing it: a snapshot scan (a serializable one registers the versions it read) of
// a table that does not cache reads. Visibility: a cold entry's record was committed before every
// snapshot active when it went cold (eviction's rule), and the scan read the entry after its
// own snapshot began, so the record is the version the snapshot sees; a load would install the
// same. Single-threaded: the scan's worker's.
class ScanExtents {
 public:
  // Extents held at once: the one being read from, the next in flight, and one a straddling
  // record or a jump needs beside them.
  static constexpr std::uint32_t kMax = 3;
  static constexpr std::uint32_t kMaxJumps = 4;
  // An extent after a jump is this long, and each one read on is twice the last, up to the
  // scan's extent size (the kernel's read-ahead ramp): a scan of a few records, or of scattered
  // ones, reads little more than a load would, and a long run reaches full extents at once.
  static constexpr std::uint64_t kFirstBytes = 16u << 10;

  enum class Step : std::uint8_t {
    kServed,  // *rv views the record in an extent, valid until the next step()
    kWait,    // an extent is in flight: park on wait() (IoPark) and step again
    kAlone,   // read this record the usual way (a load)
    kFailed,  // *status: the read failed (IOError) or the record does not verify (Corruption)
  };

  // `bytes` 0: off (scan_extent_bytes 0, or a scan that may not read this way).
  ScanExtents(ColdPort* port, ColdStore* store, std::uint32_t bytes, bool reverse)
      : port_(port), store_(store), bytes_(bytes), reverse_(reverse) {}
  ScanExtents(const ScanExtents&) = delete;
  ScanExtents& operator=(const ScanExtents&) = delete;
  ~ScanExtents() { BRAID_ASSERT(count_ == 0); }  // the scan ran finish() to its end

  bool on() const { return bytes_ != 0; }

  // The scan's last leaf: it needs nothing of `file` past byte `end` (before byte `end`, in
  // reverse), so no extent reads there: a morsel does not read into the next morsel's records.
  void bound(std::uint32_t file, std::uint64_t end) {
    bounded_ = true;
    bound_file_ = file;
    bound_ = reverse_ ? end / storage::kDirectAlign * storage::kDirectAlign
                      : storage::round_up(end, storage::kDirectAlign);
  }

  // The record of cold entry `e` (table `table`, primary key `key`).
  Step step(std::uint64_t e, std::uint32_t table, std::string_view key, storage::RecordView* rv,
            Status* status) {
    BRAID_DASSERT(on());
    const mvcc::entry::ColdAddress a = mvcc::entry::cold(e);
    const std::uint64_t lo = a.offset;
    const std::uint64_t hi = a.offset + a.size;
    int i = find(a.segment, lo);
    if (i < 0) {
      i = jump(a.segment, lo, hi);
      if (i == kWaitCell) return wait_on(blocked_);
      if (i < 0) return Step::kAlone;
    }
    Held& x = held_[i];
    if (x.load->pending()) return wait_on(x.load);
    if (x.load->extent_got < 0) return failed(x, status);
    const std::uint64_t got_end = x.start + static_cast<std::uint64_t>(x.load->extent_got);
    const char* data = x.load->data();
    const char* p = nullptr;
    if (hi <= got_end) {
      p = data + (lo - x.start);
    } else {
      // The file ended before the record (a load reports what is wrong), or it straddles x
      // and the extent after it.
      const std::uint64_t x_end = x.start + x.len;
      if (got_end < x_end) return Step::kAlone;
      int j = find(a.segment, x_end);
      if (j < 0) {
        j = issue(a.segment, x_end, above(a.segment, x_end, x_end + window_), i);
        if (j == kWaitCell) return wait_on(blocked_);
        if (j < 0) return Step::kAlone;
      }
      Held& y = held_[j];
      if (y.load->pending()) return wait_on(y.load);
      if (y.load->extent_got < 0) return failed(y, status);
      const std::uint64_t rest = hi - x_end;
      if (static_cast<std::uint64_t>(y.load->extent_got) < rest) return Step::kAlone;
      joined_.assign(data + (lo - x.start), x_end - lo);
      joined_.append(y.load->data(), rest);
      p = joined_.data();
    }
    if (Status bad = ColdStore::verify_record(e, p, hi - lo, table, key, rv); !bad.is_ok()) {
      *status = std::move(bad);
      return Step::kFailed;
    }
    ++x.served;
    ++since_jump_;
    read_on(i, lo);
    return Step::kServed;
  }
  ColdLoad* wait() const { return wait_; }

  // The scan ends: a pending extent to park on (then call again), or null once every extent
  // is released.
  ColdLoad* finish() {
    for (std::uint32_t k = 0; k < kMax; ++k) {
      if (held_[k].load == nullptr) continue;
      if (held_[k].load->pending()) return held_[k].load;
      release(k);
    }
    return nullptr;
  }

 private:
  struct Held {
    ColdLoad* load = nullptr;  // null: the cell is free
    std::uint32_t file = 0;
    std::uint64_t start = 0;
    std::uint32_t len = 0;
    std::uint32_t served = 0;
    std::uint64_t age = 0;  // issue order: the oldest is let go first
    bool jumped = false;    // started by a jump, not read on from its neighbour
  };
  static constexpr int kWaitCell = -2;  // issue(): every cell is in flight, wait for blocked_

  // The extent holding byte `at` of `file` (as issued; it may have come back short).
  int find(std::uint32_t file, std::uint64_t at) const {
    for (std::uint32_t k = 0; k < kMax; ++k) {
      const Held& h = held_[k];
      if (h.load != nullptr && h.file == file && h.start <= at && at < h.start + h.len) {
        return static_cast<int>(k);
      }
    }
    return -1;
  }
  // Where an extent from `at` up must end so as not to overlap one held: `limit` or lower.
  std::uint64_t above(std::uint32_t file, std::uint64_t at, std::uint64_t limit) const {
    for (const Held& h : held_) {
      if (h.load != nullptr && h.file == file && h.start >= at) limit = std::min(limit, h.start);
    }
    return limit;
  }
  // Where an extent ending at `at` must start so as not to overlap one held: `limit` or higher.
  std::uint64_t below(std::uint32_t file, std::uint64_t at, std::uint64_t limit) const {
    for (const Held& h : held_) {
      const std::uint64_t end = h.start + h.len;
      if (h.load != nullptr && h.file == file && end <= at) limit = std::max(limit, end);
    }
    return limit;
  }
  Step wait_on(ColdLoad* l) {
    BRAID_DASSERT(l != nullptr);
    wait_ = l;
    return Step::kWait;
  }
  Step failed(const Held& h, Status* status) {
    *status =
        Status::io_error("cold read of file " + std::to_string(h.file) + " at offset " +
                         std::to_string(h.start) + " (" + std::to_string(h.len) +
                         " bytes) failed: " + std::strerror(static_cast<int>(-h.load->extent_got)));
    return Step::kFailed;
  }
  // Record [lo, hi) of `file` lies in no extent held: an extent from its first block on (down
  // from its last, in reverse). The cell, -1 to read the record alone, or kWaitCell.
  int jump(std::uint32_t file, std::uint64_t lo, std::uint64_t hi) {
    const std::uint64_t first = lo / storage::kDirectAlign * storage::kDirectAlign;
    const std::uint64_t last = storage::round_up(hi, storage::kDirectAlign);
    if (last - first > bytes_) return -1;  // a record bigger than an extent
    const bool scattered = jumped_ && since_jump_ <= 1;
    if (scattered && jumps_ + 1 >= kMaxJumps) {
      off();
      return -1;
    }
    // Held extents end at block boundaries, so none overlaps [first, last) below lo.
    window_ = std::min<std::uint64_t>(bytes_, std::max(kFirstBytes, last - first));
    std::uint64_t start = first;
    std::uint64_t end = above(file, lo, first + window_);
    if (reverse_) {
      end = above(file, lo, last);
      start = below(file, first, last > window_ ? last - window_ : 0);
    }
    BRAID_DASSERT(start <= first);
    BRAID_DASSERT(end > lo);
    const int cell = issue(file, start, end, -1);
    if (cell < 0) return cell;
    held_[cell].jumped = true;
    jumps_ = scattered ? jumps_ + 1 : 0;
    jumped_ = true;
    since_jump_ = 0;
    return cell;
  }
  // The read ahead: the scan took the record at byte `at` of extent i, and the extent after it
  // (before it, in reverse) is issued now unless it is held already, so one read per scan is in
  // flight while the scan works through this one. Issuing it only halfway through, or keeping
  // two extents ahead, was slower (docs/results.md, "A scan's own extents"). An extent a jump
  // started waits for the scan to get halfway: a scan that goes back and forth between two
  // regions of a file would otherwise read on from each after every jump.
  void read_on(int i, std::uint64_t at) {
    const Held& x = held_[i];
    // An extent that came back short ended its file: nothing lies past it.
    if (x.load->extent_got != static_cast<std::int64_t>(x.len)) return;
    const std::uint64_t mid = x.start + x.len / 2;
    if (x.jumped && (reverse_ ? at >= mid : at < mid)) return;
    if (!reverse_) {
      const std::uint64_t x_end = x.start + x.len;
      if (find(x.file, x_end) >= 0) return;
      window_ = std::min<std::uint64_t>(bytes_, window_ * 2);
      (void)issue(x.file, x_end, above(x.file, x_end, x_end + window_), i);
    } else {
      if (x.start == 0 || find(x.file, x.start - 1) >= 0) return;
      window_ = std::min<std::uint64_t>(bytes_, window_ * 2);
      const std::uint64_t from = below(x.file, x.start, x.start > window_ ? x.start - window_ : 0);
      (void)issue(x.file, from, x.start, i);
    }
  }
  // Issues bytes [start, end) of `file` into a free cell, letting the oldest finished extent
  // other than `keep` go if none is free. -1 when the port said no (no buffer, load or ring
  // room); kWaitCell when every other cell is in flight (blocked_: the oldest).
  int issue(std::uint32_t file, std::uint64_t start, std::uint64_t end, int keep) {
    if (bounded_ && file == bound_file_) {
      if (reverse_) {
        start = std::max(start, bound_);
      } else {
        end = std::min(end, bound_);
      }
      if (start >= end) return -1;
    }
    BRAID_DASSERT(start < end);
    BRAID_DASSERT(end - start <= bytes_);
    int cell = -1;
    for (std::uint32_t k = 0; k < kMax && cell < 0; ++k) {
      if (held_[k].load == nullptr) cell = static_cast<int>(k);
    }
    if (cell < 0) {
      int oldest = -1;
      for (std::uint32_t k = 0; k < kMax; ++k) {
        if (static_cast<int>(k) == keep) continue;
        if (oldest < 0 || held_[k].age < held_[oldest].age) oldest = static_cast<int>(k);
      }
      BRAID_ASSERT(oldest >= 0);
      if (held_[oldest].load->pending()) {
        blocked_ = held_[oldest].load;
        return kWaitCell;
      }
      release(static_cast<std::uint32_t>(oldest));
      cell = oldest;
    }
    ColdLoad* l = port_->read_extent(file, start, static_cast<std::uint32_t>(end - start));
    if (l == nullptr) return -1;
    Held& h = held_[cell];
    h.load = l;
    h.file = file;
    h.start = start;
    h.len = static_cast<std::uint32_t>(end - start);
    h.served = 0;
    h.jumped = false;
    h.age = ++ages_;
    ++count_;
    return cell;
  }
  void release(std::uint32_t k) {
    Held& h = held_[k];
    BRAID_ASSERT(h.load != nullptr);
    if (h.served != 0) store_->count_extent_records(h.served);
    port_->release_extent(h.load);
    h.load = nullptr;
    --count_;
  }
  // Scattered records: every later record is read alone. The extents held stay until finish().
  void off() { bytes_ = 0; }

  ColdPort* const port_;
  ColdStore* const store_;
  std::uint32_t bytes_;
  const bool reverse_;
  Held held_[kMax];
  std::uint32_t count_ = 0;
  std::uint64_t ages_ = 0;
  ColdLoad* wait_ = nullptr;
  ColdLoad* blocked_ = nullptr;
  std::uint64_t window_ = kFirstBytes;  // the length of the next extent read on
  bool bounded_ = false;
  std::uint32_t bound_file_ = 0;
  std::uint64_t bound_ = 0;
  bool jumped_ = false;
  std::uint32_t since_jump_ = 0;  // records served since the last jump
  std::uint32_t jumps_ = 0;       // jumps in a row after which at most one record was served
  std::string joined_;            // a record that straddles two extents, put together
};

// Suspends the transaction on a pending load: the slot parks (kParkedIo) and the worker makes
// it runnable when the load is back, without resuming it to ask (unless the policy resumes
// parked slots: the await loop then finds the load still pending and parks again).
struct IoPark {
  OpEnv env;
  ColdLoad* load;
  bool await_ready() const noexcept { return !load->pending(); }
  void await_suspend(std::coroutine_handle<> h) const noexcept {
    *env.sink = h;
    ++*env.suspends;
    ++*env.site;
    env.tx->port->park(env.tx, load);
  }
  void await_resume() const noexcept {}
};

}  // namespace braid::engine

// Runs ColdFetch `f` to its end inside the enclosing coroutine (environment `env`).
#define BRAID_COLD_DRIVE(env, f)                                                           \
  for (::braid::engine::ColdFetch::Wait braid_w_;                                          \
       (braid_w_ = (f).step()) != ::braid::engine::ColdFetch::Wait::kNone;) {              \
    if (braid_w_ == ::braid::engine::ColdFetch::Wait::kBusy) {                             \
      co_await ::braid::runtime::Miss{nullptr, 0, (env).sink, (env).suspends, (env).site}; \
    } else {                                                                               \
      co_await ::braid::engine::IoPark{(env), (f).load()};                                 \
    }                                                                                      \
  }
