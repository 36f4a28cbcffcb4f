// The catalog: tables by name and id (the engine as a TableSource), and the statistics over
// its transaction contexts and tables. Secondary indexes are created in secondary.cc.
#include "engine/database_impl.h"

#include <string>

#include "engine/cold_store.h"
#include "engine/durability.h"
#include "engine/node_segments.h"
#include "util/assert.h"

namespace braid::engine {

using mvcc::TxnContext;

// ---- Catalog ------------------------------------------------------------------------------------

Result<Table*> DatabaseImpl::create_table(std::string_view name) {
  if (name.empty() || name.size() > kMaxTableNameBytes) {
    return Status::invalid_argument("table name must be 1.." + std::to_string(kMaxTableNameBytes) +
                                    " bytes");
  }
  if (options_.read_only) {
    return Status::invalid_argument("create_table: the database was opened read-only");
  }
  std::lock_guard<std::mutex> guard(catalog_mutex_);
  if (by_name_.count(std::string(name)) != 0) {
    return Status::duplicate("table '" + std::string(name) + "' exists");
  }
  if (tables_.size() >= options_.max_tables) {
    return Status::busy(
        "table limit reached (Options::max_tables = " + std::to_string(options_.max_tables) + ")");
  }
  if (durability_ != nullptr) {
    // The table exists once the catalog naming it is durable.
    std::vector<storage::CatalogEntry> entries;
    entries.reserve(tables_.size() + 1);
    for (const auto& t : tables_) entries.push_back({t->id(), t->name()});
    entries.push_back({static_cast<std::uint32_t>(tables_.size()), std::string(name)});
    if (Status s = durability_->persist_catalog(entries); !s.is_ok()) return s;
  }
  Table* raw = add_table(name);
  if (raw == nullptr) {
    return Status::io_error("cannot reserve the OID array of table '" + std::string(name) + "'");
  }
  return raw;
}

Result<Table*> DatabaseImpl::open_table(std::string_view name) {
  std::lock_guard<std::mutex> guard(catalog_mutex_);
  auto it = by_name_.find(std::string(name));
  if (it == by_name_.end()) return Status::not_found("no table named '" + std::string(name) + "'");
  return it->second;
}

Table* DatabaseImpl::add_table(std::string_view name) {
  auto t = std::make_unique<Table>(this, static_cast<std::uint32_t>(tables_.size()),
                                   std::string(name), l2_cache_bytes(), &index_pool_);
  // Where the index pages, the budget counts the OID arrays by the 4 KiB page and most cold
  // records hold no OID: a huge page would make each table's first OIDs (and every region
  // whose OIDs went back) cost 2 MiB of memory the budget does not see.
  const bool oid_huge_pages = options_.huge_pages && node_segments_ == nullptr;
  if (!t->oids().init(options_.max_records_per_table, oid_huge_pages).is_ok()) return nullptr;
  Table* raw = t.get();
  if (node_segments_ != nullptr) {
    raw->index().attach_store(node_segments_.get(), raw->id());
    raw->index().set_pages_inner(options_.page_index_inner);
  }
  BRAID_ASSERT(tables_.size() < tables_.capacity());  // no reallocation under lock-free readers
  tables_.push_back(std::move(t));
  tables_published_.store(static_cast<std::uint32_t>(tables_.size()), std::memory_order_release);
  by_name_.emplace(std::string(name), raw);
  return raw;
}

std::uint32_t DatabaseImpl::table_count() const {
  return tables_published_.load(std::memory_order_acquire);
}

Table* DatabaseImpl::table_at(std::uint32_t id) const {
  // Published with release after the element was written; the vector never reallocates.
  return id < tables_published_.load(std::memory_order_acquire) ? tables_[id].get() : nullptr;
}

DatabaseStats DatabaseImpl::stats() const {
  DatabaseStats s;
  s.indexes_attached = indexes_attached_.load(std::memory_order_relaxed);
  s.indexes_built = indexes_built_.load(std::memory_order_relaxed);
  s.index_entries_attached = index_entries_attached_.load(std::memory_order_relaxed);
  s.index_sort_runs = index_sort_runs_.load(std::memory_order_relaxed);
  s.index_leaves_shed = index_leaves_shed_.load(std::memory_order_relaxed);
  std::int64_t live = 0;
  std::int64_t bytes = 0;
  std::int64_t not_records = 0;
  for (std::uint32_t i = 0; i < txns_.size(); ++i) {
    const TxnContext& c = txns_.at(i);
    live += c.versions_live.load(std::memory_order_relaxed);
    bytes += c.version_bytes_live.load(std::memory_order_relaxed);
    s.commits += c.commits.load(std::memory_order_relaxed);
    s.aborts += c.aborts.load(std::memory_order_relaxed);
    s.pruned_versions += c.pruned.load(std::memory_order_relaxed);
    // The engine's own contexts (a checkpoint in progress spans rounds) are not transactions
    // anyone opened, nor is a context another thread borrowed to reclaim its queues.
    const bool system = i >= checkpoint_context() && i < first_shared_context();
    if (!system && c.in_use.load(std::memory_order_relaxed) &&
        !c.lent.load(std::memory_order_relaxed)) {
      ++s.open_transactions;
    }
    s.retired_versions += c.retired.load(std::memory_order_relaxed);
    s.write_conflicts += c.write_conflicts.load(std::memory_order_relaxed);
    s.ssn_aborts += c.ssn_aborts.load(std::memory_order_relaxed);
    s.phantom_aborts += c.phantom_aborts.load(std::memory_order_relaxed);
    s.serializable_commits += c.serializable_commits.load(std::memory_order_relaxed);
    s.tombstones_pending += c.tombs_pending.load(std::memory_order_relaxed);
    s.records_reclaimed += c.records_reclaimed.load(std::memory_order_relaxed);
    s.stale_entries_pending += c.stale_pending.load(std::memory_order_relaxed);
    s.stale_entries_removed += c.stale_removed.load(std::memory_order_relaxed);
    s.record_accesses += c.record_accesses.load(std::memory_order_relaxed);
    not_records += c.oids_not_records.load(std::memory_order_relaxed);
  }
  s.live_versions = static_cast<std::uint64_t>(live);
  s.live_version_bytes = static_cast<std::uint64_t>(bytes);
  s.version_heap_bytes = txns_.heap().resident_bytes();
  s.version_bytes_released = txns_.heap().released_bytes();
  std::lock_guard<std::mutex> guard(catalog_mutex_);
  const auto used_oids = [&] {
    std::uint64_t n = 0;
    for (const auto& t : tables_) n += t->oids().allocated() - t->oids().free_count();
    return n;
  };

  const auto add_tree = [&s](const index::BTree& tree) {
    s.index_nodes += tree.node_count();
    s.index_nodes_free += tree.free_node_count();
    s.index_leaves_stored += tree.stored_leaves();
    s.index_leaf_evictions += tree.evictions();
    s.index_leaf_loads += tree.loads();
    s.index_leaf_loads_async += tree.driver_loads();
    s.index_inner_nodes_stored += tree.stored_inner_nodes();
    s.index_inner_evictions += tree.inner_evictions();
    s.index_inner_loads += tree.inner_loads();
    s.index_frame_bytes_released += tree.released_bytes();
    s.index_frame_bytes += tree.frame_bytes();
  };
  for (const auto& t : tables_) {
    add_tree(t->index());
    for (std::uint32_t i = 0; i < t->index_count(); ++i) {
      const index::BTree& tree = t->secondary(i)->tree();
      add_tree(tree);
      s.secondary_leaves_stored += tree.stored_leaves();
      s.secondary_leaf_evictions += tree.evictions();
    }
    s.oid_bytes += t->oids().used_bytes();
    s.oids_free += t->oids().free_count();
    s.records_named_by_address += t->named_by_address();
  }
  std::uint64_t oids_used = used_oids();
  // An OID given back between the contexts' reads and the tables' would count twice as no
  // record (a context stops counting it before its table lists it free): the count is taken
  // again until the contexts' sum held still across the tables' read (bounded; an idle
  // worker gives OIDs back in batches, and a slow read of the tables once missed 108).
  const auto sum_not_records = [&] {
    std::int64_t n = 0;
    for (std::uint32_t i = 0; i < txns_.size(); ++i) {
      n += txns_.at(i).oids_not_records.load(std::memory_order_relaxed);
    }
    return n;
  };
  for (int tries = 0; tries < kStatsRereads; ++tries) {
    const std::int64_t again = sum_not_records();
    if (again == not_records) break;
    not_records = again;
    oids_used = used_oids();
  }
  const auto out = static_cast<std::uint64_t>(std::max<std::int64_t>(not_records, 0));
  s.records = (oids_used > out ? oids_used - out : 0) + s.records_named_by_address;
  s.commit_clock = txns_.clock_now();
  s.stalls = stalls_.stalls();
  if (cold_ != nullptr) cold_->add_stats(&s);
  return s;
}

}  // namespace braid::engine
