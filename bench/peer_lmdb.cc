// LMDB behind PeerSession: a B+-tree in one memory map, one writer at a time, readers on MVCC
// snapshots without locks. A read-only transaction is one LMDB read transaction, reset and
// renewed between uses as LMDB recommends; updates are write transactions. Async commit is
// MDB_NOSYNC (the OS writes the map back later); durable commit syncs at each commit.
#include <lmdb.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <string>

#include "peer.h"

namespace braid::bench {
namespace {

Status lmdb_error(const char* what, int rc) {
  return Status::io_error(std::string("lmdb ") + what + ": " + mdb_strerror(rc));
}

MDB_val val(std::string_view s) { return {s.size(), const_cast<char*>(s.data())}; }

class LmdbSession final : public PeerSession {
 public:
  LmdbSession(MDB_env* env, MDB_dbi dbi) : env_(env), dbi_(dbi) {}
  ~LmdbSession() override {
    abort();
    if (read_ != nullptr) mdb_txn_abort(read_);
  }

  Status begin(bool read_only) override {
    if (read_only) {
      const int rc = read_ == nullptr ? mdb_txn_begin(env_, nullptr, MDB_RDONLY, &read_)
                                      : mdb_txn_renew(read_);
      if (rc != 0) return lmdb_error("read txn", rc);
      txn_ = read_;
    } else {
      if (const int rc = mdb_txn_begin(env_, nullptr, 0, &txn_); rc != 0) {
        txn_ = nullptr;
        return lmdb_error("write txn", rc);
      }
    }
    read_only_ = read_only;
    return Status::ok();
  }
  Result<std::string_view> get(std::string_view key) override {
    MDB_val k = val(key), v;
    const int rc = mdb_get(txn_, dbi_, &k, &v);
    if (rc == MDB_NOTFOUND) return Status::not_found();
    if (rc != 0) return lmdb_error("get", rc);
    return std::string_view(static_cast<const char*>(v.mv_data), v.mv_size);
  }
  Status put(std::string_view key, std::string_view value) override { return write(key, value, 0); }
  Status insert(std::string_view key, std::string_view value) override {
    return write(key, value, MDB_NOOVERWRITE);
  }
  Status scan(std::string_view from, std::size_t limit, ScanCallback callback) override {
    MDB_cursor* c = nullptr;
    if (const int rc = mdb_cursor_open(txn_, dbi_, &c); rc != 0) return lmdb_error("cursor", rc);
    MDB_val k = val(from), v;
    int rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
    for (std::size_t n = 0; rc == 0 && n < limit; ++n) {
      if (!callback({static_cast<const char*>(k.mv_data), k.mv_size},
                    {static_cast<const char*>(v.mv_data), v.mv_size})) {
        break;
      }
      rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
    }
    mdb_cursor_close(c);
    return rc == 0 || rc == MDB_NOTFOUND ? Status::ok() : lmdb_error("scan", rc);
  }
  Status commit() override {
    if (read_only_) {
      mdb_txn_reset(read_);
      txn_ = nullptr;
      return Status::ok();
    }
    const int rc = mdb_txn_commit(txn_);
    txn_ = nullptr;
    return rc == 0 ? Status::ok() : lmdb_error("commit", rc);
  }
  void abort() override {
    if (txn_ == nullptr) return;
    if (read_only_) {
      mdb_txn_reset(read_);
    } else {
      mdb_txn_abort(txn_);
    }
    txn_ = nullptr;
  }

 private:
  Status write(std::string_view key, std::string_view value, unsigned flags) {
    MDB_val k = val(key), v = val(value);
    const int rc = mdb_put(txn_, dbi_, &k, &v, flags);
    if (rc == MDB_KEYEXIST) return Status(Code::kDuplicate);
    return rc == 0 ? Status::ok() : lmdb_error("put", rc);
  }

  MDB_env* env_;
  MDB_dbi dbi_;
  MDB_txn* read_ = nullptr;  // kept for renewal
  MDB_txn* txn_ = nullptr;
  bool read_only_ = false;
};

class Lmdb final : public PeerEngine {
 public:
  ~Lmdb() override {
    if (env_ != nullptr) mdb_env_close(env_);
  }
  Status open(const PeerConfig& c) {
    std::error_code ec;
    std::filesystem::create_directories(c.dir, ec);
    if (ec) return Status::io_error("cannot create " + c.dir + ": " + ec.message());
    if (int rc = mdb_env_create(&env_); rc != 0) return lmdb_error("env", rc);
    // Room for the records and the tree's overhead several times over; the map is sparse.
    const std::uint64_t need = c.records * (c.key_bytes + c.value_bytes + 64) * 4;
    const std::uint64_t map = std::max<std::uint64_t>(need, std::uint64_t{1} << 30);
    if (int rc = mdb_env_set_mapsize(env_, map); rc != 0) return lmdb_error("mapsize", rc);
    if (int rc = mdb_env_set_maxreaders(env_, 1024); rc != 0) return lmdb_error("maxreaders", rc);
    // NOTLS: a read transaction belongs to its session, not to the thread's TLS slot.
    const unsigned flags = MDB_NOTLS | MDB_NORDAHEAD | (c.durable ? 0u : MDB_NOSYNC);
    if (int rc = mdb_env_open(env_, c.dir.c_str(), flags, 0644); rc != 0) {
      return lmdb_error(("open " + c.dir).c_str(), rc);
    }
    MDB_txn* txn = nullptr;
    if (int rc = mdb_txn_begin(env_, nullptr, 0, &txn); rc != 0) return lmdb_error("txn", rc);
    if (int rc = mdb_dbi_open(txn, nullptr, 0, &dbi_); rc != 0) {
      mdb_txn_abort(txn);
      return lmdb_error("dbi", rc);
    }
    if (int rc = mdb_txn_commit(txn); rc != 0) return lmdb_error("commit", rc);
    return Status::ok();
  }
  std::string name() const override { return "lmdb"; }
  std::string version() const override {
    int major = 0, minor = 0, patch = 0;
    mdb_version(&major, &minor, &patch);
    return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
  }
  std::unique_ptr<PeerSession> session() override {
    return std::make_unique<LmdbSession>(env_, dbi_);
  }
  Status settle() override {
    const int rc = mdb_env_sync(env_, 1);
    return rc == 0 ? Status::ok() : lmdb_error("sync", rc);
  }

 private:
  MDB_env* env_ = nullptr;
  MDB_dbi dbi_ = 0;
};

}  // namespace

Result<std::unique_ptr<PeerEngine>> open_lmdb(const PeerConfig& config) {
  auto e = std::make_unique<Lmdb>();
  if (Status s = e->open(config); !s.is_ok()) return s;
  return std::unique_ptr<PeerEngine>(std::move(e));
}

}  // namespace braid::bench
