#include "storage/sim_fs.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "util/assert.h"

namespace braid::storage {

namespace {
constexpr std::size_t kSector = 512;
Status sim_error(const std::string& what, int err) {
  return Status::io_error("sim: " + what + ": " + std::strerror(err));
}
}  // namespace

class SimQueue final : public IoQueue {
 public:
  SimQueue(SimFileSystem* fs, std::uint64_t seed, std::uint32_t depth, std::uint32_t latency)
      : fs_(fs), rng_(seed), depth_(depth), latency_(latency) {}
  Status submit(const IoRequest& r) override {
    if (items_.size() >= depth_) return Status::io_error("sim: I/O queue full");
    items_.push_back({r, tick_ + rng_.uniform(latency_ + 1)});
    return Status::ok();
  }
  std::size_t poll(IoCompletion* out, std::size_t max, bool wait) override {
    if (fs_->io_held()) {
      // A waiting caller sees a wait that timed out: it must go round its loop again.
      if (wait) std::this_thread::sleep_for(std::chrono::microseconds(100));
      return 0;
    }
    ++tick_;
    if (wait && !items_.empty()) {
      std::uint64_t first = items_[0].ready;
      for (const Item& it : items_) first = std::min(first, it.ready);
      tick_ = std::max(tick_, first);
    }
    std::vector<std::size_t> ready;
    for (std::size_t i = 0; i < items_.size(); ++i) {
      if (items_[i].ready <= tick_) ready.push_back(i);
    }
    // Seeded completion order among the requests that are ready.
    for (std::size_t i = ready.size(); i > 1; --i) std::swap(ready[i - 1], ready[rng_.uniform(i)]);
    if (ready.size() > max) ready.resize(max);
    std::size_t n = 0;
    for (std::size_t i : ready) out[n++] = {items_[i].r.user, fs_->execute(items_[i].r)};
    std::sort(ready.begin(), ready.end());
    for (auto it = ready.rbegin(); it != ready.rend(); ++it) {
      items_.erase(items_.begin() + static_cast<std::ptrdiff_t>(*it));
    }
    return n;
  }
  std::uint32_t in_flight() const override { return static_cast<std::uint32_t>(items_.size()); }

