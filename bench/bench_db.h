// Database options shared by the sub-commands that run the engine (ycsb, tpcc).
#pragma once

#include <braid/options.h>

#include <cstdint>
#include <string>

namespace braid::bench {

// --dir / --commit / --log-sync / --checkpoint-mib: a fresh database directory (an existing one
// would already hold the benchmark's keys; its parents are created). Returns an error message
// for the usage text, or "" after filling `options`.
std::string configure_directory(const std::string& dir, const std::string& commit,
                                const std::string& log_sync, std::uint64_t checkpoint_mib,
                                Options* options);

}  // namespace braid::bench
