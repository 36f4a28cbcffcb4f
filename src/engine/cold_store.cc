#include "engine/cold_store.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>

#include "engine/stage_profile.h"
#include "engine/table.h"
#include "mvcc/protocol.h"
#include "storage/log_format.h"
#include "util/assert.h"
#include "util/bits.h"

namespace braid::engine {

namespace entry = mvcc::entry;

namespace {
// The bytes to read for record `a`: O_DIRECT reads whole aligned blocks around it.
struct Span {
  std::uint64_t start;
  std::uint64_t len;
  std::uint32_t skip;  // where the record starts in what is read
};
Span span_of(const entry::ColdAddress& a, bool direct) {
  if (!direct) return {a.offset, a.size, 0};
  const std::uint64_t start = a.offset / storage::kDirectAlign * storage::kDirectAlign;
  return {start, storage::round_up(a.offset + a.size, storage::kDirectAlign) - start,
          static_cast<std::uint32_t>(a.offset - start)};
}

std::string where(std::uint64_t e) {
  const entry::ColdAddress a = entry::cold(e);
  return ColdStore::describe(a.segment, a.offset, a.size);
}
// A read of `len` bytes of `file` from `offset` into `out`, tagged `tag` (an extent's: a scan's
// own or a batch of neighbouring loads).
storage::IoRequest read_of(storage::FileId file, std::uint64_t offset, char* out, std::uint32_t len,
                           std::uint64_t tag) {
  storage::IoRequest r;
  r.op = storage::IoRequest::Op::kRead;
  r.file = file;
  r.offset = offset;
  r.out = out;
  r.len = len;
  r.user = tag;
  return r;
}
// Checks `got` bytes read for cold entry `e` (ColdStore::record_fault()).
Status verify(std::uint64_t e, const char* p, std::uint64_t got, std::uint32_t table,
              const std::string_view* key, storage::RecordView* rv) {
  const std::string_view fault = ColdStore::record_fault(e, p, got, table, key, rv);
  if (fault.empty()) [[likely]] {
    return Status::ok();
  }
  return ColdStore::fault_status(e, got, fault);
}
}  // namespace

ColdStore::ColdStore(Deps deps, std::shared_ptr<storage::FileSystem> fs, std::uint32_t max_loads,
                     std::uint64_t budget_bytes)
    : deps_(deps),
      fs_(std::move(fs)),
      files_(fs_.get(), true),
      budget_(budget_bytes),
      pool_(std::make_unique<ColdLoad[]>(max_loads)),
      max_loads_(max_loads) {
  BRAID_ASSERT(max_loads > 0);
  BRAID_ASSERT(max_loads < (1u << 23));  // a load's tag stays below ColdReader::kExtentTag
  free_.reserve(max_loads);
  active_.reserve(max_loads);
  for (std::uint32_t i = max_loads; i-- > 0;) {
    ColdLoad& l = pool_[i];
    l.index = i;
    l.key.reserve(kMaxKeyBytes);
    l.buf = static_cast<char*>(std::aligned_alloc(storage::kDirectAlign, ColdLoad::kBufBytes));
    BRAID_ASSERT(l.buf != nullptr);
    free_.push_back(i);
  }
}

ColdStore::~ColdStore() {
  for (std::uint32_t i = 0; i < max_loads_; ++i) {
    BRAID_ASSERT(!pool_[i].pending());  // the workers drained their reads before we go
    std::free(pool_[i].buf);
  }
}

ColdStore::Miss ColdStore::join(std::atomic<std::uint64_t>* slot, std::uint64_t e,
                                mvcc::TxnContext* ctx, std::uint32_t table, std::string_view key,
                                bool ahead) {
  BRAID_DASSERT(entry::is_cold(e));
  const StageScope stage(Stage::kLoadTable);
  std::lock_guard<std::mutex> g(mutex_);
  // Under the mutex: a load is installed before it leaves active_, so an entry that still
  // holds `e` with no load in active_ has none in flight.
  if (slot->load(std::memory_order_acquire) != e) return {};
  for (std::uint32_t i : active_) {
    ColdLoad& l = pool_[i];
    if (l.slot == slot && l.entry == e) {
      ++l.refs;
      joins_.fetch_add(1, std::memory_order_relaxed);
      return {&l, false, false};
    }
  }
  if (free_.size() <= (ahead ? ahead_reserve_ : 0)) return {nullptr, false, true};
  const std::uint32_t i = free_.back();
  free_.pop_back();
  active_.push_back(i);
  // The caller's reference, and the read's (dropped when it completes).
  ColdLoad& l = take(i, 2);
  l.slot = slot;
  l.entry = e;
  l.table = table;
  l.ctx = ctx;
  l.key.assign(key);
  return {&l, true, false};
}

ColdLoad& ColdStore::take(std::uint32_t i, std::uint32_t refs) {
  ColdLoad& l = pool_[i];
  BRAID_DASSERT(l.refs == 0);
  ++l.generation;
  l.slot = nullptr;
  l.entry = 0;
  l.ctx = nullptr;
  l.failure = Status::ok();
  l.installed = 0;
  l.refs = refs;
  l.big = nullptr;
  l.ring_buf = nullptr;
  l.file = {};
  l.skip = 0;
  l.extent_got = 0;
  l.in_flight.store(true, std::memory_order_relaxed);
  return l;
}

bool ColdStore::prepare(ColdLoad* l, storage::IoRequest* r) {
  BRAID_ASSERT(l->pending());
  const entry::ColdAddress a = entry::cold(l->entry);
  // Prepared again (the ring was full): the handle is still ours.
  if (l->file.id < 0) {
    Result<storage::FileTable::Handle> h = files_.acquire(a.segment);
    if (!h.is_ok()) {
      fail(l, Status::io_error(std::string(h.status().message()) + " (cold record at " +
                               where(l->entry) + ")"));
      complete(l, 0, kNoRead);
      return false;
    }
    l->file = *h;
  }
  const storage::FileTable::Handle* h = &l->file;
  const Span sp = span_of(a, h->direct);
  l->skip = sp.skip;
  // A load may be prepared again when the ring had no room for its read (Worker::issue_cold).
  if (sp.len > ColdLoad::kBufBytes && l->big == nullptr) {
    l->big = static_cast<char*>(std::aligned_alloc(
        storage::kDirectAlign, storage::round_up(sp.len, storage::kDirectAlign)));
    if (l->big == nullptr) {
      fail(l,
           Status::io_error("cannot allocate a buffer for the cold record at " + where(l->entry)));
      complete(l, 0, kNoRead);
      return false;
    }
  }
  r->op = storage::IoRequest::Op::kRead;
  r->file = h->id;
  r->offset = sp.start;
  r->out = l->data();
  r->len = static_cast<std::uint32_t>(sp.len);
  l->issued = std::chrono::steady_clock::now();
  return true;
}

void ColdStore::fail(ColdLoad* l, Status why) {
  if (l->failure.is_ok()) l->failure = std::move(why);
}

void ColdStore::complete(ColdLoad* l, std::int64_t result, std::int64_t io_bytes) {
  BRAID_ASSERT(l->pending());
  const StageScope stage(Stage::kComplete);
  mvcc::Version* v = nullptr;
  if (!l->failure.is_ok()) {
    // prepare() failed: nothing was read
  } else if (result < 0) {
    fail(l, Status::io_error("cold read of " + where(l->entry) +
                             " failed: " + std::strerror(static_cast<int>(-result))));
  } else {
    storage::RecordView rv;
    const std::uint64_t got = static_cast<std::uint64_t>(result);
    const std::string_view key = l->key;
    Status bad = verify(l->entry, l->data() + l->skip, got < l->skip ? 0 : got - l->skip, l->table,
                        &key, &rv);
    if (!bad.is_ok()) {
      fail(l, std::move(bad));
    } else {
      v = deps_.txns->alloc_version(l->ctx, rv.value.size());
      if (v == nullptr) {
        fail(l, deps_.protocol->out_of_version_memory());
      } else {
        if (!rv.value.empty()) std::memcpy(v->payload(), rv.value.data(), rv.value.size());
        v->flags = mvcc::Version::kReloaded;  // verify() admits values only
        v->home = l->entry;                   // evicting it again needs no write
        v->stamp.store(rv.cts, std::memory_order_relaxed);
      }
    }
  }
  if (!l->failure.is_ok() && l->slot->load(std::memory_order_acquire) != l->entry) {
    // The entry moved while we read (a checkpoint copied the record and deleted the file we
    // were too late to open): not a failure — the waiters read the entry again.
    l->failure = Status::ok();
  }
  if (io_bytes >= 0) {
    ios_.fetch_add(1, std::memory_order_relaxed);
    read_bytes_.fetch_add(static_cast<std::uint64_t>(io_bytes), std::memory_order_relaxed);
  }
  // A read that failed is one error however many records it carried (the load that counts
  // the read counts it); a record that does not verify is one of its own.
  if (!l->failure.is_ok() && (io_bytes >= 0 || result >= 0))
    errors_.fetch_add(1, std::memory_order_relaxed);
  // The time in flight is the storage read's: counted once per read, so its sum over time is
  // the mean number of reads in flight, an extent's loads counted as the one read they are.
  if (io_bytes < 0) {
    l->issued = {};
  } else if (l->issued != std::chrono::steady_clock::time_point{}) {
    wait_ns_.fetch_add(
        static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                       std::chrono::steady_clock::now() - l->issued)
                                       .count()),
        std::memory_order_relaxed);
    l->issued = {};
  }
  if (l->big != nullptr) {
    std::free(l->big);
    l->big = nullptr;
  }
  if (l->file.id >= 0) {
    files_.release(entry::cold(l->entry).segment);
    l->file = {};
  }
  bool published = false;
  mvcc::TxnContext* const ctx = l->ctx;  // `l` may be reused once it is back in the pool
  {
    // Install, finish and leave active_ in one step under the mutex join() holds. Otherwise a
    // transaction that began after the installed version was evicted again (the entry holding
    // `entry` once more) could still find this load in active_, join it, and take the
    // version it installed — memory retired before that transaction's pin, so freed under it.
    // This way every joiner joined before the install, so it pins the version's epoch.
    std::lock_guard<std::mutex> g(mutex_);
    if (v != nullptr) {
      std::uint64_t expect = l->entry;
      // Only a load changes a cold entry (writers load first) — and a checkpoint moving it
      // to its copy; if that happened, our version was never published.
      published = l->slot->compare_exchange_strong(expect, entry::from_version(v),
                                                   std::memory_order_acq_rel);
      if (published) l->installed = entry::from_version(v);
    }
    l->in_flight.store(false, std::memory_order_release);
    for (std::size_t k = 0; k < active_.size(); ++k) {
      if (active_[k] == l->index) {
        active_[k] = active_.back();
        active_.pop_back();
        break;
      }
    }
    BRAID_ASSERT(l->refs > 0);
    if (--l->refs == 0) free_.push_back(l->index);
  }
  // Counted once the load is no longer pending, and released after it: a worker that sees
  // the count move finds every read it counts finished (Worker::service_cold wakes its parked
  // slots only when the count moved).
  reads_.fetch_add(1, std::memory_order_release);
  // Freed by the thread that allocated it, outside the lock: it was never reachable.
  if (v != nullptr && !published) deps_.txns->free_version(ctx, v);
}

