// The operations as coroutines: Flat (interleaved; FlatStorage with the storage path inlined)
// and Nested modes.
#include <atomic>
#include <string>

#include "engine/access.h"
#include "engine/cold_fetch.h"
#include "runtime/cpu.h"
#include "runtime/miss.h"
#include "util/assert.h"

#define BRAID_CORO 1

namespace braid::engine::coro {
#include "engine/access_ops.inc"

template Task<void> run<Flat>(OpEnv env, detail::OpState* op);
template Task<void> run<FlatStorage>(OpEnv env, detail::OpState* op);
template Task<void> run<Nested>(OpEnv env, detail::OpState* op);
}  // namespace braid::engine::coro
