// The read side of secondary indexes (scan_op in access_ops.inc): whether an entry is still
// current for the version a reader sees, an attached entry's hint made an OID, and the end of
// a key-prefix range.
#include "engine/access.h"

#include <string>

#include "util/assert.h"

namespace braid::engine {

bool entry_current(Index* sec, std::string_view entry_key, std::size_t secondary_len,
                   std::string_view value) {
  BRAID_DASSERT(secondary_len <= entry_key.size());
  Key derived;
  if (!sec->extract(entry_key.substr(secondary_len), value, &derived)) return false;
  return derived.view() == entry_key.substr(0, secondary_len);
}

void refresh_hint(Table& table, Index& sec, std::string_view entry_key, std::uint64_t hint,
                  const std::atomic<std::uint64_t>* slot, std::uint64_t e) {
  BRAID_DASSERT(Index::names_no_oid(hint));
  if (!mvcc::entry::is_hot(e)) return;
  const mvcc::Version* head = mvcc::entry::hot(e);
  const std::uint64_t stamp = head->stamp.load(std::memory_order_acquire);
  if (head->tombstone() || stamp == mvcc::kInvisible || mvcc::is_owner_stamp(stamp)) return;
  const std::size_t len = Index::secondary_len_of(hint);
  if (!entry_current(&sec, entry_key, len, head->value())) return;
  const auto oid = static_cast<std::uint64_t>(slot - &table.oids().entry(0));
  // Lost to a writer that replaced or removed the entry meanwhile: it knows better. Best
  // effort where the index pages too: a leaf that went out since the reader's visit and cannot
  // be read back keeps the hint.
  if (sec.tree().replace(entry_key, hint, Index::pack(oid, len)).failed()) {
    (void)index::take_load_failure();
  }
}

std::string prefix_successor(std::string_view prefix) {
  std::string s(prefix);
  while (!s.empty() && static_cast<unsigned char>(s.back()) == 0xff) s.pop_back();
  if (!s.empty()) s.back() = static_cast<char>(static_cast<unsigned char>(s.back()) + 1);
  return s;
}

}  // namespace braid::engine
