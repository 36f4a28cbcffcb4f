// braid-bench as a user runs it: a tiny real run, and usage errors with exit code 2.
#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "peer.h"

namespace {

struct RunResult {
  int code;
  std::string out;
};

// Runs a built binary with `args`; its exit code and everything it printed.
RunResult run_binary(const char* bin, const std::string& args) {
  char tmpl[] = "/tmp/braid-bench-out-XXXXXX";
  const int fd = ::mkstemp(tmpl);
  EXPECT_GE(fd, 0);
  ::close(fd);
  const std::string cmd = std::string(bin) + " " + args + " >" + tmpl + " 2>&1";
  const int status = std::system(cmd.c_str());
  std::ifstream in(tmpl);
  std::stringstream ss;
  ss << in.rdbuf();
  std::remove(tmpl);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, ss.str()};
}

RunResult run(const std::string& args) { return run_binary(BRAID_BENCH_BIN, args); }

std::string temp_path(const char* name) {
  return std::string("/tmp/braid-bench-test-") + std::to_string(::getpid()) + "-" + name;
}

std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// Hashed keys (YCSB's insertorder=hashed) load, run every kind of operation, and say so in the
// JSON line.
TEST(BenchCli, TinyYcsbRunWithHashedKeys) {
  const std::string json = temp_path("hashed.jsonl");
  RunResult r =
      run("ycsb --records 3000 --seconds 0.2 --key-order hashed --read 60 --update 10 "
          "--scan 10 --insert 10 --rmw 10 --mode sequential,interleaved --json " +
          json);
  ASSERT_EQ(r.code, 0) << r.out;
  const std::vector<std::string> lines = read_lines(json);
  ASSERT_EQ(lines.size(), 2u);
  for (const std::string& line : lines) {
    EXPECT_NE(line.find("\"key_order\":\"hashed\""), std::string::npos) << line;
    EXPECT_NE(line.find("\"errors\":0,"), std::string::npos) << line;
    EXPECT_EQ(line.find("\"commits\":0,"), std::string::npos) << line;
  }
  std::remove(json.c_str());
}

TEST(BenchCli, TinyYcsbRunPrintsTableAndAppendsJson) {
  const std::string json = temp_path("results/out.jsonl");
  RunResult r =
      run("ycsb --records 2000 --seconds 0.2 --threads 2 --read 50 --update 20 --rmw 10 "
          "--scan 10 --insert 10 --dist zipf --theta 0.9 --key-bytes 16 --value-bytes 32 "
          "--json " +
          json);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("txn_per_s"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("p99_us"), std::string::npos);
  std::ifstream in(json);
  std::string line;
  ASSERT_TRUE(std::getline(in, line));
  for (const char* field :
       {"\"bench\":\"ycsb\"", "\"records\":2000", "\"threads\":2", "\"ops_per_txn\":10",
        "\"txn_per_s\":", "\"ops_per_s\":", "\"abort_rate\":", "\"p50_us\":", "\"p99_us\":",
        "\"load_s\":", "\"peak_rss_bytes\":", "\"cpu_model\":", "\"cores\":", "\"memory_bytes\":",
        "\"kernel\":", "\"compiler\":", "\"build_type\":", "\"git_commit\":"}) {
    EXPECT_NE(line.find(field), std::string::npos) << field << " missing in " << line;
  }
  std::system(("rm -rf " + temp_path("results")).c_str());
}

// --txns: a fixed amount of work per thread (scripts/profile-ops.sh counts instructions over
// it), in every kind of run: the thread loop, the workers, a peer; --reserve-gib shrinks the
// address space reserved (valgrind's need); --background-load competes with the runs.
TEST(BenchCli, TinyYcsbTxnsRunsExactlyThatManyTransactionsPerThread) {
  const std::string json = temp_path("txns.jsonl");
  RunResult r =
      run("ycsb --records 2000 --txns 300 --threads 2 --mode plain,sequential,interleaved,auto "
          "--reserve-gib 1 --background-load 1 --json " +
          json);
  ASSERT_EQ(r.code, 0) << r.out;
  std::size_t expect = 4;
  for (const std::string& peer : braid::bench::built_peers()) {
    r = run("ycsb --engine " + peer + " --records 2000 --txns 300 --threads 2 --json " + json);
    ASSERT_EQ(r.code, 0) << r.out;
    ++expect;
  }
  const std::vector<std::string> lines = read_lines(json);
  ASSERT_EQ(lines.size(), expect);
  for (const std::string& line : lines) {
    EXPECT_NE(line.find("\"commits\":600,"), std::string::npos) << line;
    EXPECT_NE(line.find("\"txns_per_thread\":300"), std::string::npos) << line;
  }
  std::remove(json.c_str());
}

TEST(BenchCli, TinyYcsbModeAllRunsEveryModeOnTheSameData) {
  const std::string json = temp_path("all.jsonl");
  RunResult r =
      run("ycsb --records 3000 --seconds 0.05 --threads 2 --mode all --scheduler pipeline "
          "--batch 4 --json " +
          json);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("ratios"), std::string::npos) << r.out;
  const std::vector<std::string> lines = read_lines(json);
  ASSERT_EQ(lines.size(), 6u);
  const char* modes[] = {"plain", "sequential", "prefetch", "nested", "interleaved", "auto"};
  for (std::size_t i = 0; i < lines.size(); ++i) {
    for (const std::string& field :
         {std::string("\"mode\":\"") + modes[i] + "\"", std::string("\"scheduler\":\"pipeline\""),
          std::string("\"batch\":4"), std::string("\"records\":3000"), std::string("\"threads\":2"),
          std::string("\"ops_per_txn\":10")}) {
      EXPECT_NE(lines[i].find(field), std::string::npos) << field << " missing in " << lines[i];
    }
    EXPECT_EQ(lines[i].find("\"commits\":0,"), std::string::npos) << lines[i];
  }
  std::remove(json.c_str());
}

// A --batch list sweeps the interleaving modes (one run per size, labelled mode@size); the
// one-at-a-time modes run once. Every JSON line names the batch size it ran with.
TEST(BenchCli, TinyYcsbBatchListSweepsTheInterleavingModes) {
  const std::string json = temp_path("batches.jsonl");
  RunResult r =
      run("ycsb --records 3000 --seconds 0.05 --mode sequential,nested,interleaved --batch 2,4 "
          "--repeat 2 --json " +
          json);
  ASSERT_EQ(r.code, 0) << r.out;
  for (const char* label : {"nested@2", "nested@4", "interleaved@2", "interleaved@4"}) {
    EXPECT_NE(r.out.find(label), std::string::npos) << label << " missing in\n" << r.out;
  }
  EXPECT_EQ(r.out.find("sequential@"), std::string::npos) << r.out;
  const std::vector<std::string> lines = read_lines(json);
  ASSERT_EQ(lines.size(), 10u);  // 2 rounds of 5 variants
  const std::pair<const char*, int> expect[] = {
      {"sequential", 2}, {"nested", 2}, {"nested", 4}, {"interleaved", 2}, {"interleaved", 4}};
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const auto& [mode, batch] = expect[i % 5];
    for (const std::string& field : {std::string("\"mode\":\"") + mode + "\"",
                                     std::string("\"batch\":") + std::to_string(batch) + ","}) {
      EXPECT_NE(lines[i].find(field), std::string::npos) << field << " missing in " << lines[i];
    }
    EXPECT_EQ(lines[i].find("\"commits\":0,"), std::string::npos) << lines[i];
  }
  std::remove(json.c_str());
}

TEST(BenchCli, TinyYcsbWorkloadsOfThePaperRun) {
  for (const char* args :
       {"--update 100 --mode interleaved", "--rmw 20 --read 80 --mode nested",
        "--scan 100 --scan-length 20 --mode prefetch", "--multi-get 1 --mode interleaved",
        "--multi-get 1 --mode sequential", "--insert 50 --read 50 --mode auto"}) {
    RunResult r = run(std::string("ycsb --records 2000 --seconds 0.05 --json none ") + args);
    EXPECT_EQ(r.code, 0) << args << "\n" << r.out;
  }
}

// Inserts continue across the modes and rounds of one invocation: every mode after the first
// used to insert the keys the first one had inserted, and fail with Duplicate.
TEST(BenchCli, TinyYcsbInsertsAcrossModesAndRoundsNeverCollide) {
  RunResult r = run(
      "ycsb --records 2000 --seconds 0.05 --json none --threads 2 --repeat 2 --insert 20 --read 80 "
      "--mode plain,sequential,interleaved");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out.find("failed"), std::string::npos) << r.out;
}

