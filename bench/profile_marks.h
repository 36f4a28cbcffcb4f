// Marks around a benchmark's measured runs for `valgrind --tool=callgrind --instr-atstart=no`
// (scripts/profile-ops.sh): only what lies between begin and end is instrumented, and each run
// is dumped on its own under its label, so loads and set-up cost nothing in the profile. Not
// under valgrind the marks are client requests that do nothing (a few instructions each,
// once per run, not per operation); without valgrind's headers they compile to nothing.
#pragma once

#if defined(BRAID_HAVE_CALLGRIND)
#include <valgrind/callgrind.h>
#endif

namespace braid::bench {

inline void profile_begin() {
#if defined(BRAID_HAVE_CALLGRIND)
  CALLGRIND_ZERO_STATS;
  CALLGRIND_START_INSTRUMENTATION;
#endif
}

// Counts restart from zero here; the simulated caches keep their contents (a warm start).
inline void profile_zero() {
#if defined(BRAID_HAVE_CALLGRIND)
  CALLGRIND_ZERO_STATS;
#endif
}

// Empties the simulated caches and keeps counting: callgrind clears its cache simulator
// whenever instrumentation starts. (Its translations are discarded too: slow, not counted.)
inline void profile_flush_caches() {
#if defined(BRAID_HAVE_CALLGRIND)
  CALLGRIND_STOP_INSTRUMENTATION;
  CALLGRIND_START_INSTRUMENTATION;
#endif
}

inline void profile_end([[maybe_unused]] const char* label) {
#if defined(BRAID_HAVE_CALLGRIND)
  CALLGRIND_STOP_INSTRUMENTATION;
  CALLGRIND_DUMP_STATS_AT(label);
#endif
}

}  // namespace braid::bench
