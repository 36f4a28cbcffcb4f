#include "bench_db.h"

#include <filesystem>
#include <system_error>

namespace braid::bench {

std::string configure_directory(const std::string& dir, const std::string& commit,
                                const std::string& log_sync, std::uint64_t checkpoint_mib,
                                Options* options) {
  if (dir.empty()) return "";
  std::error_code ec;
  if (std::filesystem::exists(dir, ec) && !std::filesystem::is_empty(dir, ec)) {
    return "--dir " + dir + " exists and is not empty; give a new path";
  }
  const std::filesystem::path parent = std::filesystem::path(dir).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  options->directory = dir;
  options->durability.commit = commit == "async" ? CommitMode::kAsync : CommitMode::kDurable;
  options->durability.sync = log_sync == "dsync"    ? LogSync::kDsync
                             : log_sync == "direct" ? LogSync::kDirect
                                                    : LogSync::kFdatasync;
  options->durability.checkpoint_log_bytes = checkpoint_mib << 20;
  return "";
}

}  // namespace braid::bench
