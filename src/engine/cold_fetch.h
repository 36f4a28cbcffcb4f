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
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <string_view>

#include "engine/cold_store.h"
#include "engine/op_env.h"
#include "engine/table.h"
#include "engine/tx_state.h"
#include "index/btree.h"
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

// A scan's own extents (Options::scan_extent_bytes): a scan that meets cold records reads the
// file itself, in extents planned from the index, and takes each record from there (verified as
// a load's read is), without a load, a version or a read per record (Umbra §3: a scan reads
// pages, not tuples).
//
// The plan: from its first cold record on, the scan walks its range a few leaves ahead of
// itself (a second cursor, plan_ahead()) and plans each cold entry it finds, in scan order. Cold
// records that lie close together in one file (a bulk load or a checkpoint writes a key range
// contiguously) join one run, up to `bytes`; a gap of hot records wider than kGapBytes (their
// own copies on storage, which the scan does not need) ends the run, so a partly cached range
// reads its cold records and skips the rest: one read per run instead of the whole file. A
// run that reaches `bytes` ends at a block boundary and the next starts there, so runs never
// overlap and every block is read once; a record that straddles two runs is put together from
// both. Scattered records (updated since the load, or a secondary index's order) make runs of
// one record each, a load's read without the load.
//
// The reads: the run the scan is in and the runs after it, up to kAhead of them, are in
// flight: four extents ahead of a contiguous scan, which a worker busy decoding records then
// seldom waits for (one extent ahead parked the scan at nearly every extent, and each park
// and resume cost more than the wait: docs/results.md, "Four extents ahead"). A run ahead
// takes a buffer only while the worker keeps a reserve for the runs scans are in and for
// index leaves (ColdPort::read_extent). A record in no run (it turned cold after the plan
// looked, or the port had no buffer) is read the usual way.
//
// Used only where a scan may take a record's value without installing it: a snapshot scan (a
// serializable one registers the versions it read) of a table that does not cache reads.
// Visibility: a cold entry's record was committed before every snapshot active when it went
// cold (eviction's rule), and the scan read the entry after its own snapshot began, so the
// record is the version the snapshot sees; a load would install the same. The plan decides
// only which bytes are read, never what the scan delivers. Single-threaded: the scan's
// worker's.
class ScanExtents {
 public:
  static constexpr std::uint32_t kRuns = 32;  // runs planned and not yet passed, at most
  static constexpr std::uint32_t kAhead = 4;  // runs in flight past the scan's, at most
  // Hot bytes between two cold records that one read still spans. One read costs about two
  // blocks of transfer on the devices measured (docs/results.md), so a read that reads through
  // a gap of up to two blocks is cheaper than two reads.
  static constexpr std::uint64_t kGapBytes = 2 * storage::kDirectAlign;
  // Index entries the plan may look at past the scan's position: a bound on the second
  // cursor's work where the range holds few cold records.
  static constexpr std::uint64_t kPlanEntries = 4096;
  // Cached entries in a row after which the plan stops looking ahead until the scan catches
  // up: a long cached stretch would be walked twice (once by the plan, once by the scan) only
  // to find where the next cold run starts, and the scan finds that itself and plans anew
  // there (catch_up()); the read of that run is then issued when the scan reaches it, and the
  // worker's other morsels run while it is in flight (docs/results.md, "The plan stops in a
  // cached stretch"). A cold run is still planned to its end however long it is, so a range of
  // cold records keeps its reads ahead.
  static constexpr std::uint32_t kHotStretch = 64;

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
  ~ScanExtents() { BRAID_ASSERT(loads_ == 0); }  // the scan ran finish() to its end

  bool on() const { return bytes_ != 0; }

