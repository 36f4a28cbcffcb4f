// braid-bench contention: one hot leaf, MosaicDB §6.4 (contention.cc).
#pragma once

namespace braid::bench {

// Runs the sub-command; returns the process exit code (2 on a usage error).
int contention_main(int argc, char** argv, int first);
const char* contention_usage();

}  // namespace braid::bench