// The roof at tiny size saves a file that probe and ycsb then read: their results carry the
// line-fetch estimate and the fraction of the roof.
TEST(BenchCli, TinyRoofThenProbeAndYcsbReportTheirFractionOfIt) {
  const std::string roof = temp_path("roof.json");
  const std::string json = temp_path("roof-runs.jsonl");
  RunResult r =
      run("roof --mib 16 --chains 1,4,8 --seconds 0.01 --save " + roof + " --json " + json);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("lines/s per core"), std::string::npos) << r.out;
  const std::vector<std::string> saved = read_lines(roof);
  ASSERT_EQ(saved.size(), 1u);
  EXPECT_NE(saved[0].find("\"per_core_lines_per_s\":"), std::string::npos) << saved[0];
  EXPECT_NE(saved[0].find("\"latency_ns\":"), std::string::npos) << saved[0];
  // 2 page kinds x 3 chain counts, plus an all-core row per kind when there are 2+ cores,
  // plus the three translation-reach rows with their cost per load.
  const std::vector<std::string> rows = read_lines(json);
  EXPECT_GE(rows.size(), 9u);
  std::size_t reach_rows = 0;
  for (const std::string& row : rows) {
    if (row.find("\"kind\":\"translation\"") == std::string::npos) continue;
    ++reach_rows;
    EXPECT_NE(row.find("\"pages_4k\":"), std::string::npos) << row;
    EXPECT_NE(row.find("\"ns_per_load\":"), std::string::npos) << row;
  }
  EXPECT_EQ(reach_rows, 3u);
  EXPECT_NE(r.out.find("distinct 4 KiB pages"), std::string::npos) << r.out;
  r = run("roof --mib 16 --chains 1 --seconds 0.01 --translation off --save none --json none");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out.find("translation:"), std::string::npos) << r.out;

  const std::string probes = temp_path("probe-runs.jsonl");
  r = run("probe --structure hash --keys 3000 --buckets 50 --group 1,8 --seconds 0.02 --roof " +
          roof + " --json " + probes);
  ASSERT_EQ(r.code, 0) << r.out;
  const std::vector<std::string> lines = read_lines(probes);
  ASSERT_EQ(lines.size(), 7u);  // naive + 3 techniques x 2 groups
  for (const std::string& line : lines) {
    for (const char* field :
         {"\"structure\":\"hash\"", "\"keys\":3000", "\"threads\":1", "\"probes_per_s\":",
          "\"technique\":", "\"group\":", "\"line_fetches_per_s\":", "\"roof_fraction\":"}) {
      EXPECT_NE(line.find(field), std::string::npos) << field << " missing in " << line;
    }
  }
  const std::string ycsb = temp_path("ycsb-roof.jsonl");
  r = run("ycsb --records 2000 --seconds 0.05 --roof " + roof + " --json " + ycsb);
  ASSERT_EQ(r.code, 0) << r.out;
  const std::vector<std::string> y = read_lines(ycsb);
  ASSERT_EQ(y.size(), 1u);
  EXPECT_NE(y[0].find("\"roof_fraction\":"), std::string::npos) << y[0];
  EXPECT_NE(y[0].find("\"line_fetches_per_s\":"), std::string::npos) << y[0];
  // --roof measure: a quick roof measured in the same process, just before the runs.
  const std::string measured = temp_path("probe-measured.jsonl");
  r =
      run("probe --structure binsearch --keys 5000 --group 4 --technique naive,coro --seconds "
          "0.02 --roof measure --json " +
          measured);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("roof (measure)"), std::string::npos) << r.out;
  for (const std::string& line : read_lines(measured)) {
    EXPECT_NE(line.find("\"roof_fraction\":"), std::string::npos) << line;
  }
  for (const std::string& f : {roof, json, probes, ycsb, measured}) std::remove(f.c_str());
}

// Every structure and technique at tiny size, searching the group when none is given.
TEST(BenchCli, TinyProbeRunsEveryStructure) {
  for (const char* args :
       {"--structure hash --keys 5000 --key-bytes 8 --load-factor 4 --dist zipf",
        "--structure binsearch --keys 100000 --threads 1,2 --repeat 2",
        "--structure btree --keys 20000 --group 4", "--structure btree --keys 5000",
        "--structure bwtree --keys 20000 --delta-pct 30 --max-chain 2 --group 4",
        "--structure bwtree --keys 3000 --threads 1,2"}) {
    RunResult r = run(std::string("probe --seconds 0.02 --search-seconds 0.005 --roof none "
                                  "--json none ") +
                      args);
    EXPECT_EQ(r.code, 0) << args << "\n" << r.out;
    EXPECT_NE(r.out.find("coro"), std::string::npos) << r.out;
  }
}

// The tpcc sub-command at tiny scale: every mix and mode on the same data, verified after
// each run, with per-type results in the JSON lines.
// --isolation si,ssn runs each mode under both, alternated on one loaded database; the JSON
// names the isolation and the aborts by cause.
TEST(BenchCli, TinyIsolationListsAlternateSnapshotAndSerializable) {
  const std::string json = temp_path("isolation.jsonl");
  RunResult r =
      run("ycsb --records 3000 --seconds 0.05 --mode sequential,interleaved --read 80 "
          "--rmw 20 --dist zipf --isolation si,ssn --declare-read-only 1 --repeat 2 "
          "--json " +
          json);
  ASSERT_EQ(r.code, 0) << r.out;
  for (const char* label :
       {"sequential/si", "sequential/ssn", "interleaved/si", "interleaved/ssn"}) {
    EXPECT_NE(r.out.find(label), std::string::npos) << label << " missing in\n" << r.out;
  }
  const std::vector<std::string> ycsb = read_lines(json);
  ASSERT_EQ(ycsb.size(), 8u);  // 2 rounds × 2 modes × 2 isolations
  for (std::size_t i = 0; i < ycsb.size(); ++i) {
    const std::string iso = i % 2 == 0 ? "\"isolation\":\"si\"" : "\"isolation\":\"ssn\"";
    for (const std::string& field :
         {iso, std::string("\"declare_read_only\":1"), std::string("\"aborts_write_conflict\":"),
          std::string("\"aborts_ssn\":"), std::string("\"abort_rate_phantom\":")}) {
      EXPECT_NE(ycsb[i].find(field), std::string::npos) << field << " missing in " << ycsb[i];
    }
    // Snapshot isolation never aborts for SSN's reasons.
    if (i % 2 == 0) {
      EXPECT_NE(ycsb[i].find("\"aborts_ssn\":0,"), std::string::npos) << ycsb[i];
    }
  }
  std::remove(json.c_str());

  r =
      run("tpcc --warehouses 2 --items 500 --customers 30 --seconds 0.05 --mode interleaved "
          "--isolation si,ssn --verify --json " +
          json);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("interleaved/ssn"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("consistency conditions 1-4 hold"), std::string::npos) << r.out;
  const std::vector<std::string> tpcc = read_lines(json);
  ASSERT_EQ(tpcc.size(), 2u);
  EXPECT_NE(tpcc[0].find("\"isolation\":\"si\""), std::string::npos) << tpcc[0];
  EXPECT_NE(tpcc[1].find("\"isolation\":\"ssn\""), std::string::npos) << tpcc[1];
  EXPECT_NE(tpcc[1].find("\"abort_rate_ssn\":"), std::string::npos) << tpcc[1];
  std::remove(json.c_str());
}

// --type-order arrival,grouped runs each mode in both orders on one loaded database, verified
// after each run; the JSON names the order and the deck.
TEST(BenchCli, TinyTpccTypeOrdersAlternate) {
  const std::string json = temp_path("type-order.jsonl");
  const RunResult r =
      run("tpcc --warehouses 2 --items 500 --customers 30 --seconds 0.05 --mode "
          "sequential,interleaved --scheduler pipeline,team --type-order arrival,grouped "
          "--type-deck 16 --verify --json " +
          json);
  ASSERT_EQ(r.code, 0) << r.out;
  for (const char* label : {"sequential/pipeline/arrival", "sequential/team/grouped",
                            "interleaved/pipeline/grouped", "interleaved/team/arrival"}) {
    EXPECT_NE(r.out.find(label), std::string::npos) << label << " missing in\n" << r.out;
  }
  EXPECT_NE(r.out.find("consistency conditions 1-4 hold"), std::string::npos) << r.out;
  const std::vector<std::string> lines = read_lines(json);
  ASSERT_EQ(lines.size(), 8u);  // 2 modes x 2 schedulers x 2 orders
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string want = i % 2 == 0 ? "\"type_order\":\"arrival\",\"type_deck\":0"
                                        : "\"type_order\":\"grouped\",\"type_deck\":16";
    EXPECT_NE(lines[i].find(want), std::string::npos) << lines[i];
  }
  std::remove(json.c_str());
}