  // Planning. At each cold record it meets, the scan calls catch_up(), then drives the plan's
  // cursor while plan_ahead() hands it one.
  bool planning() const { return plan_ != nullptr; }
  // The scan is at entry `i` of its leaf `batch`, place `pos` (entries before it, over every
  // leaf). When the plan is behind it (the scan's first cold record, or it caught up with the
  // plan: the records of the runs planned turned hot before it came, or the plan stopped in a
  // cached stretch the scan then crossed), the plan starts anew there, with a copy of that leaf
  // in `plan_batch` (a buffer that outlives the scan); the runs planned so far are passed (each
  // is released once its read is back, as the scan moves on).
  void catch_up(const index::LeafBatch& batch, std::size_t i, std::uint64_t pos,
                index::LeafBatch* plan_batch) {
    BRAID_DASSERT(on());
    BRAID_DASSERT(i < batch.entries.size());
    if (plan_ != nullptr && plan_->planned > pos) return;
    if (plan_ == nullptr) plan_ = std::make_unique<Plan>();
    Plan& p = *plan_;
    p.leaf.reset();
    p.batch = plan_batch;
    p.batch->copy_entries_of(batch);  // the plan needs no keys
    p.pos = i;
    p.planned = pos;
    p.hot = 0;
    planned_all_ = false;
    open_ = false;
    at_ = tail_;
    idle_at_ = kNone;
  }
  // Plans the cold entries after the plan's position while it has room, up to `limit` entries
  // past the scan's place `pos` and kHotStretch cached entries past the last cold one;
  // `entry_of(value)` is the OID entry an index value names.
  // Answers the plan's cursor when the plan needs its next leaf (drive it, then call again;
  // `tree`, `begin`, `end` and `load` are the scan's: index::ScanLeaf), or null when the plan
  // goes no further now.
  template <typename EntryOf>
  index::ScanLeaf* plan_ahead(std::uint64_t pos, std::uint64_t limit, const index::BTree& tree,
                              std::string_view begin, std::string_view end, bool load,
                              EntryOf&& entry_of) {
    BRAID_DASSERT(planning());
    Plan& p = *plan_;
    index::LeafBatch& pb = *p.batch;
    if (p.leaf.has_value()) {  // the leaf handed out last was driven: its entries are in pb
      p.leaf.reset();
      p.pos = 0;
    }
    while (!planned_all_ && tail_ - head_ < kRuns - 1 && tail_ - at_ < kAhead + 2 &&
           p.planned - pos < limit) {
      if (p.hot >= kHotStretch) {
        close();  // nothing after the stretch joins the open run: its read may go
        break;
      }
      if (p.pos == pb.entries.size()) {
        if (!pb.has_next) {
          close();
          planned_all_ = true;
          break;
        }
        p.from.swap(pb.next);
        return &p.leaf.emplace(tree, p.from, false, begin, end, reverse_, &pb,
                               index::NodeSearch::kCount, /*keys=*/false, nullptr, load);
      }
      const std::uint64_t e = entry_of(pb.entries[p.pos].value);
      ++p.pos;
      ++p.planned;
      if (mvcc::entry::is_cold(e)) {
        p.hot = 0;
        plan(e);
      } else {
        ++p.hot;
      }
    }
    return nullptr;
  }

  // The record of cold entry `e` (table `table`, primary key `key`).
  Step step(std::uint64_t e, std::uint32_t table, std::string_view key, storage::RecordView* rv,
            Status* status) {
    BRAID_DASSERT(planning());
    const mvcc::entry::ColdAddress a = mvcc::entry::cold(e);
    const std::uint64_t lo = a.offset;
    const std::uint64_t hi = a.offset + a.size;
    // The run holding the record's first byte in scan order (its last byte, in reverse).
    std::uint32_t k = find(a.segment, reverse_ ? hi - 1 : lo);
    if (k == kNone && open_ && holds(cur_, a.segment, reverse_ ? hi - 1 : lo) && room()) {
      close();  // the scan caught up with the plan
      k = tail_ - 1;
    }
    if (k == kNone) return Step::kAlone;
    // Runs before it are passed: their records were taken, or turned hot since the plan.
    for (; head_ < k; ++head_) {
      Run& p = run(head_);
      if (p.load != nullptr && p.load->pending()) return wait_on(p.load);
      release(p);
    }
    at_ = k;
    issue_ahead();
    Run& x = run(k);
    if (x.load == nullptr) return Step::kAlone;  // no buffer, load or ring room for it
    if (x.load->pending()) return wait_on(x.load);
    if (x.load->extent_got < 0) return failed(x, status);
    const char* p = nullptr;
    if (lo >= x.start && hi <= x.start + got(x)) {
      p = x.load->data() + (lo - x.start);
    } else {
      // The file ended before the record (a load reports what is wrong), or the record
      // straddles this run and the next one in scan order, which tiles on from it.
      if (k + 1 == tail_ && open_ && room()) close();  // the rest is in the run being planned
      if (k + 1 == tail_ || got(x) != x.len()) return Step::kAlone;
      Run& y = run(k + 1);
      const bool tiled = y.file == x.file && (reverse_ ? y.end == x.start : y.start == x.end);
      if (!tiled) return Step::kAlone;
      if (y.load == nullptr) return Step::kAlone;
      if (y.load->pending()) return wait_on(y.load);
      if (y.load->extent_got < 0) return failed(y, status);
      const Run& low = reverse_ ? y : x;
      const Run& high = reverse_ ? x : y;
      if (lo < low.start || got(low) != low.len() || hi - high.start > got(high)) {
        return Step::kAlone;
      }
      joined_.assign(low.load->data() + (lo - low.start), low.end - lo);
      joined_.append(high.load->data(), hi - high.start);
      p = joined_.data();
    }
    if (const std::string_view fault = ColdStore::record_fault(e, p, hi - lo, table, &key, rv);
        !fault.empty()) [[unlikely]] {
      *status = ColdStore::fault_status(e, hi - lo, fault);
      return Step::kFailed;
    }
    ++x.served;
    return Step::kServed;
  }
  ColdLoad* wait() const { return wait_; }

