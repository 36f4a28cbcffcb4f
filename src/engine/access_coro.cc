// The operations as coroutines: Flat (interleaved; FlatStorage with the storage path inlined)
// and Nested modes.
#include <atomic>
#include <chrono>
#include <concepts>
#include <cstring>
#include <string>

#include "engine/access.h"
#include "engine/cold_fetch.h"
#include "engine/node_segments.h"
#include "index/node_image.h"
#include "runtime/cpu.h"
#include "runtime/miss.h"
#include "storage/log_format.h"
#include "storage/node_segment.h"
#include "storage/recovery.h"
#include "util/assert.h"

#define BRAID_CORO 1

namespace braid::engine::coro {
#include "engine/access_ops.inc"

template Task<void> run<Flat>(OpEnv env, detail::OpState* op);
template Task<void> run<FlatStorage>(OpEnv env, detail::OpState* op);
template Task<void> run<Nested>(OpEnv env, detail::OpState* op);
}  // namespace braid::engine::coro