std::string ColdStore::describe(std::uint32_t segment, std::uint64_t offset, std::uint64_t bytes) {
  return "file " + std::to_string(segment) + " at offset " + std::to_string(offset) + " (" +
         std::to_string(bytes) + " bytes)";
}

ColdLoad* ColdStore::take_private() {
  const StageScope stage(Stage::kLoadTable);
  std::lock_guard<std::mutex> g(mutex_);
  if (free_.size() <= ahead_reserve_) return nullptr;
  const std::uint32_t i = free_.back();
  free_.pop_back();
  // The scan's reference: the read itself holds none, the scan waits for it before release.
  return &take(i, 1);
}

void ColdStore::complete_private(ColdLoad* l, std::int64_t result) {
  BRAID_ASSERT(l->pending());
  BRAID_ASSERT(l->slot == nullptr);
  l->extent_got = result;
  ios_.fetch_add(1, std::memory_order_relaxed);
  if (result < 0) {
    errors_.fetch_add(1, std::memory_order_relaxed);
  } else {
    read_bytes_.fetch_add(static_cast<std::uint64_t>(result), std::memory_order_relaxed);
  }
  wait_ns_.fetch_add(
      static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     std::chrono::steady_clock::now() - l->issued)
                                     .count()),
      std::memory_order_relaxed);
  if (l->file.id >= 0) {
    files_.release(l->extent_file);
    l->file = {};
  }
  l->in_flight.store(false, std::memory_order_release);
  extents_done_.fetch_add(1, std::memory_order_release);
}

