#include "engine/stage_profile.h"

namespace braid {

const char* storage_stage_name(int i) {
  static constexpr const char* kNames[] = {"other",      "submit", "reap", "complete",
                                           "load table", "drop",   "wake", "sync wait"};
  static_assert(sizeof(kNames) / sizeof(kNames[0]) == ExecStats::kStorageStages);
  return i >= 0 && i < ExecStats::kStorageStages ? kNames[i] : "";
}

namespace engine {

thread_local StageProfile* StageProfile::tls_current = nullptr;

void StageProfile::set_on(bool on) {
  if (on == on_) return;
  if (on) {
    current_ = Stage::kOther;
    since_ = Clock::now();
    tls_current = this;
  } else {
    charge();
    tls_current = nullptr;
  }
  on_ = on;
}

}  // namespace engine
}  // namespace braid
