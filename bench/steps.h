// braid-bench steps: STEPS' index-fetch microbenchmark (steps.cc).
#pragma once

namespace braid::bench {

// Runs the sub-command; returns the process exit code (2 on a usage error).
int steps_main(int argc, char** argv, int first);
const char* steps_usage();

}  // namespace braid::bench
