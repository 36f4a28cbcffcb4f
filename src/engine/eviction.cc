// The cold store's eviction (engine/cold_store.h): a CLOCK sweep in bounded steps, run by the
// workers between rounds and by application threads at commit, turning records whose head may
// go back into cold entries; and the noting of evictions while a checkpoint runs.
#include "engine/cold_store.h"

#include <algorithm>
#include <mutex>
#include <shared_mutex>

#include "engine/table.h"
#include "mvcc/txn.h"
#include "util/assert.h"

namespace braid::engine {

namespace entry = mvcc::entry;

namespace {
// Eviction runs from `budget` (high water) down to 90 % of it (low water), so a sweep frees a
// batch instead of one record per allocation.
constexpr std::uint64_t kLowWaterPercent = 90;
}  // namespace

bool ColdStore::evict(std::atomic<std::uint64_t>& slot, mvcc::TxnContext* ctx,
                      std::uint64_t durable, std::uint64_t horizon, std::uint64_t* to,
                      std::uint64_t* bytes) {
  std::uint64_t e = slot.load(std::memory_order_acquire);
  if (!entry::is_hot(e)) return false;
  mvcc::Version* v = entry::hot(e);
  const std::uint64_t stamp = v->stamp.load(std::memory_order_acquire);
  // Committed, seen by every snapshot there is or will be (so nothing older is needed), and
  // on disk (so `home` is set and names a record that survives a crash).
  if (mvcc::is_owner_stamp(stamp) || stamp > horizon || stamp > durable) return false;
  // A removed record keeps its tombstone in memory: a cold entry always names a value.
  if (v->tombstone()) return false;
  // The checkpoint rewrites `home` as its chunks are written (ColdStore::gate).
  const std::uint64_t home =
      std::atomic_ref<std::uint64_t>(v->home).load(std::memory_order_relaxed);
  if (home == 0) return false;  // no record it could be read back from
  BRAID_DASSERT(entry::is_cold(home));
  // Second chance: read since the last pass (clear), it stays and is marked; the next pass
  // evicts it unless a read clears the mark again (mvcc/version.h).
  if (v->cooling.load(std::memory_order_relaxed) == 0) {
    v->cooling.store(1, std::memory_order_relaxed);
    return false;
  }
  if (!slot.compare_exchange_strong(e, home, std::memory_order_acq_rel)) return false;
  deps_.txns->note_evicted(v);  // its readers' stamps survive in the cold floor (mvcc/ssn.h)
  *to = home;
  // Readers that loaded the entry before the CAS may still walk these versions: retire them
  // (freed once the horizon passes), as pruning does.
  for (mvcc::Version* x = v; x != nullptr;) {
    mvcc::Version* next = x->next.load(std::memory_order_acquire);
    *bytes += mvcc::Version::bytes_for(x->size);
    deps_.txns->retire(ctx, x);
    x = next;
  }
  evictions_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

bool ColdStore::drop(std::atomic<std::uint64_t>& slot, std::uint64_t e, mvcc::TxnContext* ctx,
                     bool by_load) {
  if (!entry::is_hot(e)) return false;
  mvcc::Version* v = entry::hot(e);
  // Only what a load installed: one committed version read from its durable record (so no
  // snapshot needs anything older, and reading `home` again gives every snapshot the same).
  if (v->next.load(std::memory_order_acquire) != nullptr) return false;
  // The file deletion protocol of sweep(): hold the gate from reading `home` to noting it.
  std::shared_lock<std::shared_mutex> gate(gate_, std::try_to_lock);
  if (!gate.owns_lock()) return false;
  const std::uint64_t home =
      std::atomic_ref<std::uint64_t>(v->home).load(std::memory_order_relaxed);
  if (home == 0) return false;
  BRAID_DASSERT(entry::is_cold(home));
  if (!slot.compare_exchange_strong(e, home, std::memory_order_acq_rel)) return false;
  deps_.txns->note_evicted(v);
  deps_.txns->retire(ctx, v);
  (by_load ? evictions_ : drops_).fetch_add(1, std::memory_order_relaxed);
  if (noting_) {
    std::lock_guard<std::mutex> g(noted_mutex_);
    const std::uint64_t file = entry::cold(home).segment;
    const auto at = std::lower_bound(noted_.begin(), noted_.end(), file);
    if (at == noted_.end() || *at != file) noted_.insert(at, file);
  }
  return true;
}

std::uint64_t ColdStore::live_bytes() const {
  std::int64_t bytes = 0;
  const mvcc::TxnTable& t = *deps_.txns;
  // Retired versions are freed once the horizon passes them, whatever eviction does: counting
  // them would evict more while they wait (every sweep until the next sample: the whole cache).
  for (std::uint32_t i = 0; i < t.size(); ++i) {
    bytes += t.at(i).version_bytes_live.load(std::memory_order_relaxed) -
             t.at(i).retired_bytes.load(std::memory_order_relaxed);
  }
  if (bytes < 0) return 0;
  if (!pages_index_) return static_cast<std::uint64_t>(bytes);
  // Where the index pages, the budget is the engine's whole data: a paging tree's frames, its
  // nodes and the free frames it keeps for loads (its leaves are what the leaves' hand gives
  // back, and the frames they leave go back past twice what the tree keeps, sweep_leaves);
  // the OID array's pages (demotion frees OIDs of cold records, and whole pages of free OIDs
  // go back, OidArray::trim_locked); and the secondary trees' frames, whose leaves the same
  // hand gives back.
  const std::uint32_t tables = deps_.tables->table_count();
  for (std::uint32_t i = 0; i < tables; ++i) {
    Table* table = deps_.tables->table_at(i);
    if (table == nullptr || !table->index().pages()) continue;
    bytes += static_cast<std::int64_t>(table->index().frame_bytes());
    bytes += static_cast<std::int64_t>(table->oids().used_bytes());
    for (std::uint32_t s = 0; s < table->index_count(); ++s) {
      bytes += static_cast<std::int64_t>(table->secondary(s)->tree().frame_bytes());
    }
  }
  // And what no hand gives back: the run list an open adopted.
  bytes += static_cast<std::int64_t>(held_bytes_.load(std::memory_order_relaxed));
  return bytes < 0 ? 0 : static_cast<std::uint64_t>(bytes);
}

namespace {
// One table's pass of the leaves' hand.
struct LeafPass {
  Table* table;
  mvcc::TxnContext* ctx;  // takes the demoted records' OIDs (null: demote none)
  std::uint64_t demoted = 0;
};

// A leaf that holds a record an open transaction writes stays in memory: an abort removes its
// fresh keys from the index, which must not fail on a load (DatabaseImpl::abort). Its head is
// then an owner's version, or an aborted one not yet unlinked.
bool no_open_writes(void* arg, const index::Node& leaf) {
  Table* table = static_cast<LeafPass*>(arg)->table;
  for (unsigned i = 0; i < leaf.count; ++i) {
    const std::uint64_t named = leaf.tails(leaf.count)[i].value;
    if (!leaf_value::names_oid(named)) continue;  // a record on storage: nobody writes it
    const std::uint64_t oid = leaf_value::oid(named);
    BRAID_DASSERT(oid < table->oids().allocated());
    const std::uint64_t e = table->oids().entry(oid).load(std::memory_order_acquire);
    if (!entry::is_hot(e)) continue;
    const std::uint64_t stamp = entry::hot(e)->stamp.load(std::memory_order_acquire);
    if (mvcc::is_owner_stamp(stamp) || stamp == mvcc::kInvisible) return false;
  }
  return true;
}

// The same for a secondary tree's leaf: an abort removes the entries its transaction added
// (DatabaseImpl::remove_secondary_adds), and such an entry names the OID whose head is the
// transaction's own version. An attached entry names no OID (Index::kNoOid): nobody's write.
bool no_open_entries(void* arg, const index::Node& leaf) {
  Table* table = static_cast<LeafPass*>(arg)->table;
  for (unsigned i = 0; i < leaf.count; ++i) {
    const std::uint64_t packed = leaf.tails(leaf.count)[i].value;
    if (Index::names_no_oid(packed)) continue;
    const std::uint64_t oid = Index::oid_of(packed);
    // A stale entry may name an OID the array has given back since (a page of free entries
    // reads as empty): nobody writes through it.
    if (oid >= table->oids().allocated()) continue;
    const std::uint64_t e = table->oids().entry(oid).load(std::memory_order_acquire);
    if (!entry::is_hot(e)) continue;
    const std::uint64_t stamp = entry::hot(e)->stamp.load(std::memory_order_acquire);
    if (mvcc::is_owner_stamp(stamp) || stamp == mvcc::kInvisible) return false;
  }
  return true;
}

// Demotion (docs/internals/index-paging.md, decision 4), with the leaf locked: a record its
// leaf names by an OID whose entry is cold (evicted) is named by that address instead, so the
// OID array holds only records in memory and those on their way out. The entry turns moved
// first, by a CAS from the address: a load that installed the record first wins and the OID
// stays. Whoever took the OID before finds moved and looks the key up again (relocate); the
// OID itself waits for the horizon in the context's freed OIDs, as a removed record's does.
void demote_cold(void* arg, index::Node& leaf) {
  auto* pass = static_cast<LeafPass*>(arg);
  Table* table = pass->table;
  index::Tail* tails = leaf.tails(leaf.count);
  for (unsigned i = 0; i < leaf.count; ++i) {
    const std::uint64_t named = tails[i].value;
    if (!leaf_value::names_oid(named)) continue;  // named by address already
    const std::uint64_t oid = leaf_value::oid(named);
    BRAID_DASSERT(oid < table->oids().allocated());
    std::atomic<std::uint64_t>& slot = table->oids().entry(oid);
    std::uint64_t e = slot.load(std::memory_order_acquire);
    if (!entry::is_cold(e)) continue;
    if (!slot.compare_exchange_strong(e, entry::kMoved, std::memory_order_acq_rel)) continue;
    tails[i].value = e;  // a cold word is the leaf value that names that address (leaf_value)
    pass->ctx->freed_oids.push_back({table, oid, mvcc::kUnsealed});
    // Counted as a record by address before its OID stops counting: stats() may read one
    // record too many in between, never one too few.
    table->note_named_by_address(1);
    mvcc::add_own(pass->ctx->oids_not_records, 1);
    ++pass->demoted;
  }
}
}  // namespace

std::uint64_t ColdStore::sweep_leaves(std::uint32_t keys, mvcc::TxnContext* ctx) {
  if (!pages_index_) return 0;
  std::unique_lock<std::mutex> g(leaf_mutex_, std::try_to_lock);
  if (!g.owns_lock()) return 0;
  ++leaf_sweeps_;
  leaf_credit_ += keys;
  if (leaf_credit_ < kLeafBatchKeys) return 0;
  if (leaf_hand_.empty()) {  // a lap begins (kMinLapSweeps)
    if (leaf_sweeps_ - leaf_lap_start_ < kMinLapSweeps) return 0;
    leaf_lap_start_ = leaf_sweeps_;
  }
  const std::uint64_t pace = leaf_credit_;
  leaf_credit_ = 0;
  // The hand walks every paging tree in turn: a table's primary tree (leaf_tree_ 0), then its
  // secondary trees (leaf_tree_ i + 1 for secondary i).
  const std::uint32_t tables = deps_.tables->table_count();
  const auto next_tree = [&](Table* t) {
    leaf_hand_.clear();
    if (t != nullptr && leaf_tree_ < t->index_count()) {
      ++leaf_tree_;
      return;
    }
    leaf_tree_ = 0;
    ++leaf_table_;
  };
  for (std::uint32_t tried = 0; tried <= tables * (1 + kMaxIndexesPerTable); ++tried) {
    if (leaf_table_ >= tables) {
      leaf_table_ = 0;
      leaf_tree_ = 0;
    }
    Table* t = tables == 0 ? nullptr : deps_.tables->table_at(leaf_table_);
    if (t == nullptr || !t->index().pages()) {
      next_tree(nullptr);
      continue;
    }
    // A secondary leaf's consent reads the versions its entries name, which only a begun
    // context keeps from being freed (stale entries name any record): a pass without one (an
    // open's replay, a bulk load's catch-up) leaves the secondary trees to the next sweep.
    if (leaf_tree_ > t->index_count() || (leaf_tree_ != 0 && ctx == nullptr)) {
      next_tree(leaf_tree_ != 0 ? t : nullptr);
      continue;
    }
    const bool primary = leaf_tree_ == 0;
    index::BTree& tree = primary ? t->index() : t->secondary(leaf_tree_ - 1)->tree();
    std::size_t evicted = 0;
    // Demotion needs leaves that may name records by address (a budget: this hand runs only
    // under one) in a table that allows it now, and room for the OIDs to wait. Secondary
    // entries name OIDs, so a table with secondary indexes never demotes (Table::demotes).
    const bool room = ctx != nullptr && ctx->freed_oids.size() < kMaxWaitingDemotions;
    LeafPass pass{t, primary && room && t->demotes() ? ctx : nullptr};
    if (!tree.sweep_leaves(&leaf_hand_, kLeafBatchVisits, &evicted,
                           primary ? &no_open_writes : &no_open_entries, &pass, pace,
                           pass.ctx != nullptr ? &demote_cold : nullptr)
             .is_ok()) {
      // The images could not be written (a full disk): the leaves stay, and so does the hand.
      leaf_write_errors_.fetch_add(1, std::memory_order_relaxed);
    }
    // Demotions happen only with a context (pass.ctx, which g++ must see to know the store
    // below is not through a null pointer when this is inlined into sweep_index).
    if (pass.ctx != nullptr && pass.demoted != 0) {
      demotions_.fetch_add(pass.demoted, std::memory_order_relaxed);
      pass.ctx->reclaim_work.store(1, std::memory_order_relaxed);  // exact again at its finish
    }
    if (leaf_hand_.empty()) next_tree(t);  // past its last leaf
    // The evicted leaves' frames wait on the tree's free list for loads. Once they are many
    // next to the tree (it shrank: a load's peak, or the versions' share grew) their pages go
    // back to the system, or the process keeps the tree's peak for good. Not in the steady
    // churn of evictions and loads: each release splits the chunks' huge pages and each reuse
    // faults a page in (releasing at every few thousand frames cost YCSB-C throughput
    // measurably). What stays is the quarter of the tree's nodes, and at most a sixty-fourth
    // of the budget: the budget counts nodes in use, so the frames kept beside them are memory
    // past it (after a bulk load under a budget of 344 MiB, a quarter of the nodes was 34 MiB).
    const std::size_t idle = tree.free_node_count() - tree.released_frames();
    const std::size_t keep =
        std::min<std::size_t>(kKeptFrames + tree.node_count() / 4,
                              std::max<std::size_t>(kKeptFrames, budget_ / index::kNodeBytes / 64));
    if (idle > 2 * keep) (void)tree.release_free_frames(keep);
    return evicted * index::kNodeBytes;
  }
  return 0;
}

bool ColdStore::over_budget(bool sample) {
  if (budget_ == 0) return false;
  // The sum reads every context's counter (a line each): sample it every 16th call (an
  // application commit of 50 puts adds ~30 KiB, and coarser sampling let memory run past the
  // budget by megabytes between samples).
  if (sample_countdown_.fetch_add(1, std::memory_order_relaxed) % 16 == 0 || sample) {
    const std::uint64_t live = live_bytes();
    sampled_bytes_.store(live, std::memory_order_relaxed);
    if (live > budget_) evicting_.store(true, std::memory_order_relaxed);
    if (live < budget_ / 100 * kLowWaterPercent) evicting_.store(false, std::memory_order_relaxed);
  }
  return evicting_.load(std::memory_order_relaxed);
}

std::uint32_t ColdStore::sweep(mvcc::TxnContext* ctx, std::uint32_t visits) {
  Table* table = nullptr;
  std::uint64_t from = 0, to = 0;
  {
    // One chunk of the hand per call: sweepers on several threads visit disjoint entries.
    std::lock_guard<std::mutex> g(hand_mutex_);
    const std::uint32_t tables = deps_.tables->table_count();
    for (std::uint32_t tried = 0; tried <= tables && table == nullptr; ++tried) {
      if (hand_table_ >= tables) {
        hand_table_ = 0;
        hand_oid_ = 0;
      }
      Table* t = tables == 0 ? nullptr : deps_.tables->table_at(hand_table_);
      if (t == nullptr || hand_oid_ >= t->oids().allocated()) {
        ++hand_table_;
        hand_oid_ = 0;
        continue;
      }
      table = t;
      from = hand_oid_;
      const std::uint64_t front = t->oids().allocated();
      to = std::min(from + visits, front);
      // Past the allocation front the lap ends, though the front moves on: a hand that stayed
      // there would visit only records just written (not yet durable, so not evictable, and
      // not even marked) for as long as writers keep ahead of it.
      if (to == front) {
        ++hand_table_;
        hand_oid_ = 0;
      } else {
        hand_oid_ = to;
      }
    }
  }
  if (table == nullptr) return 0;
  std::shared_lock<std::shared_mutex> gate(gate_, std::try_to_lock);
  if (!gate.owns_lock()) return 0;  // a checkpoint is deleting files: sweep again later
  const std::uint64_t durable = durable_clock_();
  // The cached horizon lags by design (reclamation refreshes it now and then); a sweep, which
  // only runs over budget, can afford the fresh one, and without it evicts nothing new.
  const std::uint64_t horizon = deps_.txns->refresh_horizon();
  std::uint32_t n = 0;
  std::uint64_t bytes = 0;
  std::vector<std::uint64_t> files;
  for (std::uint64_t oid = from; oid < to; ++oid) {
    std::uint64_t home = 0;
    if (!evict(table->oids().entry(oid), ctx, durable, horizon, &home, &bytes)) continue;
    ++n;
    if (noting_) files.push_back(entry::cold(home).segment);
  }
  bytes += sweep_leaves(visits, ctx);
  debit(bytes);
  if (!files.empty()) {
    std::lock_guard<std::mutex> g(noted_mutex_);
    noted_.insert(noted_.end(), files.begin(), files.end());
    std::sort(noted_.begin(), noted_.end());
    noted_.erase(std::unique(noted_.begin(), noted_.end()), noted_.end());
  }
  return n;
}

void ColdStore::debit(std::uint64_t bytes) {
  if (bytes == 0) return;
  // The sample is refreshed only every 16th over_budget(): debit what this step evicted, so
  // sweeps stop at the low-water mark instead of running on until the next sample.
  std::uint64_t seen = sampled_bytes_.load(std::memory_order_relaxed);
  std::uint64_t left;
  do {
    left = seen > bytes ? seen - bytes : 0;
  } while (!sampled_bytes_.compare_exchange_weak(seen, left, std::memory_order_relaxed));
  if (left < budget_ / 100 * kLowWaterPercent) evicting_.store(false, std::memory_order_relaxed);
}

std::uint64_t ColdStore::sweep_index(std::uint32_t keys) {
  const std::uint64_t bytes = sweep_leaves(keys, nullptr);
  debit(bytes);
  return bytes / index::kNodeBytes;
}

std::uint64_t ColdStore::catch_up_index(std::uint32_t keys, std::uint32_t max_moves,
                                        const index::BTree* tree, std::uint64_t share) {
  if (!pages_index_) return 0;
  std::uint64_t evicted = 0;
  for (std::uint32_t i = 0; i < max_moves; ++i) {
    if (tree != nullptr && tree->node_count() * index::kNodeBytes <= share) break;
    if (!over_budget(i == 0)) break;
    evicted += sweep_index(keys);
  }
  return evicted;
}

Status ColdStore::shrink_unpublished(index::BTree& tree, std::string* hand, std::uint64_t share,
                                     std::size_t* evicted) {
  BRAID_ASSERT(tree.pages());
  std::lock_guard<std::mutex> g(leaf_mutex_);  // the node store's writer is the hand's
  return lap_tree(tree, hand, nullptr, nullptr, evicted,
                  [&] { return tree.node_count() * index::kNodeBytes > share; });
}

std::size_t ColdStore::catch_up_secondary(Table* table, index::BTree& tree) {
  BRAID_ASSERT(tree.pages());
  // Waits for the hand: a worker holding it (and preempted) would otherwise take every move.
  std::lock_guard<std::mutex> g(leaf_mutex_);
  LeafPass pass{table, nullptr};
  std::string hand;
  std::size_t evicted = 0;
  std::size_t debited = 0;
  (void)over_budget(true);
  const Status s = lap_tree(tree, &hand, &no_open_entries, &pass, &evicted, [&] {
    debit((evicted - debited) * index::kNodeBytes);
    debited = evicted;
    return over_budget();
  });
  if (!s.is_ok()) leaf_write_errors_.fetch_add(1, std::memory_order_relaxed);
  return evicted;
}

template <typename More>
Status ColdStore::lap_tree(index::BTree& tree, std::string* hand, index::BTree::LeafConsent consent,
                           void* arg, std::size_t* evicted, More more) {
  // A lap may only clear marks (a leaf marked used is spared once), so the loop ends after
  // two laps in a row that took nothing.
  bool took_this_lap = false;
  int idle_laps = 0;
  while (idle_laps < 2 && more()) {
    std::size_t n = 0;
    if (Status s = tree.sweep_leaves(hand, kLeafBatchVisits, &n, consent, arg); !s.is_ok()) {
      leaf_write_errors_.fetch_add(1, std::memory_order_relaxed);
      return s;
    }
    *evicted += n;
    took_this_lap = took_this_lap || n != 0;
    if (hand->empty()) {  // past the last leaf
      idle_laps = took_this_lap ? 0 : idle_laps + 1;
      took_this_lap = false;
    }
  }
  return Status::ok();
}

void ColdStore::start_noting() {
  std::unique_lock<std::shared_mutex> g(gate_);
  noting_ = true;
  std::lock_guard<std::mutex> n(noted_mutex_);
  noted_.clear();
}

std::vector<std::uint64_t> ColdStore::stop_noting() {
  noting_ = false;
  std::lock_guard<std::mutex> n(noted_mutex_);
  return std::move(noted_);
}

}  // namespace braid::engine
