// The probe suite (Killer Nanoseconds, Jonathan et al., PVLDB 2018): independent lookups over a
// pointer-based structure, run by one of four interleaving techniques. Each structure writes
// each technique once, in its own header:
//   naive — one lookup at a time, no prefetch;
//   gp    — group prefetching: a group of G lookups advances stage by stage in lockstep;
//   amac  — asynchronous memory access chaining: a circular buffer of G hand-written state
//           machines, each switched out after it issues a prefetch;
//   coro  — the lookup written as plain sequential code with a prefetch-and-suspend before each
//           likely miss, G of them interleaved by runtime::interleave (BraidDB's Task + frames).
// Every technique answers exactly what naive answers, for any group size (tests/probe).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "util/enum_names.h"

namespace braid::probe {

enum class Technique : std::uint8_t { kNaive, kGp, kAmac, kCoro };

inline constexpr Technique kTechniques[] = {Technique::kNaive, Technique::kGp, Technique::kAmac,
                                            Technique::kCoro};

inline constexpr const char* kTechniqueNames[] = {"naive", "gp", "amac", "coro"};
static_assert(util::names_every(kTechniqueNames, Technique::kCoro));

inline const char* technique_name(Technique t) { return util::enum_name(t, kTechniqueNames, "?"); }

inline std::optional<Technique> technique_of(std::string_view name) {
  for (Technique t : kTechniques) {
    if (name == technique_name(t)) return t;
  }
  return std::nullopt;
}

// The answer of a lookup that found nothing.
inline constexpr std::uint64_t kNotFound = ~std::uint64_t{0};

}  // namespace braid::probe