TEST(BenchCli, TinyTpccRunsEveryMixAndModeAndVerifies) {
  const std::string json = temp_path("tpcc.jsonl");
  // A fixed number of transactions, not a time: a 50 ms run under a sanitizer on a busy
  // machine once completed 14 transactions and no Q2* (the tpcc-h mix's tenth).
  RunResult r =
      run("tpcc --warehouses 2 --threads 2 --items 500 --customers 30 --txns 40 --mix all "
          "--mode all --batch 4 --suppliers 20 --verify --prefault-mib 8 --prefault-index-mib 4 "
          "--l2-kib 512 --json " +
          json);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("consistency conditions 1-4 hold"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("NewOrder"), std::string::npos);
  EXPECT_NE(r.out.find("Q2*"), std::string::npos);
  std::ifstream in(json);
  std::string line;
  int lines = 0;
  bool saw_hybrid = false;
  while (std::getline(in, line)) {
    ++lines;
    for (const char* field :
         {"\"bench\":\"tpcc\"", "\"mix\":", "\"mode\":", "\"hybrid\":", "\"warehouses\":2",
          "\"threads\":2", "\"txn_per_s\":", "\"abort_rate\":", "\"types\":{",
          "\"p99_us\":", "\"verified\":true", "\"prefault_mib\":8", "\"prefault_index_mib\":4",
          "\"l2_kib\":512"}) {
      EXPECT_NE(line.find(field), std::string::npos) << field << " missing in " << line;
    }
    if (line.find("\"mix\":\"tpcc-r\"") != std::string::npos) {
      EXPECT_NE(line.find("\"StockLevel\":{"), std::string::npos) << line;
      EXPECT_EQ(line.find("\"NewOrder\":{"), std::string::npos) << line;
    }
    if (line.find("\"mix\":\"tpcc-h\"") != std::string::npos) {
      EXPECT_NE(line.find("\"Q2*\":{"), std::string::npos) << line;
    }
    saw_hybrid = saw_hybrid || line.find("\"hybrid\":1") != std::string::npos;
  }
  EXPECT_EQ(lines, 3 * 6);  // three mixes × six modes (hybrid included)
  EXPECT_TRUE(saw_hybrid);
  std::remove(json.c_str());
}

// --delivery-hint 0: Delivery finds the oldest new order from the district's first key (the
// delivered ones reclaimed); the consistency conditions still hold.
TEST(BenchCli, TinyTpccWithoutDeliveryHintVerifies) {
  const std::string json = temp_path("no-hint.jsonl");
  const RunResult r = run(
      "tpcc --warehouses 1 --items 200 --customers 20 --txns 2000 --mode sequential,interleaved "
      "--delivery-hint 0 --verify --json " +
      json);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("consistency conditions 1-4 hold"), std::string::npos) << r.out;
  const std::vector<std::string> lines = read_lines(json);
  ASSERT_EQ(lines.size(), 2u);
  for (const std::string& line : lines) {
    EXPECT_NE(line.find("\"delivery_hint\":0"), std::string::npos) << line;
  }
  std::remove(json.c_str());
}

// --rehearse: the plain modes time each transaction's second run; the JSON says so.
TEST(BenchCli, TinyTpccRehearsalVerifies) {
  const std::string json = temp_path("rehearse.jsonl");
  const RunResult r =
      run("tpcc --warehouses 1 --items 200 --customers 20 --txns 300 --mode sequential,prefetch "
          "--rehearse --verify --json " +
          json);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("rehearsed"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("consistency conditions 1-4 hold"), std::string::npos) << r.out;
  const std::vector<std::string> lines = read_lines(json);
  ASSERT_EQ(lines.size(), 2u);
  for (const std::string& line : lines) {
    for (const char* field : {"\"rehearse\":1", "\"txn_s\":", "\"completed\":300,"}) {
      EXPECT_NE(line.find(field), std::string::npos) << field << " missing in " << line;
    }
  }
  std::remove(json.c_str());
}

TEST(BenchCli, TinyDurableTpccVerifies) {
  const std::string dir = temp_path("tpcc-db");
  RunResult r =
      run("tpcc --warehouses 1 --items 200 --customers 20 --seconds 0.1 --hybrid "
          "--verify --json none --dir " +
          dir);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("durability:"), std::string::npos) << r.out;
  std::system(("rm -rf " + dir).c_str());
}

TEST(BenchCli, UsageErrorsExitWithTwo) {
  struct Case {
    const char* args;
    const char* message;
  };
  for (const Case& c :
       {Case{"", "usage: braid-bench"},
        Case{"frobnicate", "unknown command"},
        Case{"ycsb --bogus 1", "unknown flag --bogus"},
        Case{"ycsb --records abc", "--records expects a whole number"},
        Case{"ycsb --records -5", "--records expects a whole number"},
        Case{"ycsb --records 0", "--records must be in"},
        Case{"ycsb --read 50", "must sum to 100"},
        Case{"ycsb --dist pareto", "--dist must be one of"},
        Case{"ycsb --theta 1.5", "--theta must be in"},
        Case{"ycsb --key-bytes 300", "--key-bytes must be in"},
        Case{"ycsb --key-bytes 4 --records 5000000000", "cannot hold"},
        Case{"ycsb --key-order random", "--key-order must be one of"},
        Case{"ycsb --key-order hashed --key-bytes 4", "needs --key-bytes 8 or more"},
        Case{"ycsb --key-order hashed --load bulk --dir /tmp/braid-never-made",
             "cannot --load bulk"},
        Case{"ycsb --seconds", "needs a value"},
        Case{"ycsb stray", "unexpected argument"},
        Case{"ycsb --seed 1 --seed 2", "given twice"},
        Case{"ycsb --mode fast", "--mode must be"},
        Case{"ycsb --scheduler fifo", "--scheduler must be"},
        Case{"ycsb --isolation rc", "--isolation"},
        Case{"tpcc --isolation si,si2", "--isolation"},
        Case{"ycsb --batch 0", "--batch must be"},
        Case{"ycsb --batch 4,65", "--batch must be"},
        Case{"ycsb --batch 4,4", "--batch lists 4 twice"},
        Case{"ycsb --batch 4,x", "comma"},
        Case{"ycsb --multi-get 1 --update 100", "read-only"},
        Case{"ycsb --mode sequential,bogus", "--mode must be"},
        Case{"ycsb --mode auto,auto", "twice"},
        Case{"ycsb --repeat 0", "--repeat must be"},
        Case{"probe --structure tree", "--structure must be"},
        Case{"probe --technique naive,fast", "--technique must list"},
        Case{"probe --technique engine", "only for --structure btree"},
        Case{"probe --group 0", "--group must be"},
        Case{"probe --group 65", "--group must be"},
        Case{"probe --group 4,x", "comma"},
        Case{"probe --key-bytes 6", "4 or 8"},
        Case{"probe --structure btree --key-bytes 4", "for --structure hash"},
        Case{"probe --keys 0", "--keys must be"},
        Case{"probe --delta-pct 5", "for --structure bwtree"},
        Case{"probe --structure bwtree --delta-pct 101", "--delta-pct must be"},
        Case{"probe --structure bwtree --max-chain 0", "--max-chain must be"},
        Case{"roof --chains 3", "is not one of"},
        Case{"roof --pages 1g", "--pages must be"},
        Case{"roof --translation maybe", "--translation must be"},
        Case{"roof --mib 0", "--mib must be"},
        Case{"tpcc --mix tpcc-x", "--mix must be one of"},
        Case{"tpcc --ch-query q3", "--ch-query must be one of"},
        Case{"tpcc --mode plain", "--mode must be one of"},
        Case{"tpcc --warehouses 1 --threads 2", "fewer than --threads"},
        Case{"tpcc --warehouses 0", "--warehouses must be"},
        Case{"tpcc --hybrid=2", "--hybrid must be"},
        Case{"tpcc --rehearse --mode sequential,interleaved", "runs only with --mode sequential"},
        Case{"tpcc --rehearse --mode all", "runs only with --mode sequential"},
        Case{"tpcc --type-order sorted", "--type-order must be one of"},
        Case{"tpcc --type-deck 0", "--type-deck must be in 1..4096"},
        Case{"tpcc --type-deck 4097", "--type-deck must be in 1..4096"},
        Case{"tpcc --suppliers 0", "--suppliers must be"},
        Case{"tpcc --items 10", "--items must be"},
        Case{"tpcc --verify --bogus 1", "unknown flag --bogus"},
        Case{"tpcc --prefault-mib x", "--prefault-mib expects a whole number"},
        Case{"ycsb --prefault-mib 2000000", "--prefault-mib must be"},
        Case{"ycsb --prefault-index-mib 2000000", "--prefault-index-mib must be"},
        Case{"ycsb --l2-kib 2000000", "--l2-kib must be"},
        Case{"ycsb --memory-budget-mib 4", "needs --dir"},
        Case{"ycsb --page-index 1", "needs --memory-budget-mib"},
        Case{"ycsb --engine rocksdb --page-index 1", "applies to --engine braid only"},
        Case{"tpcc --memory-budget-mib 4", "needs --dir"},
        Case{"ycsb --load bulk", "--load bulk needs --dir"},
        Case{"ycsb --load existing", "--load existing needs --dir"},
        Case{"ycsb --load existing --dir /tmp/braid-never-made", "holds no database"},
        Case{"ycsb --load fast", "--load must be one of"},
        Case{"churn --pattern lifo", "--pattern"},
        Case{"churn --live 32 --threads 4 --keys-per-txn 4", "--live must be at least"},
        Case{"churn --keys-per-txn 17", "--keys-per-txn"},
        Case{"coldmix", "coldmix needs --dir"},
        Case{"coldmix --dir /tmp/x --memory-budget-mib 4", "no --memory-budget-mib"},
        Case{"coldmix --dir /tmp/x --cold-pct 101", "--cold-pct"},
        Case{"coldmix --dir /tmp/x --cold-pct 5,5", "lists 5 twice"},
        Case{"coldmix --dir /tmp/x --scheduler fifo", "--scheduler"},
        Case{"coldmix --dir /tmp/x --cache-cold maybe", "--cache-cold"},
        Case{"coldmix --dir /tmp/x --sq-poll-cpu one", "--sq-poll-cpu takes off or a CPU"},
        Case{"coldmix --dir /tmp/x --read-batch 0", "--read-batch"},
        Case{"coldmix --dir /tmp/x --read-window-us 100001", "--read-window-us"},
        Case{"ycsb --sq-poll-cpu 0", "--sq-poll-cpu needs --dir"},
        Case{"scan", "scan needs --dir"},
        Case{"scan --dir /tmp/x --memory-budget-mib 4", "no --memory-budget-mib"},
        Case{"scan --dir /tmp/x --query q2", "--query must be"},
        Case{"scan --dir /tmp/x --query q1,q14", "process of its own"},
        Case{"scan --dir /tmp/x --io sync --io-depth 4", "--io-depth must be 1"},
        Case{"scan --dir /tmp/x --io-depth 65", "--io-depth must be"},
        Case{"scan --dir /tmp/x --io maybe", "--io must be"},
        Case{"scan --dir /tmp/x --cached-pct 101", "--cached-pct must be"},
        Case{"scan --dir /tmp/x --row-bytes 8", "--row-bytes must be"},
        Case{"ycsb --workload g", "--workload"},
        Case{"ycsb --engine sqlite", "--engine"},
        Case{"ycsb --engine lmdb --mode interleaved", "applies to --engine braid only"},
        Case{"ycsb --engine rocksdb --batch 4", "applies to --engine braid only"},
        Case{"ycsb --cache-mib 8", "BraidDB's bound is --memory-budget-mib"},
        Case{"ycsb --engine lmdb --cache-mib 8", "--engine rocksdb only"},
        Case{"ycsb --engine rocksdb --cache-mib 0", "--cache-mib"}}) {
    RunResult r = run(c.args);
    EXPECT_EQ(r.code, 2) << c.args << "\n" << r.out;
    EXPECT_NE(r.out.find(c.message), std::string::npos) << c.args << "\n" << r.out;
  }
  RunResult help = run("ycsb --help");
  EXPECT_EQ(help.code, 0);
  EXPECT_NE(help.out.find("--ops-per-txn"), std::string::npos);
}

}  // namespace