Status ColdStore::fault_status(std::uint64_t e, std::uint64_t got, std::string_view fault) {
  BRAID_ASSERT(!fault.empty());
  if (got < entry::cold(e).size) {
    return Status::corruption("cold read of " + where(e) + " came back short (" +
                              std::to_string(got) + " bytes): " + std::string(fault));
  }
  return Status::corruption("cold record at " + where(e) + ": " + std::string(fault));
}

void ColdStore::release(ColdLoad* l) {
  const StageScope stage(Stage::kLoadTable);
  std::lock_guard<std::mutex> g(mutex_);
  BRAID_ASSERT(l->refs > 0);
  if (--l->refs == 0) {
    BRAID_ASSERT(!l->pending());
    free_.push_back(l->index);
  }
}

Status ColdStore::outcome(const ColdLoad* l) const {
  BRAID_ASSERT(!l->pending());
  return l->failure.is_ok() ? Status::ok() : Status(l->failure.code(), l->failure.message());
}

void ColdStore::read_sync(ColdLoad* l) {
  storage::IoRequest r;
  if (!prepare(l, &r)) return;  // failed and completed
  std::size_t got = 0;
  Status s = fs_->read(r.file, r.offset, r.len, r.out, &got);
  if (!s.is_ok()) {
    fail(l, Status::io_error("cold read of " + where(l->entry) + ": " + std::string(s.message())));
  }
  complete(l, static_cast<std::int64_t>(got));
}

template <typename Describe>
void ColdStore::spin_until_back(ColdPort* port, const ColdLoad* l, util::StallWatch& watch,
                                const Describe& describe) {
  const StageScope stage(Stage::kSyncWait);
  for (std::uint32_t spins = 0; l->pending(); ++spins) {
    if (port != nullptr) port->poll();
    if (spins >= util::kYieldingSpins) watch.turn(completed_reads(), describe);
    util::backoff(spins);
  }
}

Status ColdStore::load_sync(std::atomic<std::uint64_t>* slot, std::uint64_t e,
                            mvcc::TxnContext* ctx, std::uint32_t table, std::string_view key,
                            ColdPort* port, std::uint64_t* installed) {
  *installed = 0;
  util::StallWatch watch(deps_.stalls, "cold read");
  const auto describe = [&] {
    return "waiting for the read of " + where(e) + " (table " + std::to_string(table) + "); " +
           std::to_string(completed_reads()) + " cold reads completed in all";
  };
  // Every load in use: wait for one to come free, as any wait on another party's I/O does,
  // watched and never given up. A load is freed by a read completing (and its waiters letting
  // it go), which a worker may hold back to issue reads together (ExecOptions::read_window_us) or
  // delay while the OS runs something else; a bound by count of tries gave up under load.
  // The pool has a load for every transaction context (open.cc), so one comes free.
  for (std::uint32_t spins = 0;; ++spins) {
    const Miss m = join(slot, e, ctx, table, key);
    if (m.busy) {
      if (port != nullptr) port->poll();
      watch.turn(completed_reads(), describe);
      util::backoff(spins);
      continue;
    }
    if (m.load == nullptr) return Status::ok();
    if (m.lead && port != nullptr && port->has_ring()) {
      port->submit(m.load);
    } else if (m.lead) {
      read_sync(m.load);
    }
    spin_until_back(port, m.load, watch, describe);
    Status s = outcome(m.load);
    *installed = m.load->installed;
    release(m.load);
    return s;
  }
}

namespace {
thread_local ColdPort* tls_port = nullptr;
}  // namespace

ColdPort* ColdPort::current() { return tls_port; }
void ColdPort::set_current(ColdPort* port) { tls_port = port; }

Status ColdStore::fetch_sync(ColdPort* port, mvcc::TxnContext* ctx,
                             std::atomic<std::uint64_t>* slot, std::uint32_t table,
                             std::string_view key, std::uint64_t* out) {
  for (int round = 0; round < kMaxMissRounds; ++round) {
    const std::uint64_t e = slot->load(std::memory_order_acquire);
    if (!mvcc::entry::is_cold(e)) {
      *out = e;  // its versions stay allocated while our snapshot pins the horizon
      return Status::ok();
    }
    std::uint64_t installed = 0;
    Status s = load_sync(slot, e, ctx, table, key, port, &installed);
    if (!s.is_ok()) return s;
    if (installed != 0) {
      *out = installed;
      return Status::ok();
    }
  }
  return Status::busy("record evicted again on every read of it");
}

Status ColdStore::read_value(std::uint64_t e, std::uint32_t table, std::string_view key,
                             std::string* out, std::uint64_t* cts) {
  // A private load, never in active_: nobody joins it and nothing is installed.
  const entry::ColdAddress a = entry::cold(e);
  Result<storage::FileTable::Handle> h = files_.acquire(a.segment);
  if (!h.is_ok()) return h.status();
  const Span sp = span_of(a, h->direct);
  char* buf = static_cast<char*>(
      std::aligned_alloc(storage::kDirectAlign, storage::round_up(sp.len, storage::kDirectAlign)));
  if (buf == nullptr) {
    files_.release(a.segment);
    return Status::io_error("cannot allocate a cold-read buffer");
  }
  std::size_t got = 0;
  Status s = fs_->read(h->id, sp.start, sp.len, buf, &got);
  files_.release(a.segment);
  reads_.fetch_add(1, std::memory_order_relaxed);
  ios_.fetch_add(1, std::memory_order_relaxed);
  read_bytes_.fetch_add(got, std::memory_order_relaxed);
  storage::RecordView rv;
  if (s.is_ok()) s = verify(e, buf + sp.skip, got < sp.skip ? 0 : got - sp.skip, table, &key, &rv);
  if (s.is_ok()) {
    out->assign(rv.value);
    if (cts != nullptr) *cts = rv.cts;
  }
  std::free(buf);
  if (!s.is_ok()) errors_.fetch_add(1, std::memory_order_relaxed);
  return s;
}

