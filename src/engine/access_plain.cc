// The operations as plain functions: Sequential and Prefetch modes, and the
// thread-per-transaction API (Sequential).
#include <atomic>
#include <string>

#include "engine/access.h"
#include "runtime/cpu.h"
#include "util/assert.h"

#define BRAID_CORO 0

namespace braid::engine::plain {
#include "engine/access_ops.inc"

template void run<Sequential>(OpEnv env, detail::OpState* op);
template void run<Prefetch>(OpEnv env, detail::OpState* op);
}  // namespace braid::engine::plain

namespace braid::engine {

Status absent(const OpEnv& env, const index::LeafRead& leaf) {
  if (!env.ctx->serializable) [[likely]]
    return Status(Code::kNotFound);
  Status s = env.db->protocol().ssn_read_leaf(env.ctx, leaf);
  return s.is_ok() ? Status(Code::kNotFound) : s;
}

Status ssn_track_get(const OpEnv& env, std::atomic<std::uint64_t>* slot, const mvcc::Version* v,
                     const index::LeafRead& leaf) {
  Status s = env.db->protocol().ssn_read(env.ctx, slot, v);
  // A tombstone is a read of absence too: once the record is reclaimed, an insert of the key
  // takes a new OID, and only the leaf can tell the reader about it.
  if (s.is_ok() && (v == nullptr || v->tombstone()))
    s = env.db->protocol().ssn_read_leaf(env.ctx, leaf);
  return s;
}

}  // namespace braid::engine