namespace {

RunResult run_tool(const std::string& args) { return run_binary(BRAID_TOOL_BIN, args); }

std::vector<std::string> json_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

void expect_fields(const std::string& line, std::initializer_list<const char*> fields) {
  for (const char* f : fields) {
    EXPECT_NE(line.find(f), std::string::npos) << f << " missing in " << line;
  }
}

// A number field of a JSON line (-1 when absent).
double json_number(const std::string& line, const std::string& field) {
  const std::string tag = "\"" + field + "\":";
  const std::size_t at = line.find(tag);
  if (at == std::string::npos) return -1;
  return std::strtod(line.c_str() + at + tag.size(), nullptr);
}

// --l2-kib (Options::l2_cache_bytes) is what the trees are sized against. 20,000 records fill
// ~500 leaves (~500 KiB): against 64 KiB they do not fit a quarter of it and an interleaved get
// suspends before its leaf and its OID entry (its version came with the entry, by the leaf's
// value hint); against 1 GiB the leaves count as resident and a get suspends once. Sizes
// outside 64 KiB..1 GiB are refused at open.
TEST(BenchCli, TinyYcsbL2SizeDecidesWhichLevelsSuspend) {
  const std::string json = temp_path("l2.jsonl");
  for (const char* kib : {"64", "1048576"}) {
    RunResult r = run(std::string("ycsb --records 20000 --txns 200 --mode interleaved ") +
                      "--reserve-gib 1 --l2-kib " + kib + " --json " + json);
    ASSERT_EQ(r.code, 0) << r.out;
  }
  const std::vector<std::string> lines = read_lines(json);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(json_number(lines[0], "l2_kib"), 64) << lines[0];
  EXPECT_EQ(json_number(lines[0], "suspends_per_txn"), 20) << lines[0];
  EXPECT_EQ(json_number(lines[1], "l2_kib"), 1048576) << lines[1];
  EXPECT_EQ(json_number(lines[1], "suspends_per_txn"), 10) << lines[1];
  std::remove(json.c_str());
  RunResult r = run("ycsb --records 2000 --txns 10 --l2-kib 8 --json none");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("Options::l2_cache_bytes (8192) must be"), std::string::npos) << r.out;
}

// The engines this build can run: BraidDB and the peers whose packages were found.
std::vector<std::string> engines() {
  std::vector<std::string> e = {"braid"};
  for (const std::string& p : braid::bench::built_peers()) e.push_back(p);
  return e;
}

// YCSB's core workloads run the mix they document — measured from the operations the run
// issued, on every engine — with one operation per transaction, and a flag still overrides.
TEST(BenchCli, TinyYcsbCoreWorkloadsRunTheirDocumentedMixOnEveryEngine) {
  struct Expect {
    const char* workload;
    double read, update, rmw, scan, insert;
    const char* dist;
  };
  const Expect all[] = {{"a", 50, 50, 0, 0, 0, "zipf"}, {"b", 95, 5, 0, 0, 0, "zipf"},
                        {"c", 100, 0, 0, 0, 0, "zipf"}, {"d", 95, 0, 0, 0, 5, "latest"},
                        {"e", 0, 0, 0, 95, 5, "zipf"},  {"f", 50, 0, 50, 0, 0, "zipf"}};
  const std::string json = temp_path("workloads.jsonl");
  for (const std::string& engine : engines()) {
    for (const Expect& x : all) {
      std::remove(json.c_str());
      // A count, not a duration: a scan under ASan on a loaded machine took over 1 ms, so
      // 0.2 s once issued only 178 operations (CI, RocksDB, workload e).
      const std::string args = std::string("ycsb --records 5000 --txns 1500 --workload ") +
                               x.workload + " --engine " + engine + " --json " + json;
      RunResult r = run(args);
      ASSERT_EQ(r.code, 0) << args << "\n" << r.out;
      const std::vector<std::string> lines = json_lines(json);
      ASSERT_EQ(lines.size(), 1u) << args;
      const std::string& l = lines[0];
      EXPECT_NE(l.find("\"engine\":\"" + engine + "\""), std::string::npos) << l;
      EXPECT_NE(l.find("\"engine_version\":\""), std::string::npos) << l;
      EXPECT_NE(l.find(std::string("\"dist\":\"") + x.dist + "\""), std::string::npos) << l;
      EXPECT_EQ(json_number(l, "ops_per_txn"), 1) << l;
      EXPECT_EQ(json_number(l, "errors"), 0) << l;
      const double ops = json_number(l, "ops_read") + json_number(l, "ops_update") +
                         json_number(l, "ops_rmw") + json_number(l, "ops_scan") +
                         json_number(l, "ops_insert");
      ASSERT_EQ(ops, 1500) << l;  // one operation per transaction, every one issued
      const std::pair<const char*, double> mix[] = {{"ops_read", x.read},
                                                    {"ops_update", x.update},
                                                    {"ops_rmw", x.rmw},
                                                    {"ops_scan", x.scan},
                                                    {"ops_insert", x.insert}};
      for (const auto& [field, pct] : mix) {
        EXPECT_NEAR(100 * json_number(l, field) / ops, pct, 3.0) << args << " " << field;
      }
      if (std::string(x.workload) == "e") {
        EXPECT_EQ(json_number(l, "scan_uniform"), 1) << l;  // 1..100 records per scan
        EXPECT_EQ(json_number(l, "scan_length"), 100) << l;
      }
    }
  }
  std::remove(json.c_str());
  RunResult r =
      run("ycsb --records 5000 --seconds 0.2 --workload a --read 80 --update 20 "
          "--ops-per-txn 4 --json " +
          json);
  ASSERT_EQ(r.code, 0) << r.out;
  const std::string l = json_lines(json).at(0);
  EXPECT_EQ(json_number(l, "read"), 80) << l;
  EXPECT_EQ(json_number(l, "ops_per_txn"), 4) << l;
  std::remove(json.c_str());
}

// Each peer adapter at tiny size, as the comparison script runs it: reads, updates with
// durable commits in a directory, read-modify-writes from two threads (conflicts are counted,
// not errors), and the engine's name and version in the JSON. A build without the adapter
// answers --engine with the package to install, and the rest is skipped.
class TinyPeer : public ::testing::TestWithParam<std::string> {};