void ColdStore::add_stats(DatabaseStats* out) const {
  out->memory_budget_bytes = budget_;
  out->memory_budget_counted_bytes = budget_ != 0 ? live_bytes() : 0;
  out->cold_reads = reads_.load(std::memory_order_relaxed);
  out->cold_read_ios = ios_.load(std::memory_order_relaxed);
  out->cold_read_bytes = read_bytes_.load(std::memory_order_relaxed);
  out->cold_read_joins = joins_.load(std::memory_order_relaxed);
  out->cold_read_errors = errors_.load(std::memory_order_relaxed);
  out->evictions = evictions_.load(std::memory_order_relaxed);
  out->cold_read_wait_ns = wait_ns_.load(std::memory_order_relaxed);
  out->read_drops = drops_.load(std::memory_order_relaxed);
  out->index_leaf_write_errors = leaf_write_errors_.load(std::memory_order_relaxed);
  out->records_demoted = demotions_.load(std::memory_order_relaxed);
  out->index_leaf_read_joins = leaf_joins_.load(std::memory_order_relaxed);
  out->index_run_list_bytes = held_bytes_.load(std::memory_order_relaxed);
}

// ---- A worker's reads
// ----------------------------------------------------------------------------

void ColdStore::add_shared_rows(std::size_t rows) {
  std::lock_guard<std::mutex> g(shared_mutex_);
  shared_reads_.resize(shared_reads_.size() + rows);
}

void ColdStore::remove_shared_rows(const ColdReader* owner, std::size_t rows) {
  std::lock_guard<std::mutex> g(shared_mutex_);
  // Every worker stopped before its reader goes, so nothing is held; what was let go on
  // another thread the owner collected in its destructor.
  std::size_t removed = 0;
  for (std::size_t i = shared_reads_.size(); i-- > 0 && removed < rows;) {
    BRAID_ASSERT(shared_reads_[i].owner != owner);
    if (shared_reads_[i].load != nullptr) continue;
    shared_reads_.erase(shared_reads_.begin() + static_cast<std::ptrdiff_t>(i));
    ++removed;
  }
  // Each reader's rows bound its own reads, so the others' reads leave at least its rows free.
  BRAID_ASSERT(removed == rows);
}

ColdLoad* ColdStore::read_shared(ColdReader* reader, std::uint32_t segment, std::uint64_t start,
                                 std::uint32_t len) {
  // Held across the issue: two workers that miss on one leaf at once must not both read it.
  // The issue only queues the read on the reader's ring (its next reap hands it to the kernel).
  std::lock_guard<std::mutex> g(shared_mutex_);
  SharedRead* free = nullptr;
  for (SharedRead& r : shared_reads_) {
    if (r.load == nullptr) {
      if (free == nullptr) free = &r;
      continue;
    }
    // A read nobody holds any more waits for its owner to give the buffer back; it may have
    // failed, and a new miss deserves a new try.
    if (r.holders == 0) continue;
    if (r.load->extent_file == segment && r.load->extent_start == start &&
        r.load->extent_len == len) {
      ++r.holders;
      leaf_joins_.fetch_add(1, std::memory_order_relaxed);
      return r.load;
    }
  }
  if (reader == nullptr) return nullptr;
  ColdLoad* l = reader->read_extent(segment, start, len, /*ahead=*/false);
  if (l == nullptr) return nullptr;
  // A reader holds at most kScanExtentsPerWorker buffers, each in at most one row, and brought
  // that many rows.
  BRAID_ASSERT(free != nullptr);
  *free = SharedRead{l, reader, 1};
  return l;
}

bool ColdStore::release_shared(const ColdReader* caller, ColdLoad* l) {
  std::lock_guard<std::mutex> g(shared_mutex_);
  for (SharedRead& r : shared_reads_) {
    if (r.load != l) continue;
    BRAID_ASSERT(r.holders > 0);
    if (--r.holders != 0) return false;
    if (r.owner == caller) {
      r = SharedRead{};
      return true;
    }
    // The owner's thread gives the buffer back; the row stays until it collects it.
    r.owner->note_released();
    return false;
  }
  BRAID_ASSERT(false);  // a read not shared
  return false;
}

void ColdStore::release_joined(ColdLoad* l) {
  const bool last_of_caller = release_shared(nullptr, l);
  BRAID_ASSERT(!last_of_caller);  // a reader issued it, never a thread without one
}

void ColdStore::wait_shared(ColdPort* port, const ColdLoad* l) {
  util::StallWatch watch(deps_.stalls, "index leaf read");
  const auto what = [&] {
    return "waiting for the shared read of " +
           describe(l->extent_file, l->extent_start, l->extent_len) + "; " +
           std::to_string(completed_reads()) + " cold reads completed in all";
  };
  spin_until_back(port, l, watch, what);
}

std::size_t ColdStore::take_released(ColdReader* owner, ColdLoad** out, std::size_t max) {
  std::lock_guard<std::mutex> g(shared_mutex_);
  std::size_t n = 0;
  for (SharedRead& r : shared_reads_) {
    if (n == max) break;
    if (r.load == nullptr || r.owner != owner || r.holders != 0) continue;
    out[n++] = r.load;
    r = SharedRead{};
  }
  owner->note_collected(static_cast<std::uint32_t>(n));
  return n;
}

