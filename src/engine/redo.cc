#include "engine/redo.h"

#include <atomic>
#include <cstring>
#include <string_view>

#include "engine/table.h"
#include "storage/cold_address.h"
#include "storage/log_format.h"
#include "util/assert.h"

namespace braid::engine {

std::uint32_t record_bytes(const mvcc::TxnContext* ctx) {
  std::uint64_t n = storage::kTxnHeaderBytes;
  for (const mvcc::WriteEntry& w : ctx->writes) {
    n += storage::record_size(w.key_len, w.version->tombstone() ? 0 : w.version->size);
  }
  return n > UINT32_MAX ? UINT32_MAX : static_cast<std::uint32_t>(n);
}

void append_empty_record(storage::LogWriter& w, std::uint64_t cts) {
  const storage::TxnHeader h{cts, 0, 0};
  std::memcpy(w.append(storage::kTxnHeaderBytes, cts), &h, sizeof h);
}

void encode_record(const mvcc::TxnContext* ctx, std::uint64_t cts, std::uint32_t bytes,
                   const storage::LogWriter& log, char* out) {
  const storage::TxnHeader h{cts, bytes - storage::kTxnHeaderBytes,
                             static_cast<std::uint32_t>(ctx->writes.size())};
  std::memcpy(out, &h, sizeof h);
  char* p = out + sizeof h;
  for (std::size_t i = 0; i < ctx->writes.size(); ++i) {
    const mvcc::WriteEntry& w = ctx->writes[i];
    w.table->note_written();
    const bool tomb = w.version->tombstone();
    const std::string_view key(ctx->staged_keys.data() + w.key_off, w.key_len);
    const std::string_view value = tomb ? std::string_view() : w.version->value();
    const std::uint32_t size =
        storage::encode_record(p, tomb ? storage::WriteOp::kRemove : storage::WriteOp::kPut,
                               w.table->id(), key, value, cts);
    const storage::LogWriter::Address at = log.address_of(p);
    // The version is visible already (the timestamp was published first), so a running
    // checkpoint may have written it and moved `home` to its copy (Durability::fix): then
    // that stays, since the checkpoint may delete the segment this record lies in. Before
    // either write the word still holds the write-set index (version.h).
    std::uint64_t unset = i;
    const std::uint64_t address = storage::cold_word(at.segment, at.offset, size);
    if (!std::atomic_ref<std::uint64_t>(w.version->home)
             .compare_exchange_strong(unset, address, std::memory_order_relaxed)) {
      BRAID_DASSERT(storage::is_cold(unset));  // the checkpoint's copy
    }
    p += size;
  }
  BRAID_ASSERT(p == out + bytes);
}

}  // namespace braid::engine