TEST_P(TinyPeer, RunsReadsDurableUpdatesAndConcurrentRmw) {
  const std::string peer = GetParam();
  const std::vector<std::string> built = braid::bench::built_peers();
  if (std::find(built.begin(), built.end(), peer) == built.end()) {
    RunResult r = run("ycsb --records 100 --seconds 0.05 --engine " + peer);
    EXPECT_EQ(r.code, 3) << r.out;  // names the package to install
    EXPECT_NE(r.out.find("install"), std::string::npos) << r.out;
    GTEST_SKIP() << "this build has no " << peer << " adapter (its -dev package is absent)";
  }
  const std::string dir = temp_path(("db-peer-" + peer).c_str());
  const std::string json = temp_path("peer.jsonl");
  std::system(("rm -rf " + dir + " " + json).c_str());
  for (const std::string& args :
       {std::string("--read 100"), "--update 100 --commit durable --dir " + dir,
        std::string("--rmw 100 --threads 2 --dist zipf")}) {
    RunResult r = run("ycsb --records 2000 --txns 60 --ops-per-txn 4 --engine " + peer +
                      " --json " + json + " " + args);
    ASSERT_EQ(r.code, 0) << args << "\n" << r.out;
    const std::string l = json_lines(json).back();
    EXPECT_NE(l.find("\"engine\":\"" + peer + "\""), std::string::npos) << l;
    const double threads = json_number(l, "threads");
    EXPECT_EQ(json_number(l, "commits") + json_number(l, "aborts"), 60 * threads) << l;
    EXPECT_GT(json_number(l, "commits"), 10) << l;
    EXPECT_EQ(json_number(l, "errors"), 0) << l;
  }
  std::system(("rm -rf " + dir + " " + json).c_str());
}

// RocksDB under a cache far smaller than its data (--cache-mib: memtables charged to the cache,
// direct reads): loads, reads every kind of way and updates without an error, and records its
// bound in the JSON.
TEST(BenchCli, RocksdbUnderASmallCacheReadsAndWritesItsData) {
  const std::vector<std::string> built = braid::bench::built_peers();
  if (std::find(built.begin(), built.end(), "rocksdb") == built.end()) {
    GTEST_SKIP() << "this build has no rocksdb adapter";
  }
  const std::string dir = temp_path("db-rocks-cache");
  const std::string json = temp_path("rocks-cache.jsonl");
  std::system(("rm -rf " + dir + " " + json).c_str());
  // 20,000 records of 8 + 200 bytes: 4 MiB of data against a 1 MiB cache.
  RunResult r =
      run("ycsb --engine rocksdb --cache-mib 1 --records 20000 --value-bytes 200 --txns 300 "
          "--ops-per-txn 4 --read 90 --update 10 --commit async --dir " +
          dir + " --json " + json);
  ASSERT_EQ(r.code, 0) << r.out;
  const std::string l = json_lines(json).at(0);
  EXPECT_EQ(json_number(l, "cache_mib"), 1) << l;
  EXPECT_EQ(json_number(l, "commits") + json_number(l, "aborts"), 300) << l;
  EXPECT_EQ(json_number(l, "errors"), 0) << l;
  std::system(("rm -rf " + dir + " " + json).c_str());
}