ColdReader::ColdReader(ColdStore* store, std::unique_ptr<storage::IoQueue> channel,
                       std::size_t backlog)
    : store_(store), channel_(std::move(channel)) {
  store_->add_shared_rows(kScanExtentsPerWorker);
  backlog_.reserve(backlog);
  constexpr std::size_t kBytes = std::size_t{kMaxInFlight} * ColdLoad::kBufBytes;
  buffers_.reset(static_cast<char*>(std::aligned_alloc(storage::kDirectAlign, kBytes)));
  if (buffers_ == nullptr) return;  // the loads' own buffers serve
  free_buffers_.reserve(kMaxInFlight);
  for (std::uint32_t i = kMaxInFlight; i-- > 0;) free_buffers_.push_back(i);
  fixed_ = register_zeroed(buffers_.get(), kBytes);
  constexpr std::size_t kExtentBlock = std::size_t{kExtents} * kExtentBytes;
  extent_block_.reset(static_cast<char*>(std::aligned_alloc(storage::kDirectAlign, kExtentBlock)));
  if (extent_block_ == nullptr) return;  // every load is read alone
  extent_fixed_ = register_zeroed(extent_block_.get(), kExtentBlock);
  extents_ = std::make_unique<Extent[]>(kExtents);
  free_extents_.reserve(kExtents);
  for (std::uint32_t i = kExtents; i-- > 0;) {
    extents_[i].buf = extent_block_.get() + std::size_t{i} * kExtentBytes;
    free_extents_.push_back(i);
  }
}

ColdReader::~ColdReader() {
  collect_released();
  store_->remove_shared_rows(this, kScanExtentsPerWorker);
  // Reads still in flight name the block (the channel waits for them as it goes); once none
  // do, the ring lets it go.
  // (The queue knows what it registered: nothing, and this is a no-op.)
  if (channel_->in_flight() == 0) channel_->unregister_buffers();
}

std::int32_t ColdReader::register_zeroed(char* block, std::size_t bytes) {
  std::memset(block, 0, bytes);  // backed before the kernel pins it
  return channel_->register_buffer(block, bytes);
}

char* ColdReader::take_buffer() {
  if (free_buffers_.empty()) return nullptr;
  const std::uint32_t i = free_buffers_.back();
  free_buffers_.pop_back();
  return buffers_.get() + std::size_t{i} * ColdLoad::kBufBytes;
}

void ColdReader::give_back(char* buffer) {
  if (buffer == nullptr) return;
  const auto off = static_cast<std::size_t>(buffer - buffers_.get());
  BRAID_DASSERT(off % ColdLoad::kBufBytes == 0);
  BRAID_ASSERT(off / ColdLoad::kBufBytes < kMaxInFlight);
  BRAID_ASSERT(free_buffers_.size() < kMaxInFlight);
  free_buffers_.push_back(static_cast<std::uint32_t>(off / ColdLoad::kBufBytes));
}

void ColdReader::configure_extents(std::uint32_t bytes) {
  BRAID_ASSERT(scan_block_ == nullptr);  // before the first extent
  BRAID_ASSERT(bytes % storage::kDirectAlign == 0);
  scan_bytes_ = bytes;
}

ColdLoad* ColdReader::read_extent(std::uint32_t segment, std::uint64_t start, std::uint32_t len,
                                  bool ahead) {
  BRAID_ASSERT(len > 0);
  BRAID_ASSERT(len <= scan_bytes_);
  BRAID_ASSERT(start % storage::kDirectAlign == 0);
  BRAID_ASSERT(len % storage::kDirectAlign == 0);
  if (scan_block_ == nullptr) {
    // A failed allocation is not retried on every record: the scans read record by record.
    if (scan_bytes_ == 0) return nullptr;
    const std::size_t bytes = std::size_t{kScanExtentsPerWorker} * scan_bytes_;
    scan_block_.reset(static_cast<char*>(std::aligned_alloc(storage::kDirectAlign, bytes)));
    if (scan_block_ == nullptr) {
      scan_bytes_ = 0;
      return nullptr;
    }
    scan_fixed_ = register_zeroed(scan_block_.get(), bytes);
    free_scan_.reserve(kScanExtentsPerWorker);
    for (std::uint32_t i = kScanExtentsPerWorker; i-- > 0;) free_scan_.push_back(i);
  }
  if (free_scan_.size() <= (ahead ? kScanExtentsReserved : 0)) return nullptr;
  if (channel_->in_flight() >= kMaxInFlight) return nullptr;
  ColdLoad* l = store_->take_private();
  if (l == nullptr) return nullptr;
  Result<storage::FileTable::Handle> h = store_->files().acquire(segment);
  if (!h.is_ok()) {  // a checkpoint deleted it after moving its records: they are read anew
    l->in_flight.store(false, std::memory_order_relaxed);
    store_->release(l);
    return nullptr;
  }
  const std::uint32_t bi = free_scan_.back();
  l->file = *h;
  l->extent_file = segment;
  l->extent_start = start;
  l->extent_len = len;
  l->ring_buf = scan_block_.get() + std::size_t{bi} * scan_bytes_;
  l->issued = std::chrono::steady_clock::now();
  storage::IoRequest r = read_of(h->id, start, l->ring_buf, len, kScanExtentTag | l->index);
  r.fixed_buffer = scan_fixed_;
  if (Status s = channel_->submit(r); !s.is_ok()) {
    // A full ring (the log's requests share it): the scan reads its record the usual way.
    l->ring_buf = nullptr;
    store_->files().release(segment);
    l->file = {};
    l->in_flight.store(false, std::memory_order_relaxed);
    store_->release(l);
    return nullptr;
  }
  free_scan_.pop_back();
  ++counters_.issued;
  if (r.fixed_buffer >= 0) ++counters_.registered;
  return l;
}

void ColdReader::flush_extents() {
  ++counters_.submissions;
  (void)channel_->flush();
}

void ColdReader::release_extent(ColdLoad* l) {
  BRAID_ASSERT(!l->pending());
  BRAID_ASSERT(l->slot == nullptr);
  if (l->ring_buf != nullptr) {
    const auto off = static_cast<std::size_t>(l->ring_buf - scan_block_.get());
    BRAID_DASSERT(off % scan_bytes_ == 0);
    BRAID_ASSERT(off / scan_bytes_ < kScanExtentsPerWorker);
    free_scan_.push_back(static_cast<std::uint32_t>(off / scan_bytes_));
    l->ring_buf = nullptr;
  }
  store_->release(l);
}

