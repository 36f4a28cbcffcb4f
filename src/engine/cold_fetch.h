// The storage path of the coroutine modes as a stepper that never suspends (engine/access.h's
// pattern: the steppers decide, the drivers wait), so that the nested coroutine (cold_fetch,
// MosaicDB §4.1's selective nesting: the default) and the path inlined into the operation's own
// coroutine (StoragePath::kFlattened, the paper's "flattened" variant of Fig. 11) are one
// algorithm. BRAID_COLD_DRIVE is the one driver loop both expand.
#pragma once

#include <atomic>
#include <coroutine>
#include <cstdint>
#include <string_view>

#include "engine/cold_store.h"
#include "engine/op_env.h"
#include "engine/table.h"
#include "engine/tx_state.h"
#include "runtime/miss.h"

namespace braid::engine {

class ColdFetch {
 public:
  // What the driver waits for before the next step.
  enum class Wait : std::uint8_t {
    kNone,  // finished: status() and entry()
    kBusy,  // every load is in use: suspend once (a memory-style pause) and step again
    kIo,    // a read in flight: park the slot on load() (IoPark) and step again
  };

  // Rounds are bounded by ColdStore::kMaxMissRounds.

  ColdFetch(OpEnv env, std::atomic<std::uint64_t>* slot, const Table& table, std::string_view key)
      : env_(env), slot_(slot), table_(table), key_(key) {}
  ColdFetch(const ColdFetch&) = delete;
  ColdFetch& operator=(const ColdFetch&) = delete;
  ~ColdFetch() { BRAID_ASSERT(load_ == nullptr); }  // a driver steps to kNone

  Wait step();
  ColdLoad* load() const { return load_; }
  Status& status() { return status_; }
  std::uint64_t entry() const { return entry_; }

 private:
  OpEnv env_;
  std::atomic<std::uint64_t>* slot_;
  const Table& table_;
  std::string_view key_;
  ColdLoad* load_ = nullptr;  // joined, not yet released
  int round_ = 0;
  Status status_;
  std::uint64_t entry_ = 0;
};

// Suspends the transaction on a pending load: the slot parks (kParkedIo) and the worker makes
// it runnable when the load is back, without resuming it to ask (unless the policy resumes
// parked slots: the await loop then finds the load still pending and parks again).
struct IoPark {
  OpEnv env;
  ColdLoad* load;
  bool await_ready() const noexcept { return !load->pending(); }
  void await_suspend(std::coroutine_handle<> h) const noexcept {
    *env.sink = h;
    ++*env.suspends;
    ++*env.site;
    env.tx->port->park(env.tx, load);
  }
  void await_resume() const noexcept {}
};

}  // namespace braid::engine

// Runs ColdFetch `f` to its end inside the enclosing coroutine (environment `env`).
#define BRAID_COLD_DRIVE(env, f)                                                           \
  for (::braid::engine::ColdFetch::Wait braid_w_;                                          \
       (braid_w_ = (f).step()) != ::braid::engine::ColdFetch::Wait::kNone;) {              \
    if (braid_w_ == ::braid::engine::ColdFetch::Wait::kBusy) {                             \
      co_await ::braid::runtime::Miss{nullptr, 0, (env).sink, (env).suspends, (env).site}; \
    } else {                                                                               \
      co_await ::braid::engine::IoPark{(env), (f).load()};                                 \
    }                                                                                      \
  }
