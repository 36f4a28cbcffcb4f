// braid-bench churn: a constant live set, keys coming and going (churn.cc).
#pragma once

namespace braid::bench {

// Runs the sub-command; returns the process exit code (2 on a usage error).
int churn_main(int argc, char** argv, int first);
const char* churn_usage();

}  // namespace braid::bench