ColdLoad* ColdReader::read_shared(std::uint32_t segment, std::uint64_t start, std::uint32_t len) {
  if (len > scan_bytes_) return nullptr;  // its blocks do not fit a scan's buffer
  // Buffers other threads let go come back first: the read may need one.
  collect_released();
  return store_->read_shared(this, segment, start, len);
}

void ColdReader::release_shared(ColdLoad* l) {
  if (store_->release_shared(this, l)) release_extent(l);
}

void ColdReader::collect_released_slow() {
  ColdLoad* got[kScanExtentsPerWorker];
  const std::size_t n = store_->take_released(this, got, kScanExtentsPerWorker);
  for (std::size_t i = 0; i < n; ++i) release_extent(got[i]);
}

void ColdReader::submit(ColdLoad* load) {
  if (backlog_.empty()) first_wait_ = std::chrono::steady_clock::now();
  backlog_.push_back(load);
  if (plugged_ == 0 && backlog_.size() >= batch_) issue();
}

void ColdReader::unplug() {
  BRAID_ASSERT(plugged_ > 0);
  if (--plugged_ == 0 && backlog_.size() >= batch_) issue();
}

void ColdReader::configure(std::uint32_t batch, std::chrono::microseconds window) {
  BRAID_ASSERT(batch >= 1);
  BRAID_ASSERT(batch <= kMaxInFlight);
  batch_ = batch;
  window_ = window;
}

void ColdReader::service(bool force) {
  if (!busy()) return;
  reap();
  if (backlog_.empty()) return;
  // The window is looked at every kWindowPolls services, not each: a worker services every
  // round, and a clock read would cost a round a sizeable share of its time. A read waits at
  // most that many rounds past its window.
  if (force || backlog_.size() >= batch_ ||
      ((++window_polls_ & (kWindowPolls - 1)) == 0 &&
       std::chrono::steady_clock::now() - first_wait_ >= window_)) {
    issue();
  }
}

void ColdReader::reap() {
  // The channel's poll reaps the ring itself when nothing of ours is buffered yet.
  const StageScope stage(Stage::kReap);
  storage::IoCompletion done[16];
  for (;;) {
    const std::size_t n = channel_->poll(done, 16, false);
    if (n != 0) {
      ++counters_.reaps;
      counters_.reaped += n;
    }
    for (std::size_t k = 0; k < n; ++k) {
      if ((done[k].user & kScanExtentTag) == kScanExtentTag) {
        store_->complete_private(store_->load_at(static_cast<std::uint32_t>(done[k].user)),
                                 done[k].result);
        continue;
      }
      if ((done[k].user & kExtentTag) != 0) {
        complete_extent(static_cast<std::uint32_t>(done[k].user), done[k].result);
        continue;
      }
      // The tag names the load and its generation; a load is reused only after its read
      // completed, so a tag that does not match is a bug, not a late completion.
      ColdLoad* l = store_->load_at(static_cast<std::uint32_t>(done[k].user >> 32));
      BRAID_ASSERT(l->generation == static_cast<std::uint32_t>(done[k].user));
      // Read before complete(): the load may be reused by another thread once it returns.
      char* const lent = l->ring_buf;
      store_->complete(l, done[k].result);
      give_back(lent);
    }
    if (n < 16) break;
  }
}

std::size_t ColdReader::neighbours(std::size_t first) const {
  if (free_extents_.empty()) return 1;
  // Planned on whole blocks, what an O_DIRECT read covers; a buffered file reads less.
  const entry::ColdAddress a = entry::cold(backlog_[first]->entry);
  const Span s = span_of(a, true);
  if (s.len > ColdLoad::kBufBytes) return 1;  // a big record reads into its own buffer
  std::uint64_t lo = s.start, hi = s.start + s.len;
  std::size_t n = 1;
  for (std::size_t k = first + 1; k < backlog_.size() && n < kExtentMembers; ++k, ++n) {
    if (backlog_[k] == nullptr) break;
    const entry::ColdAddress b = entry::cold(backlog_[k]->entry);
    if (b.segment != a.segment) break;
    const Span t = span_of(b, true);
    if (t.len > ColdLoad::kBufBytes) break;
    // Near what the extent covers, on either side (a reverse scan comes down the file).
    if (t.start > hi + kExtentGap || t.start + t.len + kExtentGap < lo) break;
    const std::uint64_t nlo = std::min(lo, t.start), nhi = std::max(hi, t.start + t.len);
    if (nhi - nlo > kExtentBytes) break;
    lo = nlo;
    hi = nhi;
  }
  return n;
}

bool ColdReader::issue_extent(std::size_t first, std::size_t n) {
  BRAID_ASSERT(!free_extents_.empty());
  BRAID_ASSERT(n <= kExtentMembers);
  const std::uint32_t xi = free_extents_.back();
  Extent& x = extents_[xi];
  x.loads = 0;
  std::uint64_t lo = UINT64_MAX, hi = 0;
  storage::FileId file = -1;
  for (std::size_t k = first; k < first + n; ++k) {
    ColdLoad* l = backlog_[k];
    l->ring_buf = nullptr;
    storage::IoRequest r;
    if (!store_->prepare(l, &r)) {  // failed and completed: not to be issued again
      backlog_[k] = nullptr;
      continue;
    }
    BRAID_DASSERT(l->big == nullptr);  // neighbours() admits no record that needs one
    BRAID_DASSERT(file < 0 || file == r.file);
    file = r.file;
    x.load[x.loads] = l;
    x.at[x.loads] = r.offset;
    ++x.loads;
    lo = std::min(lo, r.offset);
    hi = std::max(hi, r.offset + r.len);
  }
  if (x.loads == 0) return true;
  BRAID_ASSERT(hi - lo <= kExtentBytes);
  x.start = lo;
  storage::IoRequest r =
      read_of(file, lo, x.buf, static_cast<std::uint32_t>(hi - lo), kExtentTag | xi);
  r.fixed_buffer = extent_fixed_;
  if (Status s = channel_->submit(r); !s.is_ok()) {
    // As for one load (issue()): a full ring makes the loads wait, prepared, for room.
    if (channel_->in_flight() > 0) return false;
    for (std::uint32_t j = 0; j < x.loads; ++j) store_->complete(x.load[j], -EIO);
    return true;
  }
  free_extents_.pop_back();
  ++counters_.issued;
  if (r.fixed_buffer >= 0) ++counters_.registered;
  return true;
}

