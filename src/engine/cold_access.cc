// The storage path of the record operations (access.h: cold_fetch, cold_fetch_sync).
#include <coroutine>

#include "engine/access.h"
#include "engine/cold_store.h"
#include "engine/table.h"
#include "engine/worker.h"
#include "runtime/miss.h"

namespace braid::engine {

namespace {
// An entry that changed between our look and the load's install (a writer, or an eviction
// before we joined) sends us round again; this bounds how often before the operation answers
// Busy. A load that installed hands its version to every waiter, so an eviction between the
// install and a waiter's resumption (a sweep runs between scheduler rounds) costs no round:
// the version stays allocated while the waiter's snapshot pins the horizon, and it is what
// that snapshot sees (a writer that put a newer one on top committed after we began).
constexpr int kMaxColdRounds = 64;

// Suspends the transaction on a pending load: the slot parks (kParkedIo) and the worker makes
// it runnable when the load is back, without resuming it to ask.
struct IoPark {
  OpEnv env;
  ColdLoad* load;
  bool await_ready() const noexcept { return !load->pending(); }
  void await_suspend(std::coroutine_handle<> h) const noexcept {
    *env.sink = h;
    ++*env.suspends;
    env.tx->worker->park_io(env.tx, load);
  }
  void await_resume() const noexcept {}
};

void drive_worker(void* w) { static_cast<Worker*>(w)->poll_cold(); }
}  // namespace

Status cold_fetch_sync(OpEnv env, std::atomic<std::uint64_t>* slot, const Table& table,
                       std::string_view key, std::uint64_t* out) {
  ColdStore* cold = env.db->cold();
  BRAID_ASSERT(cold != nullptr);  // cold entries exist only in a database with a directory
  // On a worker thread, the load we wait on may be one this worker leads for a parked slot:
  // keep completing the ring's reads meanwhile.
  Worker* w = env.tx != nullptr ? env.tx->worker : Worker::current();
  for (int round = 0; round < kMaxColdRounds; ++round) {
    const std::uint64_t e = slot->load(std::memory_order_acquire);
    if (!mvcc::entry::is_cold(e)) {
      *out = e;  // its versions stay allocated while our snapshot pins the horizon
      return Status::ok();
    }
    std::uint64_t installed = 0;
    Status s = cold->load_sync(slot, e, env.ctx, table.id(), key,
                               w != nullptr ? &drive_worker : nullptr, w, &installed);
    if (!s.is_ok()) return s;
    if (installed != 0) {
      *out = installed;
      return Status::ok();
    }
  }
  return Status::busy("record evicted again on every read of it");
}

void drop_read(OpEnv env, std::atomic<std::uint64_t>* slot, std::uint64_t e) {
  (void)env.db->cold()->drop(*slot, e, env.ctx);
}

Task<Status> cold_fetch(OpEnv env, std::atomic<std::uint64_t>* slot, const Table& table,
                        std::string_view key, std::uint64_t* out) {
  Worker* w = env.tx->worker;
  if (!w->has_ring()) co_return cold_fetch_sync(env, slot, table, key, out);
  ColdStore* cold = env.db->cold();
  for (int round = 0; round < kMaxColdRounds; ++round) {
    const std::uint64_t e = slot->load(std::memory_order_acquire);
    if (!mvcc::entry::is_cold(e)) {
      *out = e;
      co_return Status::ok();
    }
    const ColdStore::Miss m = cold->join(slot, e, env.ctx, table.id(), key);
    if (m.busy) {  // every load is in use: let the others finish theirs
      co_await runtime::Miss{nullptr, 0, env.sink, env.suspends};
      --round;
      continue;
    }
    if (m.load == nullptr) continue;
    if (m.lead) w->submit_cold(m.load);
    while (m.load->pending()) co_await IoPark{env, m.load};
    Status s = cold->outcome(m.load);
    const std::uint64_t installed = m.load->installed;
    cold->release(m.load);
    if (!s.is_ok()) co_return s;
    if (installed != 0) {
      *out = installed;
      co_return Status::ok();
    }
  }
  co_return Status::busy("record evicted again on every read of it");
}

}  // namespace braid::engine
