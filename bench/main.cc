// braid-bench: every experiment of the papers from one binary.
#include <cstdio>
#include <cstring>

#include "churn.h"
#include "coldmix.h"
#include "contention.h"
#include "probe_bench.h"
#include "roof.h"
#include "scan.h"
#include "steps.h"
#include "tpcc/tpcc.h"
#include "ycsb/ycsb.h"

namespace {
const char* kUsage = R"(usage: braid-bench <command> [flags]

commands:
  ycsb     YCSB-style transactions (read / update / rmw / scan / insert mixes)
  tpcc     TPC-C, TPC-CR and TPC-CH (secondary indexes, consistency checks)
  probe    lookups over a hash table, a sorted array or the B+-tree by naive, gp, amac,
           coro (and the engine's interleaved path): the Killer-Nanoseconds suite
  roof     the machine's memory-level-parallelism roof (random line fetches per second)
  coldmix  hot and cold tables: storage-bound transactions among memory-bound ones, by
           scheduler (MosaicDB's microbenchmarks)
  scan     analytics over cold data: a Q1-like aggregate and a Q14-like index-nested-loop
           join on morsels, synchronous or asynchronous reads (Umbra's micro-benchmarks)
  churn    a constant live set under churn (keys inserted and removed): memory, index and
           directory per round
  contention single-insert transactions into one hot leaf, 1..N workers (oversubscribed
           included), sequential vs interleaved
  steps    STEPS' microbenchmark: one index fetch by N transactions as a team, and one after
           another (L1-I misses under scripts/icache.sh)

Run 'braid-bench <command> --help' for the flags of a command.
)";
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "%s", kUsage);
    return 2;
  }
  const char* cmd = argv[1];
  if (std::strcmp(cmd, "--help") == 0 || std::strcmp(cmd, "-h") == 0 ||
      std::strcmp(cmd, "help") == 0) {
    std::printf("%s", kUsage);
    return 0;
  }
  struct Command {
    const char* name;
    int (*main)(int, char**, int);
    const char* (*usage)();
  };
  const Command commands[] = {
      {"ycsb", braid::bench::ycsb_main, braid::bench::ycsb_usage},
      {"tpcc", braid::bench::tpcc_main, braid::bench::tpcc_usage},
      {"probe", braid::bench::probe_main, braid::bench::probe_usage},
      {"roof", braid::bench::roof_main, braid::bench::roof_usage},
      {"coldmix", braid::bench::coldmix_main, braid::bench::coldmix_usage},
      {"churn", braid::bench::churn_main, braid::bench::churn_usage},
      {"scan", braid::bench::scan_main, braid::bench::scan_usage},
      {"contention", braid::bench::contention_main, braid::bench::contention_usage},
      {"steps", braid::bench::steps_main, braid::bench::steps_usage}};
  for (const Command& c : commands) {
    if (std::strcmp(cmd, c.name) != 0) continue;
    for (int i = 2; i < argc; ++i) {
      if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
        std::printf("%s", c.usage());
        return 0;
      }
    }
    return c.main(argc, argv, 2);
  }
  std::fprintf(stderr, "braid-bench: unknown command '%s'\n\n%s", cmd, kUsage);
  return 2;
}