void ColdReader::complete_extent(std::uint32_t index, std::int64_t result) {
  BRAID_ASSERT(index < kExtents);
  Extent& x = extents_[index];
  BRAID_ASSERT(x.loads > 0);
  for (std::uint32_t j = 0; j < x.loads; ++j) {
    ColdLoad* l = x.load[j];
    const std::uint64_t off = x.at[j] - x.start;
    // Its bytes are where its own read would have put them: complete() verifies from there.
    l->ring_buf = x.buf + off;
    const std::int64_t mine =
        result < 0 ? result : std::max<std::int64_t>(result - static_cast<std::int64_t>(off), 0);
    // The first load counts the read; complete() may hand the load to another thread.
    store_->complete(l, mine, j == 0 ? std::max<std::int64_t>(result, 0) : ColdStore::kNoRead);
  }
  x.loads = 0;
  free_extents_.push_back(index);
}

void ColdReader::issue() {
  if (backlog_.empty()) return;
  const StageScope stage(Stage::kSubmit);
  const std::uint64_t issued_before = counters_.issued;
  std::size_t issued = 0;
  while (issued < backlog_.size() && channel_->in_flight() < kMaxInFlight) {
    if (backlog_[issued] == nullptr) {  // completed by an extent's prepare() that failed
      ++issued;
      continue;
    }
    if (const std::size_t n = neighbours(issued); n > 1) {
      if (!issue_extent(issued, n)) break;
      issued += n;
      continue;
    }
    ColdLoad* l = backlog_[issued++];
    // One buffer per read in flight, and at most kMaxInFlight are: one is free.
    char* const lent = take_buffer();
    l->ring_buf = lent;
    storage::IoRequest r;
    if (!store_->prepare(l, &r)) {  // failed and completed
      give_back(lent);
      continue;
    }
    // A record too big for it reads into its own buffer (prepare()), not the registered one.
    if (lent != nullptr && r.out == lent) r.fixed_buffer = fixed_;
    r.user = (std::uint64_t{l->index} << 32) | l->generation;
    if (Status s = channel_->submit(r); !s.is_ok()) {
      // A full ring (the log's requests share it) is not the read's failure: it waits for
      // our reads in flight to make room. With none in flight the ring refuses for good.
      l->ring_buf = nullptr;  // lent again when it is issued
      give_back(lent);
      if (channel_->in_flight() > 0) {
        --issued;
        break;
      }
      store_->complete(l, -EIO);
    } else {
      ++counters_.issued;
      if (r.fixed_buffer >= 0) ++counters_.registered;
    }
  }
  backlog_.erase(backlog_.begin(), backlog_.begin() + static_cast<std::ptrdiff_t>(issued));
  if (!backlog_.empty()) first_wait_ = std::chrono::steady_clock::now();
  if (counters_.issued != issued_before) ++counters_.submissions;
  (void)channel_->flush();
}

// ---- Bulk reads
// ----------------------------------------------------------------------------

BulkRead::BulkRead(ColdStore* store, const ColdStore::BulkOptions& options)
    : store_(store), options_(options), window_(options.depth) {
  BRAID_ASSERT(options.depth > 0);
  BRAID_ASSERT(options.extent_bytes >= storage::kDirectAlign);
  // Big enough for an extent that ends with a record of the largest size.
  buf_bytes_ = storage::round_up(std::uint64_t{options.extent_bytes} + storage::kMaxColdSize +
                                     options.gap_bytes + 2 * storage::kDirectAlign,
                                 storage::kDirectAlign);
  for (Extent& x : window_) {
    x.buf = static_cast<char*>(std::aligned_alloc(storage::kDirectAlign, buf_bytes_));
    if (x.buf == nullptr) buffers_ = false;
  }
  carry_.reset(new (std::nothrow) char[storage::kDirectAlign]);
  if (carry_ == nullptr) buffers_ = false;
}

BulkRead::~BulkRead() {
  BRAID_ASSERT(idle());  // a read in flight still writes into its buffer
  for (Extent& x : window_) std::free(x.buf);
}

void BulkRead::start(std::vector<ColdStore::BulkRecord>* refs, std::uint32_t table,
                     ColdStore::BulkVisit visit) {
  BRAID_ASSERT(idle());
  refs_ = refs;
  table_ = table;
  visit_ = std::move(visit);
  // The cold word holds file, offset and size from its high bits down: its order is file order.
  std::sort(refs->begin(), refs->end(),
            [](const ColdStore::BulkRecord& a, const ColdStore::BulkRecord& b) {
              return a.entry < b.entry;
            });
  next_ = 0;
  carry_next_ = false;
  error_counted_ = false;
  status_ = buffers_ ? Status::ok() : Status::io_error("cannot allocate the bulk reader's buffers");
}

void BulkRead::submit(storage::IoQueue& queue, Extent& x) {
  storage::IoRequest req;
  req.op = storage::IoRequest::Op::kRead;
  req.file = x.handle.id;
  req.offset = x.start + x.got;
  req.out = x.buf + x.got;
  req.len = static_cast<std::uint32_t>(x.len - x.got);
  req.user = static_cast<std::uint64_t>(&x - window_.data());
  ++stats_.reads;
  if (Status s = queue.submit(req); !s.is_ok()) {
    x.done = true;
    x.error = -EIO;
  } else {
    ++in_flight_;
  }
}

