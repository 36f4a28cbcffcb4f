// braid-bench ycsb --help.
#include "ycsb/ycsb.h"

namespace braid::bench {

const char* ycsb_usage() {
  return R"(usage: braid-bench ycsb [flags]

YCSB-style transactions over one table. Loads --records records, then runs for --seconds.

  --engine E         braid | lmdb | rocksdb (default braid): the peers run the same keys,
                     values and transactions on --threads application threads; a read-only
                     transaction is one LMDB read txn / one RocksDB snapshot, an updating
                     one a write txn / an OptimisticTransactionDB transaction. Without
                     --dir a peer works in a temporary directory with --commit async
  --workload W       a | b | c | d | e | f: YCSB's core workloads, 1 op per transaction:
                     A 50 read/50 update, B 95/5, C read only, F 50 read/50 RMW (Zipf
                     0.99); D 95 read/5 insert, reads skewed to the newest (latest); E 95
                     scans of 1..100 records/5 insert (Zipf). Flags given override
  --records N        records to load (default 1000000)
  --threads T        workers, one per core (default 1)
  --seconds S        measured run time (default 10)
  --txns N           instead: each thread runs N transactions (a fixed amount of work, for
                     instruction counts: scripts/profile-ops.sh)
  --ops-per-txn K    operations per transaction (default 10; 1 with --workload)
  --read R           percent reads           \
  --update U         percent blind updates    |  must sum to 100;
  --rmw M            percent read-modify-write|  default: --read 100
  --scan C           percent scans            |
  --insert I         percent inserts         /
  --scan-length L    records per scan (default 10)
  --dist D           uniform | zipf | latest (default uniform)
  --theta X          Zipf skew in [0, 1) (default 0.99)
  --key-bytes B      key length 4..255 (default 8)
  --key-order O      ordered | hashed: record i's key holds i, or a bijective hash of i
                     (YCSB's insertorder=hashed: keys spread over the key space, loaded in
                     random order; needs --key-bytes 8 or more) (default ordered)
  --value-bytes V    value length 0..65536 (default 8)
  --seed N           random seed (default 1)
  --dir PATH         a durable database in PATH (a new or empty directory); default:
                     in memory
  --commit C         durable | async (default durable; with --dir)
  --log-sync S       fdatasync | dsync | direct: how a log block is made durable
                     (default fdatasync; with --dir)
  --log-flusher F    none | thread: thread is the oversubscribed baseline of MosaicDB
                     Fig. 10, a background thread that submits the logs (default none)
  --sq-poll-cpu C    off | a CPU: a kernel thread pinned to CPU C submits the workers' I/O
                     (io_uring SQPOLL; DurabilityOptions::sq_poll_cpu; default off)
  --checkpoint-mib M checkpoint after the logs grew M MiB (default 1024; 0: never)
  --prefault-mib M   make M MiB of version memory resident at open, so that runs do not
                     pay for first-touch page faults (default 0: faulted in as used)
  --prefault-index-mib M  the same for index nodes, shared by every table's tree
                     (default 0: each tree faults in its own 2 MiB chunks as it grows)
  --l2-kib K         the per-core cache the trees are sized against (Options::l2_cache_bytes;
                     default 0: the machine's L2; valgrind reports 256 KiB, so
                     scripts/profile-ops.sh passes the host's)
  --cache-mib M      --engine rocksdb: one cache of M MiB for data blocks, index and filter
                     blocks and the memtables (charged to it), reads bypassing the page
                     cache (O_DIRECT), so M bounds what its data holds in memory, as
                     --memory-budget-mib does BraidDB's (default: a cache that holds the
                     data, reads through the page cache)
  --memory-budget-mib M  bound the database's memory to M MiB (with --dir): records and
                     index leaves past it are evicted and read back from the directory
                     (default 0: no bound)
  --page-index 0|1|2  with --memory-budget-mib: 0 keeps the index whole in memory, outside
                     the budget, which then bounds versions only; 1 pages its leaves
                     (Options::page_index_leaves); 2 inner nodes too (page_index_inner;
                     default 2)
  --reserve-gib G    address space reserved for versions, and for each table's OIDs, in GiB
                     (default: 1024 for versions, 32 per table): small under valgrind
  --scan-read-ahead N  cold records a scan reads ahead in the coroutine modes (0..16,
                     Options::scan_read_ahead; default 16; 0 or 1: one read at a time)
  --load L           txn | bulk | existing: load through transactions of 1000 inserts on
                     --threads threads, or with Database::bulk_load straight to storage
                     (records kept in memory up to the budget, the rest cold; needs --dir),
                     or open the database an earlier run left in --dir (the same --records,
                     --key-bytes and --value-bytes; the load's line reports the open).
                     Default: bulk with --memory-budget-mib, txn otherwise
  --mode M           plain | sequential | prefetch | nested | interleaved | auto | all,
                     or a comma-separated list of them (default interleaved). Several
                     modes run on the same loaded data, one after another, and print
                     their ratios; 'all' is every mode. 'plain' is a thread-per-
                     transaction loop over the synchronous API (no workers, no
                     coroutines): the yardstick for 'sequential'.
  --background-load N  N threads walking 64 MiB each at random during the runs (preemption
                     and cache pollution, like a build beside the database; default 0)
  --repeat R         run the mode list R times round-robin (default 1) and print each
                     mode's min / median / max; ratios then compare medians. On a noisy
                     machine this is the fair A/B: every mode sees the same drift.
  --scheduler P      batch | pipeline | storage-batch | dual-queue (default batch)
  --batch N[,N...]   transactions interleaved per worker, 1..64 (default 8); a list
                     runs nested and interleaved once per size (labelled mode@N),
                     round-robin with the other modes on the same data
  --multi-get 0|1    read-only mixes: issue a transaction's reads as one multi_get
                     (default 0)
  --isolation I[,I]  si | ssn: snapshot isolation, or serializable (SSN); a list runs every
                     mode under each, labelled mode/ssn, round-robin on the same data
                     (default si). JSON: isolation, aborts per cause and their rates
  --declare-read-only 0|1  a transaction of only reads and scans declares itself read-only
                     (TxnOptions::read_only; default 0)
  --roof FILE        the roof saved by 'braid-bench roof' (default results/roof.json), or
                     'measure' (a quick one now): results then say what fraction of it
                     their line fetches reached
  --json FILE        append results as JSON lines (default results/braid-bench.jsonl;
                     'none' to skip)
)";
}

}  // namespace braid::bench