  // The scan ends: a pending extent to park on (then call again), or null once every extent
  // is released.
  ColdLoad* finish() {
    if (plan_ == nullptr) {
      BRAID_ASSERT(loads_ == 0);
      return nullptr;
    }
    for (; head_ < tail_; ++head_) {
      Run& r = run(head_);
      if (r.load != nullptr && r.load->pending()) return r.load;
      release(r);
    }
    BRAID_ASSERT(loads_ == 0);
    return nullptr;
  }

 private:
  struct Run {
    ColdLoad* load = nullptr;  // null: not issued (or refused)
    std::uint32_t file = 0;
    std::uint32_t served = 0;
    std::uint64_t start = 0;  // [start, end): whole blocks of `file`
    std::uint64_t end = 0;
    std::uint32_t len() const { return static_cast<std::uint32_t>(end - start); }
  };
  static constexpr std::uint32_t kNone = ~std::uint32_t{0};

  Run& run(std::uint32_t pos) { return plan_->runs[pos % kRuns]; }
  static bool holds(const Run& r, std::uint32_t file, std::uint64_t at) {
    return r.file == file && r.start <= at && at < r.end;
  }
  static std::uint64_t got(const Run& r) { return static_cast<std::uint64_t>(r.load->extent_got); }
  // The run from the scan's on holding byte `at` of `file`, or kNone.
  std::uint32_t find(std::uint32_t file, std::uint64_t at) {
    for (std::uint32_t pos = at_; pos < tail_; ++pos) {
      if (holds(run(pos), file, at)) return pos;
    }
    return kNone;
  }
  void open(std::uint32_t file, std::uint64_t start, std::uint64_t end) {
    BRAID_DASSERT(start < end);
    BRAID_DASSERT(end - start <= bytes_);
    cur_ = Run{nullptr, file, 0, start, end};
    open_ = true;
  }
  bool room() const { return tail_ - head_ < kRuns; }
  // The open run is complete: it joins the runs the scan will read (plan_ahead() kept room).
  void close() {
    if (!open_) return;
    BRAID_ASSERT(tail_ - head_ < kRuns);
    run(tail_++) = cur_;
    open_ = false;
  }
  // Cold entry `e`, next in scan order, joins the open run or opens the next one.
  void plan(std::uint64_t e) {
    BRAID_DASSERT(planning());
    BRAID_DASSERT(!planned_all_);
    const mvcc::entry::ColdAddress a = mvcc::entry::cold(e);
    const std::uint64_t first = a.offset / storage::kDirectAlign * storage::kDirectAlign;
    const std::uint64_t last = storage::round_up(a.offset + a.size, storage::kDirectAlign);
    if (last - first > bytes_) return;  // bigger than an extent: read alone
    if (open_ && cur_.file == a.segment) {
      if (!reverse_ && first >= cur_.start && first <= cur_.end + kGapBytes) {
        if (last <= cur_.end) return;
        if (last - cur_.start <= bytes_) {
          cur_.end = last;
          return;
        }
        const std::uint64_t from = cur_.end;  // the record may straddle: the next run tiles on
        close();
        open(a.segment, std::max(first, from), last);
        return;
      }
      if (reverse_ && last <= cur_.end && last + kGapBytes >= cur_.start) {
        if (first >= cur_.start) return;
        if (cur_.end - first <= bytes_) {
          cur_.start = first;
          return;
        }
        const std::uint64_t to = cur_.start;
        close();
        open(a.segment, first, std::min(last, to));
        return;
      }
    }
    close();
    open(a.segment, first, last);
  }
  // Issues the scan's run and those after it, up to kAhead. Runs before next_ are issued (or
  // passed); a call that finds nothing to issue and nothing refused is not repeated until the
  // scan moves on to another run or the plan grows.
  void issue_ahead() {
    if (idle_at_ == at_ && idle_tail_ == tail_) return;
    next_ = std::max(next_, at_);
    bool refused = false;
    std::uint64_t issued = 0;
    while (next_ < tail_ && next_ <= at_ + kAhead) {
      Run& r = run(next_);
      BRAID_DASSERT(r.load == nullptr);
      r.load = port_->read_extent(r.file, r.start, r.len(), /*ahead=*/next_ != at_);
      if (r.load == nullptr) {  // no buffer, load or ring room: tried again at the next step
        refused = true;
        break;
      }
      ++loads_;
      issued += r.len();
      ++next_;
    }
    // Small reads wait for the worker's reap, which sends all of its round's reads with one
    // kernel entry. Half an extent or more goes at once: a scan of contiguous cold records
    // takes hundreds of records from the extent it holds without suspending, so the reap
    // would come only when it needs the next one, and the read ahead would not be ahead.
    if (issued * 2 >= bytes_) port_->flush_extents();
    if (!refused) {
      idle_at_ = at_;
      idle_tail_ = tail_;
    }
  }
  Step wait_on(ColdLoad* l) {
    BRAID_DASSERT(l != nullptr);
    wait_ = l;
    return Step::kWait;
  }
  Step failed(const Run& r, Status* status) {
    *status = Status::io_error("cold read of " + ColdStore::describe(r.file, r.start, r.len()) +
                               " failed: " + std::strerror(static_cast<int>(-r.load->extent_got)));
    return Step::kFailed;
  }
  void release(Run& r) {
    if (r.load == nullptr) return;
    BRAID_ASSERT(!r.load->pending());
    if (r.served != 0) store_->count_extent_records(r.served);
    port_->release_extent(r.load);
    r.load = nullptr;
    --loads_;
  }