Status BulkRead::plan(storage::IoQueue& queue, Extent& x) {
  const std::vector<ColdStore::BulkRecord>& r = *refs_;
  const entry::ColdAddress a = entry::cold(r[next_].entry);
  Result<storage::FileTable::Handle> h = store_->files_.acquire(a.segment);
  if (!h.is_ok()) {
    return Status::io_error(std::string(h.status().message()) + " (cold record at " +
                            where(r[next_].entry) + ")");
  }
  const Span sp = span_of(a, h->direct);
  x.file = a.segment;
  x.handle = *h;
  x.start = sp.start;
  std::uint64_t end = sp.start + sp.len;
  x.first = next_;
  x.carry_in = carry_next_;
  x.carry_out = false;
  carry_next_ = false;
  for (++next_; next_ < r.size(); ++next_) {
    const entry::ColdAddress b = entry::cold(r[next_].entry);
    if (b.segment != a.segment) break;
    const Span nb = span_of(b, h->direct);
    if (nb.start > end + options_.gap_bytes) break;
    if (nb.start + nb.len - x.start > options_.extent_bytes) {
      // Past the cap. Packed records share blocks (O_DIRECT reads whole ones): when this
      // record starts in the block the extent ends with, the next extent starts there too
      // but takes that block from this one's buffer instead of reading it again.
      if (nb.start < end && end - nb.start == storage::kDirectAlign) {
        x.carry_out = true;
        carry_next_ = true;
      }
      break;
    }
    end = std::max(end, nb.start + nb.len);
  }
  x.end = next_;
  x.len = end - x.start;
  BRAID_ASSERT(x.len <= buf_bytes_);
  x.got = x.carry_in ? storage::kDirectAlign : 0;  // the first block comes with the last extent
  x.done = false;
  x.error = 0;
  if (x.got < x.len) {
    submit(queue, x);
  } else {
    x.done = true;
  }
  return Status::ok();
}

Status BulkRead::hand_out(Extent& x) {
  if (x.error < 0) {
    return Status::io_error("bulk read of file " + std::to_string(x.file) + " at offset " +
                            std::to_string(x.start) + ": " + std::strerror(-x.error));
  }
  // Extents are handed out in order, so the block this one shares with the last is there.
  if (x.carry_in) std::memcpy(x.buf, carry_.get(), storage::kDirectAlign);
  const std::vector<ColdStore::BulkRecord>& r = *refs_;
  for (std::size_t i = x.first; i < x.end; ++i) {
    const entry::ColdAddress a = entry::cold(r[i].entry);
    const std::uint64_t off = a.offset - x.start;
    storage::RecordView rv;
    // The key is checked by its hash below: the load knows no more of it.
    if (Status s =
            verify(r[i].entry, x.buf + off, x.got > off ? x.got - off : 0, table_, nullptr, &rv);
        !s.is_ok()) {
      return s;
    }
    if (ColdStore::key_hash(rv.key) != r[i].key_hash) {
      return Status::corruption("cold record at " + where(r[i].entry) +
                                " is not the record of the key whose entry names it");
    }
    if (Status s = visit_(r[i], rv); !s.is_ok()) return s;
    ++stats_.records;
  }
  if (x.carry_out)
    std::memcpy(carry_.get(), x.buf + x.len - storage::kDirectAlign, storage::kDirectAlign);
  return Status::ok();
}

bool BulkRead::step(storage::IoQueue& queue, bool wait) {
  const std::size_t depth = window_.size();
  for (int round = 0;; ++round) {
    while (status_.is_ok() && refs_ != nullptr && next_ < refs_->size() &&
           issued_ - head_ < depth) {
      Extent& x = window_[issued_ % depth];
      if (Status s = plan(queue, x); !s.is_ok()) {
        status_ = s;
        break;
      }
      ++issued_;
    }
    // In order: the head is handed out once its read is whole.
    while (head_ < issued_ && window_[head_ % depth].done) {
      Extent& x = window_[head_ % depth];
      if (status_.is_ok()) status_ = hand_out(x);
      store_->files_.release(x.file);
      ++head_;
    }
    if (head_ == issued_ && (!status_.is_ok() || refs_ == nullptr || next_ == refs_->size())) {
      store_->reads_.fetch_add(stats_.records - counted_records_, std::memory_order_relaxed);
      store_->ios_.fetch_add(stats_.reads - counted_reads_, std::memory_order_relaxed);
      store_->read_bytes_.fetch_add(stats_.bytes - counted_bytes_, std::memory_order_relaxed);
      counted_records_ = stats_.records;
      counted_reads_ = stats_.reads;
      counted_bytes_ = stats_.bytes;
      if (!status_.is_ok() && !error_counted_) {
        store_->errors_.fetch_add(1, std::memory_order_relaxed);
        error_counted_ = true;
      }
      return true;
    }
    // One collection per call, so a caller that waits keeps its own watch turning.
    if (round == 1) return false;
    storage::IoCompletion done[32];
    const std::size_t n = queue.poll(done, 32, wait);
    for (std::size_t k = 0; k < n; ++k) {
      BRAID_ASSERT(done[k].user < depth);
      Extent& x = window_[done[k].user];
      BRAID_ASSERT(in_flight_ > 0);
      --in_flight_;
      ++completions_;
      if (done[k].result > 0) stats_.bytes += static_cast<std::uint64_t>(done[k].result);
      if (done[k].result < 0) {
        x.error = done[k].result;
        x.done = true;
      } else if (done[k].result == 0 ||
                 x.got + static_cast<std::uint64_t>(done[k].result) >= x.len) {
        x.got += static_cast<std::uint64_t>(done[k].result);
        x.done = true;  // whole, or the file ends (the records past it fail to verify)
      } else {
        x.got += static_cast<std::uint64_t>(done[k].result);
        submit(queue, x);  // a short read: the rest
      }
    }
  }
}

Status ColdStore::read_in_file_order(std::vector<BulkRecord>* refs, std::uint32_t table,
                                     const BulkOptions& options, const BulkVisit& visit,
                                     BulkStats* stats) {
  if (refs->empty()) return Status::ok();
  Result<std::unique_ptr<storage::IoQueue>> q = fs_->make_queue(options.depth);
  if (!q.is_ok()) return q.status();
  BulkRead read(this, options);
  read.start(refs, table, visit);
  util::StallWatch watch(deps_.stalls, "bulk cold read");
  while (!read.step(**q, true)) {
    watch.turn(read.completions(),
               [&] { return std::to_string(read.in_flight()) + " extent read(s) in flight"; });
  }
  if (stats != nullptr) {
    stats->records += read.stats().records;
    stats->reads += read.stats().reads;
    stats->bytes += read.stats().bytes;
  }
  return read.status();
}

}  // namespace braid::engine
