// The redo record of a transaction (storage/log_format.h: a header and its newest version of
// each record it wrote), as commit writes it into its log's buffer.
#pragma once

#include <cstdint>

#include "mvcc/txn.h"
#include "storage/log_writer.h"

namespace braid::engine {

// The record's size, TxnHeader included (UINT32_MAX when it overflows: no log takes it).
std::uint32_t record_bytes(const mvcc::TxnContext* ctx);
// Writes the record of `bytes` (record_bytes) for commit timestamp `cts` at `out`, inside the
// buffer of `log`. Also tells each version where its record will be on disk (its cold word,
// or 0 when the record is too big for one): eviction turns the entry into that address.
void encode_record(const mvcc::TxnContext* ctx, std::uint64_t cts, std::uint32_t bytes,
                   const storage::LogWriter& log, char* out);
// A timestamp spent without writes (a reclamation tick, a refused serializable commit): an
// empty transaction record, since recovery reads a gap in the timestamps as the end of the log.
void append_empty_record(storage::LogWriter& w, std::uint64_t cts);

}  // namespace braid::engine