INSTANTIATE_TEST_SUITE_P(Peers, TinyPeer, ::testing::Values("lmdb", "rocksdb"),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

// coldmix at tiny size: every scheduler and the sequential baseline at 0 % and 50 % cold, read-
// only and read-write, with cold reads uncached; the storage-bound ones really read.
TEST(BenchCli, TinyColdmixRunsEverySchedulerAndReadsTheColdTable) {
  const std::string json = temp_path("coldmix.jsonl");
  for (const char* rw : {"", " --rw"}) {
    const std::string dir = temp_path("db-coldmix");
    std::system(("rm -rf " + dir + " " + json).c_str());
    RunResult r = run(std::string("coldmix --hot-records 20000 --cold-records 2000 --cold-pct 0,50 "
                                  "--mode sequential,interleaved --scheduler all --seconds 0.15 "
                                  "--cache-cold off --commit async --dir ") +
                      dir + rw + " --json " + json);
    ASSERT_EQ(r.code, 0) << r.out;
    const std::vector<std::string> lines = json_lines(json);
    ASSERT_EQ(lines.size(), 12u) << r.out;  // (sequential + 5 schedulers) x 2 percentages
    for (const std::string& line : lines) {
      expect_fields(line,
                    {"\"bench\":\"coldmix\"", "\"mode\":", "\"scheduler\":", "\"cold_pct\":",
                     "\"txn_per_s\":", "\"hot_txn_per_s\":", "\"cold_txn_per_s\":", "\"iops\":",
                     "\"io_depth\":", "\"hot_p99_us\":", "\"cold_p50_us\":", "\"errors\":0"});
      const bool cold = line.find("\"cold_pct\":50") != std::string::npos;
      // 50 % storage-bound with uncached cold reads: cold transactions commit and read. (With
      // --rw the records they update stay in memory, and 2000 of them are soon all updated.)
      EXPECT_EQ(cold, line.find("\"cold_commits\":0,") == std::string::npos) << line;
      if (*rw == '\0') {
        EXPECT_EQ(cold, line.find("\"iops\":0,") == std::string::npos) << line;
      }
    }
    std::system(("rm -rf " + dir + " " + json).c_str());
  }
  // The storage path's three structures (MosaicDB Fig. 11), storage-bound transactions only,
  // their reads submitted by the kernel's polling thread (--sq-poll-cpu), with the engine's
  // per-stage profile of the worker's time.
  const std::string dir = temp_path("db-coldmix-paths");
  std::system(("rm -rf " + dir).c_str());
  RunResult r =
      run("coldmix --hot-records 20000 --cold-records 2000 --cold-pct 100 --mode "
          "nested,interleaved --scheduler dual-queue --storage-path all --seconds 0.15 "
          "--cache-cold off --sq-poll-cpu 0 --profile-stages --dir " +
          dir + " --json " + json);
  ASSERT_EQ(r.code, 0) << r.out;
  const std::vector<std::string> lines = json_lines(json);
  ASSERT_EQ(lines.size(), 3u) << r.out;
  for (const char* path : {"\"storage_path\":\"nested (all)\"", "\"storage_path\":\"nested\"",
                           "\"storage_path\":\"flattened\""}) {
    int n = 0;
    for (const std::string& line : lines) n += line.find(path) != std::string::npos ? 1 : 0;
    EXPECT_EQ(n, 1) << path;
  }
  for (const std::string& line : lines) {
    EXPECT_EQ(line.find("\"iops\":0,"), std::string::npos) << line;
    EXPECT_NE(line.find("\"sq_poll_cpu\":\"0\""), std::string::npos) << line;
    expect_fields(line,
                  {"\"cold_reads_issued\":", "\"cold_reads_reaped\":", "\"stage_submit_ns\":",
                   "\"stage_complete_ns\":", "\"stage_sync_wait_ns\":", "\"stage_other_ns\":"});
    // Every run read: the reads it completed took time to complete.
    EXPECT_EQ(line.find("\"cold_reads_reaped\":0,"), std::string::npos) << line;
    EXPECT_EQ(line.find("\"stage_complete_ns\":0,"), std::string::npos) << line;
  }
  EXPECT_NE(r.out.find("stages, us per cold read: submit"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("storage path"), std::string::npos) << r.out;
  std::system(("rm -rf " + dir + " " + json).c_str());
}

// contention at tiny size: one worker and an oversubscribed count, sequential and interleaved;
// every insert lands (the table then holds the preload plus every commit).
TEST(BenchCli, TinyContentionRunsEachWorkerCountAndMode) {
  const std::string json = temp_path("contention.jsonl");
  std::system(("rm -f " + json).c_str());
  const unsigned over = 2 * std::max(1u, std::thread::hardware_concurrency());
  RunResult r = run("contention --workers 1," + std::to_string(over) +
                    " --records 1000 --batch 4 --seconds 0.1 --json " + json);
  ASSERT_EQ(r.code, 0) << r.out;
  const std::vector<std::string> lines = json_lines(json);
  ASSERT_EQ(lines.size(), 4u) << r.out;  // 2 worker counts x (sequential, interleaved@4)
  for (const std::string& line : lines) {
    expect_fields(line, {"\"bench\":\"contention\"", "\"workers\":", "\"txn_per_s\":",
                         "\"restarts_per_txn\":", "\"wait_share\":", "\"errors\":0"});
    EXPECT_EQ(line.find("\"commits\":0,"), std::string::npos) << line;
  }
  EXPECT_NE(lines[2].find("\"oversubscribed\":1"), std::string::npos) << lines[2];
  std::system(("rm -f " + json).c_str());
}

// churn at tiny size, both patterns, in memory and in a directory: a JSON line per round (the
// load's round 0 included) with the fields the issue names; the live set stays constant and,
// with the records reclaimed, the live versions stay near it while the keys written grow.
TEST(BenchCli, TinyChurnKeepsTheLiveSetAndItsVersions) {
  for (const std::string where : {"memory", "dir"}) {
    for (const std::string pattern : {"fifo", "random"}) {
      SCOPED_TRACE(pattern + " in " + where);
      const std::string json = temp_path("churn.jsonl");
      const std::string dir = temp_path("churn-db");
      std::system(("rm -rf " + json + " " + dir).c_str());
      std::string cmd = "churn --live 2000 --rounds 4 --pattern " + pattern + " --json " + json;
      if (where == "dir") cmd += " --dir " + dir;
      RunResult r = run(cmd);
      ASSERT_EQ(r.code, 0) << r.out;
      const std::vector<std::string> lines = json_lines(json);
      ASSERT_EQ(lines.size(), 5u) << r.out;
      for (const std::string& line : lines) {
        expect_fields(line, {"\"bench\":\"churn\"", "\"round\":", "\"keys_written\":",
                             "\"live_records\":", "\"rss_mib\":", "\"index_nodes\":",
                             "\"live_versions\":", "\"dir_mib\":", "\"txn_per_s\":"});
        EXPECT_NE(line.find("\"pattern\":\"" + pattern + "\""), std::string::npos) << line;
      }
      const auto field = [&](const std::string& line, const std::string& name) {
        const std::size_t at = line.find("\"" + name + "\":");
        EXPECT_NE(at, std::string::npos) << name;
        return at == std::string::npos ? 0 : std::stoull(line.substr(at + name.size() + 3));
      };
      EXPECT_EQ(field(lines[4], "keys_written"), 8000u) << lines[4];
      // Counted while the idle worker may still be giving OIDs back (up to 64 a transaction
      // end): stats() reads the tables again while the contexts' count moves, a bounded
      // number of times, so a reader slower than every reread may still miss some.
      EXPECT_NEAR(static_cast<double>(field(lines[4], "live_records")), 2000, 64) << lines[4];
      // 8 000 keys came and went, which without reclamation would leave 2 000 + 2 x 8 000
      // versions; with it, the live set's plus the removals still waiting (two versions each):
      // in a directory up to about a round's (they wait to be durable as well).
      EXPECT_LT(field(lines[4], "live_versions"), 7000u) << lines[4];
      if (where == "dir") {
        // Recovery agrees: the removed keys are gone, their OIDs free, the live ones intact.
        RunResult c = run_tool("check " + dir);
        EXPECT_EQ(c.code, 0) << c.out;
        EXPECT_NE(c.out.find("engine: 2000 records (0 named by address), 0 tombstones pending"),
                  std::string::npos)
            << c.out;
      }
      std::system(("rm -rf " + json + " " + dir).c_str());
    }
  }
}

// The team scheduler's TPC-C comparisons at tiny size: a list of schedulers alternates on one
// database (labelled mode/scheduler, JSON scheduler and the team's parameters), a mix of one type
// runs only that type, and --txns runs exactly that many per worker; the consistency conditions
// hold after every run.
TEST(BenchCli, TinyTpccSchedulerListsAndSingleTypeMixes) {
  const std::string json = temp_path("tpcc-team.jsonl");
  std::system(("rm -f " + json).c_str());
  RunResult r =
      run("tpcc --warehouses 4 --items 500 --customers 30 --txns 300 --mix new-order,payment,tpcc "
          "--mode interleaved --scheduler pipeline,team --batch 8 --team-size 4 --team-wait 3 "
          "--suppliers 20 --verify --json " +
          json);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("interleaved/team"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("consistency conditions 1-4 hold"), std::string::npos) << r.out;
  const std::vector<std::string> lines = json_lines(json);
  ASSERT_EQ(lines.size(), 6u) << r.out;  // three mixes x two schedulers
  for (const std::string& line : lines) {
    expect_fields(line, {"\"bench\":\"tpcc\"", "\"scheduler\":", "\"txn_per_s\":"});
    const bool team = line.find("\"scheduler\":\"team\"") != std::string::npos;
    EXPECT_EQ(line.find("\"team_size\":4") != std::string::npos, team) << line;
    EXPECT_EQ(line.find("\"team_wait\":3") != std::string::npos, team) << line;
    const double completed = json_number(line, "completed");
    const double aborts = json_number(line, "aborts");
    EXPECT_EQ(completed + aborts, 300.0) << line;  // --txns, one worker
    if (line.find("\"mix\":\"new-order\"") != std::string::npos) {
      EXPECT_NE(line.find("\"NewOrder\":{"), std::string::npos) << line;
      EXPECT_EQ(line.find("\"Payment\":{"), std::string::npos) << line;
    }
    if (line.find("\"mix\":\"payment\"") != std::string::npos) {
      EXPECT_NE(line.find("\"Payment\":{"), std::string::npos) << line;
      EXPECT_EQ(line.find("\"NewOrder\":{"), std::string::npos) << line;
    }
  }
  std::system(("rm -f " + json).c_str());
}

// STEPS' microbenchmark at tiny size: every way, cache and team size runs, and every fetch finds
// its record (the sub-command fails otherwise).
TEST(BenchCli, TinyStepsRunsEveryWayCacheAndTeamSize) {
  const std::string json = temp_path("steps.jsonl");
  std::system(("rm -f " + json).c_str());
  RunResult r = run("steps --records 2000 --members 1,3,16 --json " + json);
  ASSERT_EQ(r.code, 0) << r.out;
  const std::vector<std::string> lines = json_lines(json);
  ASSERT_EQ(lines.size(), 3u * 3u * 2u) << r.out;  // members x ways x {cold, warm}
  for (const std::string& line : lines) {
    expect_fields(line, {"\"bench\":\"steps\"",
                         "\"way\":", "\"cache\":", "\"members\":", "\"ns_per_fetch\":"});
  }
  EXPECT_EQ(run("steps --members 17").code, 2);
  EXPECT_EQ(run("steps --way fast").code, 2);
  std::system(("rm -f " + json).c_str());
}

// The oversubscribed-flusher baseline (--log-flusher thread) runs durable YCSB and TPC-C and
// says so in its JSON; the TPC-C run verifies.
TEST(BenchCli, TinyRunsWithALogFlusherThread) {
  const std::string json = temp_path("flusher.jsonl");
  const std::string dir = temp_path("db-flusher");
  std::system(("rm -rf " + dir + " " + json).c_str());
  RunResult y = run("ycsb --records 5000 --update 100 --threads 2 --seconds 0.2 --dir " + dir +
                    " --log-flusher thread --json " + json);
  ASSERT_EQ(y.code, 0) << y.out;
  std::system(("rm -rf " + dir).c_str());
  RunResult t =
      run("tpcc --warehouses 2 --threads 2 --items 1000 --customers 100 --seconds 0.2 "
          "--mode interleaved --verify --dir " +
          dir + " --log-flusher thread --json " + json);
  ASSERT_EQ(t.code, 0) << t.out;
  const std::vector<std::string> lines = json_lines(json);
  ASSERT_EQ(lines.size(), 2u);
  for (const std::string& line : lines) {
    EXPECT_NE(line.find("\"log_flusher\":\"thread\""), std::string::npos) << line;
    EXPECT_EQ(line.find("\"commits\":0,"), std::string::npos) << line;
  }
  std::system(("rm -rf " + dir + " " + json).c_str());
}

// A database bigger than its budget: the run reads records back from the directory and
// reports the cold store's figures; the directory then checks.
TEST(BenchCli, TinyYcsbAndTpccUnderAMemoryBudget) {
  const std::string json = temp_path("budget.jsonl");
  const std::string dir = temp_path("db-budget");
  std::system(("rm -rf " + dir).c_str());
  // 60,000 records of 64-byte values: ~6 MiB of versions against a 2 MiB budget.
  // A checkpoint per MiB of log: the load's records land in checkpoint parts.
  RunResult r =
      run("ycsb --records 60000 --value-bytes 64 --seconds 0.3 --mode "
          "sequential,interleaved --rmw 20 --read 80 --dir " +
          dir + " --memory-budget-mib 2 --checkpoint-mib 1 --json " + json);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("hit ratio"), std::string::npos) << r.out;
  RunResult c = run_tool("check " + dir);
  EXPECT_EQ(c.code, 0) << c.out;
  EXPECT_NE(c.out.find("cold"), std::string::npos) << c.out;
  // `braid stats` counts the newest checkpoint's records without recovering: every record,
  // as a value it holds or a reference to an older part.
  RunResult st = run_tool("stats " + dir);
  ASSERT_EQ(st.code, 0) << st.out;
  const std::size_t header = st.out.find("values held");
  ASSERT_NE(header, std::string::npos) << st.out;
  std::istringstream row(st.out.substr(st.out.find("usertable", header)));
  std::string name;
  std::uint64_t values = 0, refs = 0;
  row >> name >> values >> refs;
  EXPECT_EQ(values + refs, 60000u) << st.out;
  std::system(("rm -rf " + dir).c_str());
  // The same through transactions (the default without a budget is this; with one, bulk).
  // The index pages under a budget by default, inner nodes too (--page-index 2); 1 pages its
  // leaves only; 0 keeps it whole in memory, beside a budget of versions.
  for (const char* level : {"", "1", "0"}) {
    const bool paged = std::string(level) != "0";
    RunResult tl =
        run("ycsb --records 40000 --value-bytes 64 --seconds 0.2 --mode interleaved "
            "--load txn --dir " +
            dir + " --memory-budget-mib 1 --json " + json +
            (*level != '\0' ? std::string(" --page-index ") + level : std::string()));
    ASSERT_EQ(tl.code, 0) << tl.out;
    EXPECT_NE(tl.out.find("load (txn)"), std::string::npos) << tl.out;
    const std::string want = std::string("\"page_index\":") + (*level != '\0' ? level : "2");
    EXPECT_NE(json_lines(json).back().find(want), std::string::npos) << want;
    // Inner nodes go only where asked (Zipf's hot leaves, scattered, may keep every one in).
    if (std::string(level) != "") {
      EXPECT_EQ(tl.out.find("inner evictions"), std::string::npos) << tl.out;
    }
    if (!paged) {
      EXPECT_EQ(tl.out.find("leaf evictions"), std::string::npos) << tl.out;
    } else {
      // The index (~1.5 MiB of nodes) is past the budget too: leaves went out and came back.
      EXPECT_NE(tl.out.find("leaf evictions"), std::string::npos) << tl.out;
      // Some stayed out: their segments outlive the run, and `braid stats` names them.
      RunResult ts = run_tool("stats " + dir);
      ASSERT_EQ(ts.code, 0) << ts.out;
      EXPECT_NE(ts.out.find("node segments: "), std::string::npos) << ts.out;
    }
    std::system(("rm -rf " + dir).c_str());
  }
  RunResult t =
      run("tpcc --warehouses 1 --items 2000 --customers 300 --seconds 0.2 --verify "
          "--json " +
          json + " --dir " + dir + " --memory-budget-mib 1");
  EXPECT_EQ(t.code, 0) << t.out;
  EXPECT_NE(t.out.find("cold misses/txn"), std::string::npos) << t.out;
  // Nine tables three times past a budget of one MiB: whole subtrees of the index go out
  // (--page-index 2, the default).
  EXPECT_NE(t.out.find("inner nodes on storage"), std::string::npos) << t.out;
  std::system(("rm -rf " + dir).c_str());
  const std::vector<std::string> lines = json_lines(json);
  for (const std::string& line : lines) {
    expect_fields(
        line,
        {"\"memory_budget_mib\":", "\"cold_reads_per_s\":", "\"io_depth\":", "\"peak_rss_mib\":"});
    if (line.find("\"ycsb\"") != std::string::npos) {
      EXPECT_NE(line.find("\"hit_ratio\":"), std::string::npos) << line;
      EXPECT_NE(line.find("\"inner_hit_ratio\":"), std::string::npos) << line;
      EXPECT_TRUE(line.find("\"load\":\"bulk\"") != std::string::npos ||
                  line.find("\"load\":\"txn\"") != std::string::npos)
          << line;
      // The data is three times the budget: some reads miss.
      EXPECT_EQ(line.find("\"cold_reads_per_s\":0,"), std::string::npos) << line;
    }
  }
  EXPECT_EQ(lines.size(), 6u);  // two modes, three paging levels, tpcc
  std::remove(json.c_str());
}

// --load existing: a second run opens the database the first left (its open is the load's
// line), runs on the same records, and refuses a directory whose table the flags do not
// describe.
TEST(BenchCli, TinyYcsbRunsAgainOnTheDatabaseAnEarlierRunLeft) {
  const std::string dir = temp_path("db-existing");
  std::system(("rm -rf " + dir).c_str());
  const auto ycsb = [&](const std::string& records, const std::string& value_bytes,
                        const std::string& more) {
    return run("ycsb --records " + records + " --value-bytes " + value_bytes +
               " --seconds 0.2 --workload c --memory-budget-mib 1 --page-index 1 --json none "
               "--dir " +
               dir + more);
  };
  RunResult first = ycsb("20000", "64", "");
  ASSERT_EQ(first.code, 0) << first.out;
  EXPECT_NE(first.out.find("load (bulk)"), std::string::npos) << first.out;
  RunResult again = ycsb("20000", "64", " --load existing");
  ASSERT_EQ(again.code, 0) << again.out;
  EXPECT_NE(again.out.find("load (existing)"), std::string::npos) << again.out;
  EXPECT_NE(again.out.find("hit ratio"), std::string::npos) << again.out;
  // The open named the records it recovered by address; a short run reads only some of them.
  EXPECT_NE(again.out.find("records named by address hold none"), std::string::npos) << again.out;
  // Flags that do not describe the table: a clear refusal, exit 1.
  const struct {
    const char* records;
    const char* value_bytes;
    const char* says;
  } refused[] = {{"20001", "64", "record 20000"},
                 {"20000", "65", "not --value-bytes 65"},
                 {"19999", "64", "more than --records"}};
  for (const auto& c : refused) {
    RunResult r = ycsb(c.records, c.value_bytes, " --load existing");
    EXPECT_EQ(r.code, 1) << r.out;
    EXPECT_NE(r.out.find(c.says), std::string::npos) << r.out;
  }
  std::system(("rm -rf " + dir).c_str());
}

// Scans over cold records with their reads issued ahead (--scan-read-ahead) and one at a time:
// both run, report it, and the run that reads ahead brings several records with each read (the
// bulk load wrote them in key order: neighbours are one extent), one at a time one each.
TEST(BenchCli, TinyColdScansReadAheadOrOneAtATime) {
  const std::string json = temp_path("scan-ahead.jsonl");
  const std::string dir = temp_path("db-scan-ahead");
  std::remove(json.c_str());
  for (const char* ahead : {"16", "0"}) {
    std::system(("rm -rf " + dir).c_str());
    RunResult r =
        run(std::string("ycsb --records 40000 --value-bytes 64 --seconds 0.3 ") +
            "--mode interleaved --batch 1 --read 0 --scan 100 --scan-length 50 --dir " + dir +
            " --memory-budget-mib 1 --scan-read-ahead " + ahead + " --json " + json);
    ASSERT_EQ(r.code, 0) << r.out;
  }
  std::system(("rm -rf " + dir).c_str());
  const std::vector<std::string> lines = json_lines(json);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[0].find("\"scan_read_ahead\":16"), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find("\"scan_read_ahead\":0"), std::string::npos) << lines[1];
  const double ahead_per_read =
      json_number(lines[0], "cold_records_per_s") / json_number(lines[0], "cold_reads_per_s");
  const double single_per_read =
      json_number(lines[1], "cold_records_per_s") / json_number(lines[1], "cold_reads_per_s");
  EXPECT_GT(ahead_per_read, 3.0) << lines[0];
  EXPECT_NEAR(single_per_read, 1.0, 0.01) << lines[1];
  EXPECT_LE(json_number(lines[1], "io_depth"), 1.01) << lines[1];
  std::remove(json.c_str());
}

