// What every braid-bench sub-command does around its own work, written once (bench/main.cc
// dispatches to the sub-commands' mains).
#pragma once

#include <braid/status.h>

#include <cstdint>
#include <string>

namespace braid::bench {

// A flag that did not parse: the message, then the command's usage, on stderr. Answers the
// exit code, 2.
int usage_error(const char* command, const std::string& error, const char* usage);

// A run's end: some failed transactions (or operations) make it exit 1, naming how many and
// the first; 0 otherwise.
int run_exit(std::uint64_t failed, const std::string& first_error,
             const char* what = "transactions");

// The outcomes of a generator's transactions (TxnGenerator::finished): commits, aborts
// (Conflict: first-updater-wins or SSN), and errors, the first of them kept for run_exit.
struct Outcomes {
  std::uint64_t commits = 0, aborts = 0, errors = 0;
  std::string first_error;
  void count(const Status& s);
};

// The process's peak resident memory in MiB, which every run prints.
double peak_rss_mib();

}  // namespace braid::bench
