#include "engine/record_check.h"

#include <algorithm>
#include <string>
#include <vector>

#include "engine/database_impl.h"
#include "engine/table.h"
#include "mvcc/chain_walk.h"
#include "util/assert.h"

namespace braid::engine {

namespace {
// A cold record's key is known from the walk, not from its slot: the pass keeps its hash beside
// the address (ColdStore::BulkRecord, 24 bytes a record), which the reader checks. Records are
// checked in passes of this many, so the check's memory stays bounded whatever the table's size.
constexpr std::size_t kPassRecords = std::size_t{1} << 23;
}  // namespace

Status check_records(DatabaseImpl& db, Table& table, const ColdStore::BulkOptions& options,
                     RecordCheckCounts* out, const std::function<void(std::uint64_t)>& progress) {
  ColdStore* cold = db.cold();
  mvcc::TxnContext* ctx = db.txns().begin();
  if (ctx == nullptr) return Status::busy("check: every application-thread transaction is open");
  std::vector<ColdStore::BulkRecord> pass;
  pass.reserve(std::min<std::size_t>(kPassRecords, table.oids().allocated()));
  Status status;
  std::uint64_t walked = 0;
  auto read_pass = [&]() -> Status {
    if (pass.empty()) return Status::ok();
    BRAID_ASSERT(cold != nullptr);  // cold entries exist only with a directory
    Status s = cold->read_in_file_order(
        &pass, table.id(), options,
        [&](const ColdStore::BulkRecord&, const storage::RecordView&) {
          if (++out->cold % 4096 == 0) progress(walked + out->cold);
          return Status::ok();
        },
        &out->bulk);
    pass.clear();
    return s;
  };
  index::LeafBatch batch;
  std::string from;
  for (;;) {
    if (!table.index().scan_leaf(from, false, {}, {}, false, &batch)) {
      status = index::take_load_failure("check of table " + table.name());
      break;
    }
    for (const auto& e : batch.entries) {
      // A leaf value that is no OID is the record's cold address (leaf_value), as an evicted
      // record's entry is.
      std::uint64_t entry = table.entry_named(e.value);
      if (mvcc::entry::is_moved(entry)) [[unlikely]] {
        // Demoted since the leaf was copied: its leaf names it by address now.
        std::atomic<std::uint64_t>* slot = nullptr;
        status = table.reread_moved(batch.key(e), &slot, &entry);
        if (!status.is_ok()) break;
      }
      if (mvcc::entry::is_cold(entry)) {
        // Evicted: committed and seen by every snapshot, this one included.
        pass.push_back({entry, ColdStore::key_hash(batch.key(e))});
        ++out->records;
        continue;
      }
      const mvcc::Version* v = mvcc::visible_version(&db.protocol(), ctx, entry);
      if (v == nullptr || v->tombstone()) continue;
      ++out->records;
      ++out->hot;
    }
    if (!status.is_ok()) break;
    walked += batch.entries.size();
    progress(walked + out->cold);
    if (pass.size() >= kPassRecords) status = read_pass();
    if (!status.is_ok() || !batch.has_next) break;
    from = batch.next;
  }
  if (status.is_ok()) status = read_pass();
  (void)db.txns().finish(ctx);  // read-only: nothing retired
  return status;
}

}  // namespace braid::engine