 private:
  struct Item {
    IoRequest r;
    std::uint64_t ready;
  };
  SimFileSystem* fs_;
  util::Rng rng_;
  std::uint32_t depth_;
  std::uint32_t latency_;
  std::uint64_t tick_ = 0;
  std::vector<Item> items_;
};

SimFileSystem::SimFileSystem(std::uint64_t seed, std::uint32_t max_latency_polls)
    : rng_(seed), max_latency_(max_latency_polls) {}

void SimFileSystem::inject(Fault fault, std::uint64_t nth, bool forever) {
  std::lock_guard<std::mutex> g(mu_);
  fault_ = fault;
  fault_nth_ = nth;
  fault_forever_ = forever;
  writes_seen_ = 0;
  reads_seen_ = 0;
  syncs_seen_ = 0;
}

void SimFileSystem::fault_only(std::string part) {
  std::lock_guard<std::mutex> g(mu_);
  fault_only_ = std::move(part);
}

void SimFileSystem::crash_after(std::uint64_t k) {
  std::lock_guard<std::mutex> g(mu_);
  crash_at_ = k == 0 ? 0 : ops_ + k;
}
bool SimFileSystem::crashed() const {
  std::lock_guard<std::mutex> g(mu_);
  return crashed_;
}
std::uint64_t SimFileSystem::ops() const {
  std::lock_guard<std::mutex> g(mu_);
  return ops_;
}
std::uint64_t SimFileSystem::faults_fired() const {
  std::lock_guard<std::mutex> g(mu_);
  return faults_fired_;
}

bool SimFileSystem::begin_op(Kind kind, int inode, int* err, std::size_t* short_len,
                             std::size_t len) {
  if (crashed_) {
    *err = EIO;
    return false;
  }
  const bool chosen =
      fault_only_.empty() || (inode >= 0 && inodes_[static_cast<std::size_t>(inode)].name.find(
                                                fault_only_) != std::string::npos);
  auto fires = [&](std::uint64_t seen) {
    return seen == fault_nth_ || (fault_forever_ && seen > fault_nth_);
  };
  if (kind == Kind::kWrite && chosen &&
      (fault_ == Fault::kEio || fault_ == Fault::kEnospc || fault_ == Fault::kShortWrite)) {
    if (fires(++writes_seen_)) {
      ++faults_fired_;
      if (fault_ == Fault::kShortWrite) {
        // Half, at a sector boundary when there is one; a single byte goes whole.
        const std::size_t n = len / 2 / kSector * kSector;
        *short_len = n != 0 ? n : (len > 1 ? len / 2 : len);
      } else {
        *err = fault_ == Fault::kEnospc ? ENOSPC : EIO;
        return false;
      }
    }
  }
  if (kind == Kind::kRead) {
    // A read changes nothing, so it does not count toward crash_after (end_op is not called).
    if (chosen && fault_ == Fault::kReadEio && fires(++reads_seen_)) {
      ++faults_fired_;
      *err = EIO;
      return false;
    }
    return true;
  }
  if (kind == Kind::kSync && fault_ == Fault::kSyncEio && fires(++syncs_seen_)) {
    ++faults_fired_;
    *err = EIO;
    return false;
  }
  return true;
}

Status SimFileSystem::meta_op(const std::string& what) {
  int err = 0;
  std::size_t unused = 0;
  return begin_op(Kind::kMeta, -1, &err, &unused, 0) ? Status::ok() : sim_error(what, err);
}

void SimFileSystem::end_op() {
  ++ops_;
  if (crash_at_ != 0 && ops_ >= crash_at_) crashed_ = true;
}

std::string SimFileSystem::parent(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

int SimFileSystem::inode_of(FileId f) const {
  if (f < 0 || static_cast<std::size_t>(f) >= fds_.size()) return -1;
  return fds_[static_cast<std::size_t>(f)];
}

std::int64_t SimFileSystem::do_write(int ino, std::uint64_t offset, const char* data,
                                     std::size_t len) {
  int err = 0;
  std::size_t short_len = len;
  if (!begin_op(Kind::kWrite, ino, &err, &short_len, len)) return -err;
  Inode& f = inodes_[static_cast<std::size_t>(ino)];
  if (f.current.size() < offset + short_len) f.current.resize(offset + short_len, '\0');
  std::memcpy(f.current.data() + offset, data, short_len);
  f.pending.push_back({false, offset, std::string(data, short_len)});
  end_op();
  return static_cast<std::int64_t>(short_len);
}

std::int64_t SimFileSystem::do_sync(int ino) {
  int err = 0;
  std::size_t unused = 0;
  Inode& f = inodes_[static_cast<std::size_t>(ino)];
  if (!begin_op(Kind::kSync, -1, &err, &unused, 0)) {
    // The kernel drops the dirty pages after reporting a writeback error: they are not
    // durable, and a later sync will not write them.
    if (!crashed_) f.pending.clear();
    return -err;
  }
  // The unsynced writes, applied in order, become durable: the cost of a sync is what it
  // writes, not the file's size. Writes dropped by an earlier failed sync stay lost here, as
  // on Linux, though reads still return them.
  for (const Pending& p : f.pending) {
    if (p.truncate) {
      f.durable.resize(p.offset, '\0');
      continue;
    }
    if (f.durable.size() < p.offset + p.data.size()) {
      f.durable.resize(p.offset + p.data.size(), '\0');
    }
    std::memcpy(f.durable.data() + p.offset, p.data.data(), p.data.size());
  }
  f.pending.clear();
  end_op();
  return 0;
}

std::int64_t SimFileSystem::do_read(int ino, std::uint64_t offset, char* out, std::size_t len) {
  int err = 0;
  std::size_t unused = 0;
  if (!begin_op(Kind::kRead, ino, &err, &unused, len)) return -err;
  const std::string& img = inodes_[static_cast<std::size_t>(ino)].current;
  const std::size_t got =
      offset >= img.size() ? 0 : std::min<std::size_t>(len, img.size() - offset);
  if (got != 0) std::memcpy(out, img.data() + offset, got);
  return static_cast<std::int64_t>(got);
}

std::int64_t SimFileSystem::execute(const IoRequest& r) {
  std::lock_guard<std::mutex> g(mu_);
  const int ino = inode_of(r.file);
  if (ino < 0) return -EBADF;
  using Op = IoRequest::Op;
  if (r.op == Op::kSync) return do_sync(ino);
  if (r.op == Op::kRead) return do_read(ino, r.offset, r.out, r.len);
  const std::int64_t n = do_write(ino, r.offset, r.data, r.len);
  if (n < 0 || r.op == Op::kWrite) return n;
  if (static_cast<std::uint32_t>(n) < r.len) return n;  // short: the sync is not reached
  const std::int64_t s = do_sync(ino);
  return s < 0 ? s : n;
}

std::unique_ptr<SimFileSystem> SimFileSystem::clone(std::uint64_t seed) const {
  std::lock_guard<std::mutex> g(mu_);
  auto c = std::make_unique<SimFileSystem>(seed, max_latency_);
  // Only files with a name, durable or not, carry over: a removed file's bytes are unreachable
  // once open files are forgotten, and the crash tests clone after every crash point.
  std::vector<bool> named(inodes_.size(), false);
  for (const auto& [name, ino] : names_) named[static_cast<std::size_t>(ino)] = true;
  for (const auto& [name, ino] : durable_names_) named[static_cast<std::size_t>(ino)] = true;
  c->inodes_.resize(inodes_.size());
  for (std::size_t i = 0; i < inodes_.size(); ++i) {
    if (named[i]) c->inodes_[i] = inodes_[i];
  }
  c->names_ = names_;
  c->durable_names_ = durable_names_;
  c->dirs_ = dirs_;
  return c;
}

void SimFileSystem::power_loss(Damage damage, std::uint64_t seed) {
  std::lock_guard<std::mutex> g(mu_);
  util::Rng rng(seed);
  for (Inode& f : inodes_) {
    std::string img = std::move(f.durable);
    for (const Pending& p : f.pending) {
      Damage d = damage;
      if (d == Damage::kRandom) d = static_cast<Damage>(rng.uniform(4));
      if (p.truncate) {
        if (d != Damage::kDropAll) img.resize(p.offset, '\0');
        continue;
      }
      std::string data = p.data;
      switch (d) {
        case Damage::kDropAll:
          continue;
        case Damage::kPersistAll:
          break;
        case Damage::kTear: {
          const std::size_t sectors = data.size() / kSector;
          data.resize(sectors == 0 ? 0 : rng.uniform(sectors) * kSector);
          break;
        }
        case Damage::kCorrupt: {
          const std::size_t sectors = (data.size() + kSector - 1) / kSector;
          const std::size_t at = rng.uniform(sectors) * kSector;
          for (std::size_t i = at; i < std::min(data.size(), at + kSector); ++i) {
            data[i] = static_cast<char>(rng.next());
          }
          break;
        }
        case Damage::kRandom:
          break;
      }
      if (img.size() < p.offset + data.size()) img.resize(p.offset + data.size(), '\0');
      std::memcpy(img.data() + p.offset, data.data(), data.size());
    }
    f.current = img;
    f.durable = std::move(img);
    f.pending.clear();
  }
  names_ = durable_names_;
  std::fill(fds_.begin(), fds_.end(), -1);
  crashed_ = false;
  crash_at_ = 0;
  fault_ = Fault::kNone;
  fault_only_.clear();
}

bool SimFileSystem::peek(const std::string& path, std::string* out) const {
  std::lock_guard<std::mutex> g(mu_);
  auto it = names_.find(path);
  if (it == names_.end()) return false;
  *out = inodes_[static_cast<std::size_t>(it->second)].current;
  return true;
}

void SimFileSystem::poke(const std::string& path, std::uint64_t offset, const std::string& bytes,
                         bool create) {
  std::lock_guard<std::mutex> g(mu_);
  auto it = names_.find(path);
  int ino;
  if (it == names_.end()) {
    if (!create) return;
    ino = static_cast<int>(inodes_.size());
    inodes_.emplace_back();
    names_[path] = ino;
    durable_names_[path] = ino;
  } else {
    ino = it->second;
  }
  Inode& f = inodes_[static_cast<std::size_t>(ino)];
  for (std::string* img : {&f.current, &f.durable}) {
    if (img->size() < offset + bytes.size()) img->resize(offset + bytes.size(), '\0');
    std::memcpy(img->data() + offset, bytes.data(), bytes.size());
  }
}

Status SimFileSystem::open_dir(const std::string& dir, bool create) {
  std::lock_guard<std::mutex> g(mu_);
  if (dirs_.count(dir) != 0) return Status::ok();
  if (names_.count(dir) != 0) return Status::io_error("sim: '" + dir + "' is a file");
  if (!create) {
    return Status::io_error("database directory '" + dir +
                            "' does not exist (Options::create_if_missing is false)");
  }
  if (crashed_) return sim_error("mkdir " + dir, EIO);
  dirs_[dir] = true;
  return Status::ok();
}

Status SimFileSystem::lock_dir(const std::string&, bool) { return Status::ok(); }

Status SimFileSystem::list(const std::string& dir, std::vector<std::string>* names) {
  std::lock_guard<std::mutex> g(mu_);
  names->clear();
  if (dirs_.count(dir) == 0) return sim_error("list " + dir, ENOENT);
  for (const auto& [path, ino] : names_) {
    if (parent(path) == dir) names->push_back(path.substr(dir.size() + 1));
  }
  return Status::ok();
}

Status SimFileSystem::sync_dir(const std::string& dir) {
  std::lock_guard<std::mutex> g(mu_);
  if (Status s = meta_op("sync_dir " + dir); !s.is_ok()) return s;
  for (auto it = durable_names_.begin(); it != durable_names_.end();) {
    it = parent(it->first) == dir && names_.count(it->first) == 0 ? durable_names_.erase(it)
                                                                  : std::next(it);
  }
  for (const auto& [path, ino] : names_) {
    if (parent(path) == dir) durable_names_[path] = ino;
  }
  free_unreachable();
  end_op();
  return Status::ok();
}

Status SimFileSystem::rename(const std::string& from, const std::string& to) {
  std::lock_guard<std::mutex> g(mu_);
  auto it = names_.find(from);
  if (it == names_.end()) return sim_error("rename " + from, ENOENT);
  if (Status s = meta_op("rename " + from); !s.is_ok()) return s;
  const int ino = it->second;
  names_.erase(it);
  names_[to] = ino;
  end_op();
  return Status::ok();
}

Status SimFileSystem::remove(const std::string& path) {
  std::lock_guard<std::mutex> g(mu_);
  auto it = names_.find(path);
  if (it == names_.end()) return sim_error("remove " + path, ENOENT);
  if (Status s = meta_op("remove " + path); !s.is_ok()) return s;
  names_.erase(it);
  end_op();
  return Status::ok();
}

Result<FileId> SimFileSystem::open(const std::string& path, const OpenOptions& o) {
  std::lock_guard<std::mutex> g(mu_);
  if (dirs_.count(parent(path)) == 0) return sim_error("open " + path, ENOENT);
  auto it = names_.find(path);
  int ino;
  if (it == names_.end()) {
    if (!o.create) return sim_error("open " + path, ENOENT);
    if (Status s = meta_op("create " + path); !s.is_ok()) return s;
    ino = static_cast<int>(inodes_.size());
    inodes_.emplace_back();
    inodes_.back().name = path;
    names_[path] = ino;
    end_op();
  } else {
    ino = it->second;
  }
  fds_.push_back(ino);
  return static_cast<FileId>(fds_.size() - 1);
}

void SimFileSystem::free_unreachable() {
  std::vector<bool> reachable(inodes_.size(), false);
  for (const auto& [name, ino] : names_) reachable[static_cast<std::size_t>(ino)] = true;
  for (const auto& [name, ino] : durable_names_) reachable[static_cast<std::size_t>(ino)] = true;
  for (const int ino : fds_) {
    if (ino >= 0) reachable[static_cast<std::size_t>(ino)] = true;
  }
  for (std::size_t i = 0; i < inodes_.size(); ++i) {
    if (!reachable[i]) inodes_[i] = Inode{};
  }
}

void SimFileSystem::close(FileId f) {
  std::lock_guard<std::mutex> g(mu_);
  if (inode_of(f) >= 0) fds_[static_cast<std::size_t>(f)] = -1;
}

Result<std::uint64_t> SimFileSystem::size(FileId f) {
  std::lock_guard<std::mutex> g(mu_);
  const int ino = inode_of(f);
  if (ino < 0) return sim_error("size", EBADF);
  return static_cast<std::uint64_t>(inodes_[static_cast<std::size_t>(ino)].current.size());
}

Status SimFileSystem::read(FileId f, std::uint64_t offset, std::size_t len, char* out,
                           std::size_t* got) {
  std::lock_guard<std::mutex> g(mu_);
  const int ino = inode_of(f);
  if (ino < 0) return sim_error("read", EBADF);
  *got = 0;
  const std::int64_t n = do_read(ino, offset, out, len);
  if (n < 0) return sim_error("read", static_cast<int>(-n));
  *got = static_cast<std::size_t>(n);
  return Status::ok();
}

Status SimFileSystem::write(FileId f, std::uint64_t offset, const char* data, std::size_t len) {
  std::lock_guard<std::mutex> g(mu_);
  const int ino = inode_of(f);
  if (ino < 0) return sim_error("write", EBADF);
  std::size_t done = 0;
  while (done < len) {
    const std::int64_t n = do_write(ino, offset + done, data + done, len - done);
    if (n < 0) return sim_error("write", static_cast<int>(-n));
    done += static_cast<std::size_t>(n);
  }
  return Status::ok();
}

Status SimFileSystem::sync(FileId f) {
  std::lock_guard<std::mutex> g(mu_);
  const int ino = inode_of(f);
  if (ino < 0) return sim_error("sync", EBADF);
  const std::int64_t r = do_sync(ino);
  return r < 0 ? sim_error("sync", static_cast<int>(-r)) : Status::ok();
}

Status SimFileSystem::truncate(FileId f, std::uint64_t size) {
  std::lock_guard<std::mutex> g(mu_);
  const int ino = inode_of(f);
  if (ino < 0) return sim_error("truncate", EBADF);
  if (Status s = meta_op("truncate"); !s.is_ok()) return s;
  Inode& in = inodes_[static_cast<std::size_t>(ino)];
  in.current.resize(size, '\0');
  in.pending.push_back({true, size, {}});
  end_op();
  return Status::ok();
}

Result<std::unique_ptr<IoQueue>> SimFileSystem::make_queue(std::uint32_t depth) {
  std::lock_guard<std::mutex> g(mu_);
  const std::uint64_t seed = rng_.next() ^ ++queues_;
  return std::unique_ptr<IoQueue>(new SimQueue(this, seed, depth, max_latency_));
}

}  // namespace braid::storage
