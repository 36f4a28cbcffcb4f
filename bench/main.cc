// braid-bench: every experiment of the papers from one binary.
#include <cstdio>
#include <cstring>

#include "ycsb.h"

namespace {
const char* kUsage = R"(usage: braid-bench <command> [flags]

commands:
  ycsb     YCSB-style transactions (read / update / rmw / scan / insert mixes)

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
  if (std::strcmp(cmd, "ycsb") == 0) {
    for (int i = 2; i < argc; ++i) {
      if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
        std::printf("%s", braid::bench::ycsb_usage());
        return 0;
      }
    }
    return braid::bench::ycsb_main(argc, argv, 2);
  }
  std::fprintf(stderr, "braid-bench: unknown command '%s'\n\n%s", cmd, kUsage);
  return 2;
}