// Umbra's micro-benchmarks at tiny size: q1 and q14, each with both kinds of I/O. Every row is
// read, the answers agree between sync and async (one snapshot, the same data), cold reads
// happen at the cached share asked for, and async keeps more than one read in flight.
TEST(BenchCli, TinyScanQueriesSyncAndAsync) {
  const std::string json = temp_path("scan.jsonl");
  const std::string dir = temp_path("db-scan");
  std::remove(json.c_str());
  for (const char* query : {"q1", "q14"}) {
    for (const char* io : {"sync", "async"}) {
      std::system(("rm -rf " + dir).c_str());
      RunResult r = run(std::string("scan --rows 20000 --repeat 1 --cached-pct 50 --threads 2 ") +
                        "--query " + query + " --io " + io + " --q14-days 300 --dir " + dir +
                        " --json " + json);
      ASSERT_EQ(r.code, 0) << r.out;
      EXPECT_NE(r.out.find("rows_per_s"), std::string::npos) << r.out;
    }
  }
  std::system(("rm -rf " + dir).c_str());
  const std::vector<std::string> lines = json_lines(json);
  ASSERT_EQ(lines.size(), 4u);
  for (const std::string& l : lines) {
    for (const char* field :
         {"\"query\"", "\"io\"", "\"threads\":2", "\"io_depth\"", "\"cached_pct\":50",
          "\"rows_per_s\"", "\"iops\"", "\"read_mib_per_s\""}) {
      EXPECT_NE(l.find(field), std::string::npos) << field << " in " << l;
    }
    EXPECT_EQ(json_number(l, "rows"), 20000.0) << l;
    EXPECT_GT(json_number(l, "cold_reads"), 0.0) << l;
  }
  // q1 reads about half of lineitem from storage; q14 half of its lookups.
  EXPECT_GT(json_number(lines[0], "cold_reads"), 6000.0) << lines[0];
  EXPECT_LT(json_number(lines[0], "cold_reads"), 14000.0) << lines[0];
  // The same sums, added up in another order (workers, morsels).
  for (int q : {0, 2}) {
    const double a = json_number(lines[q], "answer");
    EXPECT_GT(a, 0.0) << lines[q];
    EXPECT_NEAR(a, json_number(lines[q + 1], "answer"), 1e-6 * a) << lines[q];
  }
  EXPECT_GT(json_number(lines[2], "lookups"), 1000.0) << lines[2];
  EXPECT_EQ(json_number(lines[2], "lookups"), json_number(lines[2], "matches")) << lines[2];
  EXPECT_LE(json_number(lines[0], "mean_io_depth"), 2.05) << "two sync workers";
  // Async: q1 takes its rows from its scans' own extents (many records per read), and q14's
  // probes keep more than one read in flight per worker.
  EXPECT_GT(json_number(lines[1], "cold_reads") / json_number(lines[1], "cold_read_ios"), 20.0)
      << lines[1];
  EXPECT_GT(json_number(lines[3], "mean_io_depth"), 2.5) << lines[3];
  std::remove(json.c_str());
}

