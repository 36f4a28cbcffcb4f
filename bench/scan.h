// braid-bench scan: analytics over cold data, Umbra §3 (scan.cc).
#pragma once

namespace braid::bench {

// Runs the sub-command; returns the process exit code (2 on a usage error).
int scan_main(int argc, char** argv, int first);
const char* scan_usage();

}  // namespace braid::bench