  ColdPort* const port_;
  ColdStore* const store_;
  const std::uint32_t bytes_;
  const bool reverse_;
  bool planned_all_ = false;
  bool open_ = false;
  Run cur_;  // the run the plan is growing (open_)
  // Runs in scan order, by position: [head_, tail_) planned and not yet released; the scan is
  // in at_ (head_ <= at_; those before it go once their reads are back).
  // The runs and the plan's leaf cursor live on the heap, allocated when the scan meets its
  // first cold record: a coroutine frame holds every local of the scan at once, and these
  // would take it past the frame allocator's largest class.
  struct Plan {
    Run runs[kRuns];
    // The plan's cursor: its leaf (TxnContext::plan_batch, values only), the next entry of it
    // to plan, the key its next leaf starts at, and the entries planned from the scan's start
    // (kept at most the caller's limit past the scan's place).
    index::LeafBatch* batch = nullptr;
    std::size_t pos = 0;
    std::string from;
    std::uint64_t planned = 0;
    std::uint32_t hot = 0;                // cached entries planned since the last cold one
    std::optional<index::ScanLeaf> leaf;  // while the caller drives it
  };
  std::unique_ptr<Plan> plan_;
  std::uint32_t head_ = 0;
  std::uint32_t at_ = 0;
  std::uint32_t tail_ = 0;
  std::uint32_t next_ = 0;  // the first run not yet issued
  std::uint32_t loads_ = 0;
  std::uint32_t idle_at_ = kNone;  // at_ and tail_ when issue_ahead() last found nothing to do
  std::uint32_t idle_tail_ = kNone;
  ColdLoad* wait_ = nullptr;
  std::string joined_;  // a record that straddles two runs, put together
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
