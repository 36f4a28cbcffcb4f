// braid-bench probe: the Killer-Nanoseconds suite — independent lookups over a chained hash
// table, a sorted array or BraidDB's B+-tree, run by naive, gp, amac and coro (bench/probe/), and
// for the B+-tree also by the engine's own interleaved path (one-get transactions).
#pragma once

namespace braid::bench {

int probe_main(int argc, char** argv, int first);
const char* probe_usage();

}  // namespace braid::bench
