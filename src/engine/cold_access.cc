// The storage path of the record operations (access.h: cold_fetch, cold_fetch_sync).
#include <coroutine>

#include "engine/access.h"
#include "engine/cold_fetch.h"
#include "engine/cold_store.h"
#include "engine/table.h"
#include "engine/worker.h"
#include "runtime/miss.h"

namespace braid::engine {

namespace {
void drive_worker(void* w) { static_cast<Worker*>(w)->poll_cold(); }
}  // namespace

Status cold_fetch_sync(OpEnv env, std::atomic<std::uint64_t>* slot, const Table& table,
                       std::string_view key, std::uint64_t* out) {
  ColdStore* cold = env.db->cold();
  BRAID_ASSERT(cold != nullptr);  // cold entries exist only in a database with a directory
  // On a worker thread, the load we wait on may be one this worker leads for a parked slot:
  // keep completing the ring's reads meanwhile.
  Worker* w = env.tx != nullptr ? env.tx->worker : Worker::current();
  for (int round = 0; round < ColdFetch::kMaxRounds; ++round) {
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

ColdFetch::Wait ColdFetch::step() {
  ColdStore* cold = env_.db->cold();
  if (load_ != nullptr) {  // the read we waited for
    if (load_->pending()) return Wait::kIo;
    Status s = cold->outcome(load_);
    const std::uint64_t installed = load_->installed;
    cold->release(load_);
    load_ = nullptr;
    if (!s.is_ok()) {
      status_ = std::move(s);
      return Wait::kNone;
    }
    if (installed != 0) {
      entry_ = installed;
      return Wait::kNone;
    }
    ++round_;  // the entry moved before the install: look again
  }
  for (; round_ < kMaxRounds; ++round_) {
    const std::uint64_t e = slot_->load(std::memory_order_acquire);
    if (!mvcc::entry::is_cold(e)) {
      entry_ = e;  // its versions stay allocated while our snapshot pins the horizon
      return Wait::kNone;
    }
    const ColdStore::Miss m = cold->join(slot_, e, env_.ctx, table_.id(), key_);
    if (m.busy) return Wait::kBusy;  // every load is in use: let the others finish theirs
    if (m.load == nullptr) continue;
    if (m.lead) env_.tx->worker->submit_cold(m.load);
    load_ = m.load;
    return step();  // pending (the usual case) answers kIo; a failed submit is done already
  }
  status_ = Status::busy("record evicted again on every read of it");
  return Wait::kNone;
}

Task<Status> cold_fetch(OpEnv env, std::atomic<std::uint64_t>* slot, const Table& table,
                        std::string_view key, std::uint64_t* out) {
  if (!env.tx->worker->has_ring()) co_return cold_fetch_sync(env, slot, table, key, out);
  ColdFetch f(env, slot, table, key);
  BRAID_COLD_DRIVE(env, f);
  *out = f.entry();
  co_return std::move(f.status());
}

}  // namespace braid::engine
