#include "peer.h"

namespace braid::bench {

std::vector<std::string> built_peers() {
  std::vector<std::string> out;
#ifdef BRAID_HAVE_LMDB
  out.push_back("lmdb");
#endif
#ifdef BRAID_HAVE_ROCKSDB
  out.push_back("rocksdb");
#endif
  return out;
}

Result<std::unique_ptr<PeerEngine>> open_peer(const std::string& engine, const PeerConfig& config) {
  if (engine == "lmdb") {
#ifdef BRAID_HAVE_LMDB
    return open_lmdb(config);
#else
    return Status::not_found(
        "this braid-bench was built without LMDB (install liblmdb-dev: "
        "scripts/install-deps.sh, then reconfigure)");
#endif
  }
  if (engine == "rocksdb") {
#ifdef BRAID_HAVE_ROCKSDB
    return open_rocksdb(config);
#else
    return Status::not_found(
        "this braid-bench was built without RocksDB (install "
        "librocksdb-dev: scripts/install-deps.sh, then reconfigure)");
#endif
  }
  return Status::invalid_argument("no peer engine '" + engine + "' (lmdb, rocksdb)");
}

}  // namespace braid::bench
