// The names of ExecMode, SchedulerPolicy and Isolation (include/braid/options.h). Schedulers come
// from the scheduler registry, so a new policy is named where it is registered.
#include <braid/options.h>

#include <array>

#include "sched/policy.h"

namespace braid {
namespace {

constexpr std::array<std::string_view, 5> kModeNames = {"sequential", "prefetch", "nested",
                                                        "interleaved", "auto"};
static_assert(static_cast<std::size_t>(ExecMode::kSequential) == 0);
static_assert(static_cast<std::size_t>(ExecMode::kAuto) == kModeNames.size() - 1);

}  // namespace

std::string_view to_string(ExecMode mode) {
  const auto i = static_cast<std::size_t>(mode);
  return i < kModeNames.size() ? kModeNames[i] : std::string_view("?");
}

std::string_view to_string(SchedulerPolicy scheduler) {
  const auto i = static_cast<std::size_t>(scheduler);
  return i < sched::policies().size() ? sched::policies()[i].name : std::string_view("?");
}

bool parse_exec_mode(std::string_view name, ExecMode* out) {
  for (std::size_t i = 0; i < kModeNames.size(); ++i) {
    if (kModeNames[i] == name) {
      *out = static_cast<ExecMode>(i);
      return true;
    }
  }
  return false;
}

bool parse_scheduler(std::string_view name, SchedulerPolicy* out) {
  const sched::PolicyInfo* p = sched::find_policy(name);
  if (p == nullptr) return false;
  *out = p->kind;
  return true;
}

std::string_view to_string(Isolation isolation) {
  return isolation == Isolation::kSerializable ? "ssn" : "si";
}

bool parse_isolation(std::string_view name, Isolation* out) {
  if (name == "si" || name == "snapshot") {
    *out = Isolation::kSnapshot;
    return true;
  }
  if (name == "ssn" || name == "serializable") {
    *out = Isolation::kSerializable;
    return true;
  }
  return false;
}

std::vector<std::string> exec_mode_names() { return {kModeNames.begin(), kModeNames.end()}; }

std::vector<std::string> scheduler_names() {
  std::vector<std::string> out;
  for (const sched::PolicyInfo& p : sched::policies()) out.emplace_back(p.name);
  return out;
}

}  // namespace braid
