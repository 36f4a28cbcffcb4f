// Group prefetching and AMAC over a lookup written as a stepper (btree_probe.h, bwtree.h): a
// stepper `L` is constructed for a key, and each `step()` reads what the previous one named and
// answers whether more steps are needed. The structures say how a lookup starts, what to
// prefetch before its next step, and its answer after the last; the drivers are written once.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "runtime/interleave.h"
#include "util/assert.h"

namespace braid::probe {

// Lockstep: every unfinished lookup of a group takes one step, then prefetches its next, so a
// group takes as many rounds as its longest path (GP's weakness when paths differ in length).
// start(std::optional<L>&, i) emplaces lookup i; prefetch(const L&); answer(const L&).
template <typename L, typename Start, typename Prefetch, typename Answer>
void drive_gp(std::size_t n, std::size_t group, Start&& start, Prefetch&& prefetch, Answer&& answer,
              std::span<std::uint64_t> out) {
  BRAID_ASSERT(group >= 1);
  BRAID_ASSERT(group <= runtime::kMaxGroup);
  std::optional<L> l[runtime::kMaxGroup];
  for (std::size_t base = 0; base < n; base += group) {
    const std::size_t g = std::min(group, n - base);
    for (std::size_t j = 0; j < g; ++j) start(l[j], base + j);
    std::size_t left = g;
    while (left != 0) {
      for (std::size_t j = 0; j < g; ++j) {
        if (!l[j]) continue;
        if (l[j]->step()) {
          prefetch(*l[j]);
        } else {
          out[base + j] = answer(*l[j]);
          l[j].reset();
          --left;
        }
      }
    }
  }
}

// AMAC: a circular buffer of G steppers (the hand-written state machines), each switched out
// after it prefetches, and refilled as soon as its lookup ends.
template <typename L, typename Start, typename Prefetch, typename Answer>
void drive_amac(std::size_t n, std::size_t group, Start&& start, Prefetch&& prefetch,
                Answer&& answer, std::span<std::uint64_t> out) {
  BRAID_ASSERT(group >= 1);
  BRAID_ASSERT(group <= runtime::kMaxGroup);
  std::optional<L> l[runtime::kMaxGroup];
  std::size_t input[runtime::kMaxGroup];
  std::size_t next = 0;
  std::size_t finished = 0;
  for (std::size_t j = 0; finished < n; j = j + 1 == group ? 0 : j + 1) {
    if (!l[j]) {
      if (next == n) continue;
      input[j] = next++;
      start(l[j], input[j]);
    }
    if (l[j]->step()) {
      prefetch(*l[j]);
    } else {
      out[input[j]] = answer(*l[j]);
      l[j].reset();
      ++finished;
    }
  }
}

}  // namespace braid::probe
