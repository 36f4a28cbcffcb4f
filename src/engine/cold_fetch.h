// The storage path of the coroutine modes as a stepper that never suspends (engine/access.h's
// pattern: the steppers decide, the drivers wait), so that the nested coroutine (cold_fetch,
// MosaicDB §4.1's selective nesting: the default) and the path inlined into the operation's own
// coroutine (StoragePath::kFlattened, the paper's "flattened" variant of Fig. 11) are one
// algorithm. BRAID_COLD_DRIVE is the one driver loop both expand.
#pragma once

#include <atomic>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <new>
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
