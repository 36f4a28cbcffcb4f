// braid-bench coldmix: hot and cold tables, MosaicDB §6.2 (coldmix.cc).
#pragma once

namespace braid::bench {

// Runs the sub-command; returns the process exit code (2 on a usage error).
int coldmix_main(int argc, char** argv, int first);
const char* coldmix_usage();

}  // namespace braid::bench
