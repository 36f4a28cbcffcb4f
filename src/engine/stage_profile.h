// Where a worker's time goes on the storage path, by stage (ExecOptions::profile_storage): the
// engine's own half of the storage profile, beside scripts/cold-profile.py's perf samples.
//
// The worker's time is attributed to one stage at a time: entering a stage charges the time
// since the last switch to the stage that was current, and leaving charges the stage left, so
// nested stages are exclusive (a completion reaped inside a reap pass is `complete`, not `reap`)
// and the stages add up to the worker's wall time while the profile is on, everything outside
// the storage path being `other`. One clock read per switch: the profile costs two per stage
// entered, so it is off unless a run asks for it, and then a null check where it is off.
//
// Only the thread that owns a profile switches it: a worker's scopes run on its thread, and
// other threads (application threads reading synchronously) see no current profile.
#pragma once

#include <braid/database.h>

#include <chrono>
#include <cstdint>

namespace braid::engine {

enum class Stage : std::uint8_t {
  kOther,      // everything outside the storage path: transactions, scheduling, the log
  kSubmit,     // a read's request prepared and handed to the kernel (the doorbell)
  kReap,       // completion passes over the ring, less the completions themselves
  kComplete,   // a read back: verified, decoded, its version built and installed, published
  kLoadTable,  // joining a load in flight or leading a new one, and letting it go
  kDrop,       // an uncached table's record turned cold again after its read
  kWake,       // parked transactions made runnable once their reads are back
  kSyncWait,   // a sequential mode's spin on its own read's completion
  kCount
};

class StageProfile {
 public:
  using Clock = std::chrono::steady_clock;

  // The calling thread's profile while it is on, or null.
  static StageProfile* current() { return tls_current; }

  // Turns the profile on or off for the calling thread, which must own it. Turning it off
  // charges the time up to now.
  void set_on(bool on);

  Stage enter(Stage s) {
    const Stage prev = current_;
    charge();
    current_ = s;
    return prev;
  }
  void leave(Stage prev) {
    charge();
    current_ = prev;
  }

  // The time charged to `s` so far (ExecStats::storage_stage_ns[s]).
  std::uint64_t ns(Stage s) const { return ns_[static_cast<int>(s)]; }

 private:
  void charge() {
    const Clock::time_point now = Clock::now();
    ns_[static_cast<int>(current_)] += static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(now - since_).count());
    since_ = now;
  }

  static thread_local StageProfile* tls_current;
  bool on_ = false;
  Stage current_ = Stage::kOther;
  Clock::time_point since_{};
  std::uint64_t ns_[static_cast<int>(Stage::kCount)] = {};
};

static_assert(static_cast<int>(Stage::kCount) == ExecStats::kStorageStages,
              "ExecStats::storage_stage_ns has one figure per stage");

// The calling thread's time in `s` from here to the end of the scope (nothing when its profile
// is off).
class StageScope {
 public:
  explicit StageScope(Stage s) : profile_(StageProfile::current()) {
    if (profile_ != nullptr) prev_ = profile_->enter(s);
  }
  ~StageScope() {
    if (profile_ != nullptr) profile_->leave(prev_);
  }
  StageScope(const StageScope&) = delete;
  StageScope& operator=(const StageScope&) = delete;

 private:
  StageProfile* profile_;
  Stage prev_ = Stage::kOther;
};

}  // namespace braid::engine