// A scan's own extents (--scan-extent-kib) against reading record by record (0): the same
// answer, and hundreds of records per storage read where loads bring a few (their neighbours in
// the read batch); the flag is reported and a bad one refused.
TEST(BenchCli, TinyScanExtentsOrRecordByRecord) {
  const std::string json = temp_path("scan-extents.jsonl");
  const std::string dir = temp_path("db-scan-extents");
  std::remove(json.c_str());
  for (const char* kib : {"128", "0"}) {
    std::system(("rm -rf " + dir).c_str());
    RunResult r =
        run(std::string("scan --rows 20000 --repeat 1 --cached-pct 0 --threads 1 ") +
            "--query q1 --io async --scan-extent-kib " + kib + " --dir " + dir + " --json " + json);
    ASSERT_EQ(r.code, 0) << r.out;
  }
  std::system(("rm -rf " + dir).c_str());
  const std::vector<std::string> lines = json_lines(json);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[0].find("\"scan_extent_kib\":128"), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find("\"scan_extent_kib\":0"), std::string::npos) << lines[1];
  const double answer = json_number(lines[0], "answer");
  EXPECT_GT(answer, 0.0) << lines[0];
  EXPECT_NEAR(answer, json_number(lines[1], "answer"), 1e-6 * answer) << lines[1];
  for (const std::string& l : lines) EXPECT_EQ(json_number(l, "cold_reads"), 20000.0) << l;
  const double extent_per_read =
      json_number(lines[0], "cold_reads") / json_number(lines[0], "cold_read_ios");
  const double load_per_read =
      json_number(lines[1], "cold_reads") / json_number(lines[1], "cold_read_ios");
  EXPECT_GT(extent_per_read, 100.0) << lines[0];
  EXPECT_LT(load_per_read, 100.0) << lines[1];
  RunResult bad = run("scan --rows 100 --scan-extent-kib 6 --dir " + dir + " --json none");
  EXPECT_NE(bad.code, 0) << bad.out;
  EXPECT_NE(bad.out.find("--scan-extent-kib"), std::string::npos) << bad.out;
  std::system(("rm -rf " + dir).c_str());
  std::remove(json.c_str());
}

TEST(BenchCli, DurableYcsbThenBraidCheckAndStats) {
  const std::string json = temp_path("durable.jsonl");
  for (const char* commit : {"durable", "async"}) {
    const std::string dir = temp_path((std::string("db-") + commit).c_str());
    std::system(("rm -rf " + dir).c_str());
    RunResult r = run("ycsb --records 2000 --seconds 0.2 --threads 2 --update 100 --dir " + dir +
                      " --commit " + commit + " --json " + json);
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find("syncs/s"), std::string::npos) << r.out;
    RunResult c = run_tool("check " + dir);
    ASSERT_EQ(c.code, 0) << c.out;
    EXPECT_NE(c.out.find("usertable"), std::string::npos) << c.out;
    EXPECT_NE(c.out.find("2000"), std::string::npos) << c.out;
    EXPECT_NE(c.out.find("invariants OK"), std::string::npos) << c.out;
    RunResult s = run_tool("stats " + dir);
    ASSERT_EQ(s.code, 0) << s.out;
    EXPECT_NE(s.out.find("checkpoint slot"), std::string::npos) << s.out;
    std::system(("rm -rf " + dir).c_str());
  }
  const std::vector<std::string> lines = json_lines(json);
  for (const std::string& line : lines) {
    expect_fields(line, {"\"commit\":", "\"log_bytes_per_s\":", "\"syncs_per_s\":",
                         "\"commit_p50_us\":", "\"commit_p99_us\":"});
  }
  EXPECT_EQ(lines.size(), 2u);
  std::remove(json.c_str());
}

// Every file of a directory and a hash of its bytes.
std::map<std::string, std::size_t> fingerprint(const std::string& dir) {
  std::map<std::string, std::size_t> out;
  DIR* d = ::opendir(dir.c_str());
  EXPECT_NE(d, nullptr) << dir;
  if (d == nullptr) return out;
  while (dirent* e = ::readdir(d)) {
    const std::string n = e->d_name;
    if (n == "." || n == "..") continue;
    std::ifstream in(dir + "/" + n, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    out[n] = std::hash<std::string>{}(ss.str());
  }
  ::closedir(d);
  return out;
}

TEST(BenchCli, BraidCheckReadsOnlyAndFailsOnDamage) {
  const std::string dir = temp_path("db-check");
  std::system(("rm -rf " + dir).c_str());
  RunResult r = run("ycsb --records 2000 --seconds 0.2 --update 100 --dir " + dir +
                    " --checkpoint-mib 0 --json " + temp_path("check.jsonl"));
  ASSERT_EQ(r.code, 0) << r.out;
  const auto before = fingerprint(dir);
  RunResult c = run_tool("check " + dir);
  ASSERT_EQ(c.code, 0) << c.out;
  EXPECT_NE(c.out.find("invariants OK"), std::string::npos) << c.out;
  EXPECT_EQ(fingerprint(dir), before) << "braid check changed the directory";

  // Damage inside the log's first block: durable commits follow it.
  std::string log;
  for (const auto& [name, h] : before) {
    if (name.rfind("log-", 0) == 0 && name.find("-0000-") != std::string::npos) log = name;
  }
  ASSERT_FALSE(log.empty());
  {
    std::fstream f(dir + "/" + log, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(4096 + 60);
    f.put('\x5a');
  }
  const auto damaged = fingerprint(dir);
  RunResult bad = run_tool("check " + dir);
  EXPECT_EQ(bad.code, 1) << bad.out;
  EXPECT_NE(bad.out.find("DAMAGED"), std::string::npos) << bad.out;
  EXPECT_NE(bad.out.find(log + " at offset 4096"), std::string::npos) << bad.out;
  EXPECT_EQ(fingerprint(dir), damaged) << "braid check changed a damaged directory";

  // repair says what it drops and writes nothing without --yes.
  RunResult dry = run_tool("repair " + dir);
  EXPECT_EQ(dry.code, 1) << dry.out;
  EXPECT_NE(dry.out.find("LOST"), std::string::npos) << dry.out;
  EXPECT_NE(dry.out.find("nothing was written"), std::string::npos) << dry.out;
  EXPECT_EQ(fingerprint(dir), damaged);
  RunResult fix = run_tool("repair --yes " + dir);
  EXPECT_EQ(fix.code, 0) << fix.out;
  EXPECT_NE(fix.out.find("repaired"), std::string::npos) << fix.out;
  RunResult after = run_tool("check " + dir);
  EXPECT_EQ(after.code, 0) << after.out;
  std::system(("rm -rf " + dir).c_str());
}

// A database mostly on storage: `braid check` reads its cold records back in file order, a
// few large reads rather than one per record, and passes.
TEST(BenchCli, BraidCheckReadsColdRecordsInFileOrder) {
  const std::string dir = temp_path("db-check-cold");
  std::system(("rm -rf " + dir).c_str());
  RunResult r =
      run("ycsb --records 30000 --value-bytes 100 --seconds 0.2 --memory-budget-mib 1 "
          "--load bulk --dir " +
          dir + " --json none");
  ASSERT_EQ(r.code, 0) << r.out;
  RunResult c = run_tool("check " + dir);
  ASSERT_EQ(c.code, 0) << c.out;
  EXPECT_NE(c.out.find("invariants OK"), std::string::npos) << c.out;
  const std::size_t at = c.out.find("cold records in file order, ");
  ASSERT_NE(at, std::string::npos) << c.out;
  const std::size_t line = c.out.rfind(": ", at);
  ASSERT_NE(line, std::string::npos);
  const unsigned long long records = std::stoull(c.out.substr(line + 2));
  const unsigned long long reads = std::stoull(c.out.substr(at + 28));
  EXPECT_GT(records, 20000u) << c.out;
  EXPECT_LT(reads * 100, records) << c.out;
  std::system(("rm -rf " + dir).c_str());
}

TEST(BenchCli, BraidToolUsageErrors) {
  EXPECT_EQ(run_tool("").code, 2);
  EXPECT_EQ(run_tool("frobnicate /tmp").code, 2);
  EXPECT_EQ(run_tool("check").code, 2);
  EXPECT_EQ(run_tool("check a b").code, 2);
  RunResult missing = run_tool("check " + temp_path("no-such-db"));
  EXPECT_EQ(missing.code, 1);
  EXPECT_NE(missing.out.find("does not exist"), std::string::npos) << missing.out;
  RunResult not_db = run_tool("stats /tmp");
  EXPECT_EQ(not_db.code, 1);
  EXPECT_NE(not_db.out.find("not a BraidDB directory"), std::string::npos) << not_db.out;
  const std::string used = temp_path("used");
  std::system(("mkdir -p " + used + " && touch " + used + "/x").c_str());
  EXPECT_EQ(run("ycsb --records 10 --seconds 0.1 --dir " + used).code, 2);
  EXPECT_EQ(run("ycsb --records 10 --seconds 0.1 --commit sometimes").code, 2);
  std::system(("rm -rf " + used).c_str());
}

}  // namespace
