// The real file system: syscalls for metadata, io_uring (or synchronous calls) for the queues.
#include <dirent.h>
#include <fcntl.h>
#include <liburing.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>

#include "storage/file_system.h"
#include "util/assert.h"

namespace braid::storage {

namespace {

Status errno_status(const std::string& what, const std::string& path, int err) {
  return Status::io_error(what + " '" + path + "': " + std::strerror(err));
}

std::string dir_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash == 0 ? 1 : slash);
}

// Synchronous execution of one request: the fallback queue and the io_uring short-write path
// share it.
std::int64_t execute(const IoRequest& r) {
  using Op = IoRequest::Op;
  if (r.op == Op::kSync) return ::fdatasync(r.file) == 0 ? 0 : -errno;
  if (r.op == Op::kRead) {
    const ssize_t n = ::pread(r.file, r.out, r.len, static_cast<off_t>(r.offset));
    return n < 0 ? -errno : n;
  }
  ssize_t n;
  if (r.op == Op::kWriteDsync) {
    const iovec iov{const_cast<char*>(r.data), r.len};
    n = ::pwritev2(r.file, &iov, 1, static_cast<off_t>(r.offset), RWF_DSYNC);
  } else {
    n = ::pwrite(r.file, r.data, r.len, static_cast<off_t>(r.offset));
  }
  if (n < 0) return -errno;
  if (r.op == Op::kWriteThenSync && static_cast<std::uint32_t>(n) == r.len &&
      ::fdatasync(r.file) != 0) {
    return -errno;
  }
  return n;
}

class SyncQueue final : public IoQueue {
 public:
  explicit SyncQueue(std::uint32_t depth) : depth_(depth) {}
  Status submit(const IoRequest& r) override {
    if (done_.size() >= depth_) return Status::io_error("I/O queue full");
    done_.push_back({r.user, execute(r)});
    return Status::ok();
  }
  std::size_t poll(IoCompletion* out, std::size_t max, bool) override {
    std::size_t n = 0;
    while (n < max && !done_.empty()) {
      out[n++] = done_.front();
      done_.pop_front();
    }
    return n;
  }
  std::uint32_t in_flight() const override { return static_cast<std::uint32_t>(done_.size()); }

 private:
  std::uint32_t depth_;
  std::deque<IoCompletion> done_;
};

// io_uring: a write followed by a linked fdatasync is one logical request whose completion is
// the sync's (the write's own CQE is suppressed unless it fails).
class UringQueue final : public IoQueue {
 public:
  // `attach_to`: the ring fd of the file system's polling anchor (SubmitPoll), or -1.
  static Result<std::unique_ptr<IoQueue>> make(std::uint32_t depth, int attach_to) {
    auto q = std::unique_ptr<UringQueue>(new UringQueue());
    const std::uint32_t entries = std::max<std::uint32_t>(2 * depth, 8);
    int e;
    if (attach_to >= 0) {
      // The anchor's kernel thread polls this ring too (one thread per file system, however
      // many queues). Completions are posted from the device's interrupt; nothing to defer.
      io_uring_params p{};
      p.flags = IORING_SETUP_SQPOLL | IORING_SETUP_ATTACH_WQ;
      p.wq_fd = static_cast<std::uint32_t>(attach_to);
      e = io_uring_queue_init_params(entries, &q->ring_, &p);
      if (e < 0) {
        return Status::io_error(std::string("io_uring_queue_init (SQPOLL, attached): ") +
                                std::strerror(-e));
      }
    } else {
      // Completions are posted when the owner next enters the kernel (its polls do: the
      // TASKRUN flag tells liburing's peek to), not by interrupting it with an IPI. The worker
      // polls every loop anyway, and an interrupt per completion costs the cold path more than
      // it saves. Kernels before 5.19
      // refuse the flags: the default then.
      e = io_uring_queue_init(entries, &q->ring_,
                              IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG);
      if (e == -EINVAL) e = io_uring_queue_init(entries, &q->ring_, 0);
    }
    if (e < 0) return Status::io_error(std::string("io_uring_queue_init: ") + std::strerror(-e));
    q->ready_ = true;
    q->depth_ = depth;
    return std::unique_ptr<IoQueue>(std::move(q));
  }
  ~UringQueue() override {
    if (!ready_) return;
    // Drain what is in flight: buffers named by those requests belong to the caller, who is
    // going away after us.
    while (in_flight() > 0) {
      IoCompletion c[16];
      (void)poll(c, 16, true);  // a timed-out wait answers nothing: wait again
    }
    io_uring_queue_exit(&ring_);
  }

  void defer_submissions() override { deferred_ = true; }

  Status flush() override {
    if (io_uring_sq_ready(&ring_) == 0) return Status::ok();
    const int e = io_uring_submit(&ring_);
    // Whatever the kernel did not take stays queued for the next flush: a transient refusal
    // (a full completion queue, no memory for a moment) is not the requests' failure.
    if (e >= 0 || e == -EAGAIN || e == -EBUSY || e == -EINTR) return Status::ok();
    broken_ = true;  // as a failed wait: its requests will never be reported
    return Status::io_error(std::string("io_uring_submit: ") + std::strerror(-e));
  }

  Status submit(const IoRequest& r) override {
    if (in_flight_ >= depth_) return Status::io_error("I/O queue full");
    using Op = IoRequest::Op;
    // A write and its sync take two entries; the ring has room for twice the depth, so the
    // entries a deferred queue holds never run out.
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    if (sqe == nullptr) return Status::io_error("io_uring submission queue full");
    if (r.op == Op::kSync) {
      io_uring_prep_fsync(sqe, r.file, IORING_FSYNC_DATASYNC);
    } else if (r.op == Op::kRead && r.fixed_buffer >= 0) {
      BRAID_DASSERT(r.fixed_buffer < fixed_count_);
      BRAID_DASSERT(r.out >= fixed_[r.fixed_buffer].base);
      BRAID_DASSERT(r.out + r.len <= fixed_[r.fixed_buffer].base + fixed_[r.fixed_buffer].len);
      io_uring_prep_read_fixed(sqe, r.file, r.out, r.len, r.offset, r.fixed_buffer);
    } else if (r.op == Op::kRead) {
      io_uring_prep_read(sqe, r.file, r.out, r.len, r.offset);
    } else {
      io_uring_prep_write(sqe, r.file, r.data, r.len, r.offset);
      if (r.op == Op::kWriteDsync) sqe->rw_flags = RWF_DSYNC;
    }
    io_uring_sqe_set_data64(sqe, r.user << 1);
    if (r.op == Op::kWriteThenSync) {
      // The write's CQE is tagged odd so poll() can tell it from the sync's.
      io_uring_sqe_set_data64(sqe, (r.user << 1) | 1);
      sqe->flags |= IOSQE_IO_LINK;
      io_uring_sqe* s2 = io_uring_get_sqe(&ring_);
      if (s2 == nullptr) {
        return Status::io_error("io_uring submission queue full");
      }
      io_uring_prep_fsync(s2, r.file, IORING_FSYNC_DATASYNC);
      io_uring_sqe_set_data64(s2, r.user << 1);
      pending_writes_.push_back({r.user, 0});
    }
    if (!deferred_) {
      const int e = io_uring_submit(&ring_);
      if (e < 0) return Status::io_error(std::string("io_uring_submit: ") + std::strerror(-e));
    }
    ++in_flight_;
    return Status::ok();
  }

  std::int32_t register_buffer(char* base, std::size_t len) override {
    if (table_ == Table::kNone) {
      // A sparse table (Linux 5.19) takes its blocks one at a time, as their owners allocate
      // them; an older kernel registers one block for good, and later ones read as before.
      if (io_uring_register_buffers_sparse(&ring_, kMaxFixed) == 0) {
        table_ = Table::kSparse;
      } else {
        iovec v{base, len};
        if (io_uring_register_buffers(&ring_, &v, 1) < 0) return -1;
        table_ = Table::kOne;
        fixed_[0] = {base, len};
        fixed_count_ = 1;
        return 0;
      }
    }
    if (table_ == Table::kOne || fixed_count_ == kMaxFixed) return -1;
    iovec v{base, len};
    // Refused (the locked-memory limit counts each block): the block's reads go as before.
    if (io_uring_register_buffers_update_tag(&ring_, static_cast<unsigned>(fixed_count_), &v,
                                             nullptr, 1) < 1) {
      return -1;
    }
    fixed_[fixed_count_] = {base, len};
    return fixed_count_++;
  }

  void unregister_buffers() override {
    if (table_ == Table::kNone) return;
    (void)io_uring_unregister_buffers(&ring_);
    table_ = Table::kNone;
    fixed_count_ = 0;
  }

  std::size_t poll(IoCompletion* out, std::size_t max, bool wait) override {
    // The queued requests go first (their kernel entry also runs the completions' task work).
    if (deferred_) (void)flush();
    std::size_t n = 0;
    while (n < max && in_flight() > 0) {
      io_uring_cqe* cqe = nullptr;
      int e = 0;
      if (wait && n == 0) {
        // Bounded, so a waiter turns at least this often and can tell a stalled device
        // (util/stall.h) instead of sleeping in the kernel for good.
        __kernel_timespec ts{0, kWaitSliceNs};
        e = io_uring_wait_cqe_timeout(&ring_, &cqe, &ts);
        if (e == -ETIME) break;
      } else {
        e = io_uring_peek_cqe(&ring_, &cqe);
      }
      if (e == -EINTR) continue;
      if (e == -EAGAIN) break;  // peek: nothing there
      if (e < 0) {
        // The ring itself failed: its requests will never be reported, so it stops counting
        // them (nobody waits on them for good; their buffers are the kernel's until exit).
        broken_ = true;
        break;
      }
      if (cqe == nullptr) break;
      const std::uint64_t tag = io_uring_cqe_get_data64(cqe);
      const std::int64_t res = cqe->res;
      io_uring_cqe_seen(&ring_, cqe);
      const std::uint64_t user = tag >> 1;
      if ((tag & 1) != 0) {
        // The write half of a write+sync: remember its byte count (a short write makes the
        // linked sync fail with ECANCELED).
        for (auto& p : pending_writes_) {
          if (p.user == user) p.result = res;
        }
        continue;
      }
      std::int64_t result = res;
      for (auto it = pending_writes_.begin(); it != pending_writes_.end(); ++it) {
        if (it->user != user) continue;
        // The sync's completion: report the write's byte count, or its error.
        if (it->result < 0 || res == -ECANCELED) {
          result = it->result != 0 ? it->result : -EIO;
        } else if (res >= 0) {
          result = it->result;
        }
        pending_writes_.erase(it);
        break;
      }
      --in_flight_;
      out[n++] = {user, result};
    }
    return n;
  }
  std::uint32_t in_flight() const override { return broken_ ? 0 : in_flight_; }

 private:
  static constexpr long kWaitSliceNs = 100'000'000;
  UringQueue() = default;
  bool broken_ = false;
  bool deferred_ = false;
  io_uring ring_{};
  bool ready_ = false;
  std::uint32_t depth_ = 0;
  std::uint32_t in_flight_ = 0;
  std::deque<IoCompletion> pending_writes_;
  // Registered blocks: the slots of a sparse table, filled in order, or one block for good.
  enum class Table : std::uint8_t { kNone, kSparse, kOne };
  static constexpr std::int32_t kMaxFixed = 4;
  struct Fixed {
    char* base = nullptr;
    std::size_t len = 0;
  };
  Table table_ = Table::kNone;
  Fixed fixed_[kMaxFixed];
  std::int32_t fixed_count_ = 0;
};

class PosixFileSystem final : public FileSystem {
 public:
  PosixFileSystem(bool uring, SubmitPoll poll) : uring_(uring), poll_(poll) {}
  ~PosixFileSystem() override {
    for (int fd : locks_) ::close(fd);
    if (anchor_ready_) io_uring_queue_exit(&anchor_);
  }
  std::string name() const override { return uring_ ? "posix+io_uring" : "posix+sync"; }

  Status open_dir(const std::string& dir, bool create) override {
    struct stat st{};
    if (::stat(dir.c_str(), &st) == 0) {
      if (!S_ISDIR(st.st_mode))
        return Status::io_error("'" + dir + "' exists and is not a directory");
      return Status::ok();
    }
    if (errno != ENOENT) return errno_status("cannot access directory", dir, errno);
    if (!create) {
      return Status::io_error("database directory '" + dir +
                              "' does not exist (Options::create_if_missing is false)");
    }
    if (::mkdir(dir.c_str(), 0755) != 0) return errno_status("cannot create directory", dir, errno);
    return sync_dir(dir_of(dir));
  }

  Status lock_dir(const std::string& dir, bool create) override {
    const std::string path = dir + "/LOCK";
    const int fd = ::open(path.c_str(),
                          create ? (O_RDWR | O_CREAT | O_CLOEXEC) : (O_RDONLY | O_CLOEXEC), 0644);
    if (fd < 0 && !create && errno == ENOENT) return Status::ok();
    if (fd < 0) return errno_status("cannot open", path, errno);
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      ::close(fd);
      if (err == EWOULDBLOCK) {
        return Status::busy("database directory '" + dir + "' is in use by another process");
      }
      return errno_status("cannot lock", path, err);
    }
    locks_.push_back(fd);
    return Status::ok();
  }

  Status list(const std::string& dir, std::vector<std::string>* names) override {
    names->clear();
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) return errno_status("cannot list directory", dir, errno);
    while (dirent* e = ::readdir(d)) {
      const std::string n = e->d_name;
      if (n != "." && n != "..") names->push_back(n);
    }
    ::closedir(d);
    return Status::ok();
  }

  Status sync_dir(const std::string& dir) override {
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return errno_status("cannot open directory", dir, errno);
    const int rc = ::fsync(fd);
    const int err = errno;
    ::close(fd);
    if (rc != 0) return errno_status("cannot sync directory", dir, err);
    return Status::ok();
  }

  Status rename(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0) return errno_status("cannot rename", from, errno);
    return Status::ok();
  }
  Status remove(const std::string& path) override {
    if (::unlink(path.c_str()) != 0) return errno_status("cannot remove", path, errno);
    return Status::ok();
  }

  Result<FileId> open(const std::string& path, const OpenOptions& o) override {
    int flags = O_RDWR | O_CLOEXEC;
    if (o.create) flags |= O_CREAT;
    if (o.direct) flags |= O_DIRECT;
    const int fd = ::open(path.c_str(), flags, 0644);
    if (fd < 0) {
      if (o.direct && errno == EINVAL) {
        return Status::io_error("cannot open '" + path +
                                "' with O_DIRECT: the file system does not support it "
                                "(choose another Options::log_sync)");
      }
      return errno_status("cannot open", path, errno);
    }
    return FileId{fd};
  }
  void close(FileId f) override { ::close(f); }

  Result<std::uint64_t> size(FileId f) override {
    struct stat st{};
    if (::fstat(f, &st) != 0) return errno_status("cannot stat", "fd " + std::to_string(f), errno);
    return static_cast<std::uint64_t>(st.st_size);
  }

  Status read(FileId f, std::uint64_t offset, std::size_t len, char* out,
              std::size_t* got) override {
    std::size_t done = 0;
    while (done < len) {
      const ssize_t n = ::pread(f, out + done, len - done, static_cast<off_t>(offset + done));
      if (n < 0) {
        if (errno == EINTR) continue;
        return errno_status("cannot read", "fd " + std::to_string(f), errno);
      }
      if (n == 0) break;
      done += static_cast<std::size_t>(n);
      // A regular file reads short only at its end. Asking again would also be wrong with
      // O_DIRECT: the next offset is unaligned (EINVAL). A cold read's aligned span may reach
      // past the end of the segment being written; the record itself lies before it.
      if (done < len) break;
    }
    *got = done;
    return Status::ok();
  }

  Status write(FileId f, std::uint64_t offset, const char* data, std::size_t len) override {
    std::size_t done = 0;
    while (done < len) {
      const ssize_t n = ::pwrite(f, data + done, len - done, static_cast<off_t>(offset + done));
      if (n < 0) {
        if (errno == EINTR) continue;
        return errno_status("cannot write", "fd " + std::to_string(f), errno);
      }
      done += static_cast<std::size_t>(n);
    }
    return Status::ok();
  }
  Status sync(FileId f) override {
    if (::fdatasync(f) != 0) return errno_status("cannot sync", "fd " + std::to_string(f), errno);
    return Status::ok();
  }
  void will_need(FileId f, std::uint64_t offset, std::uint64_t len) override {
    (void)::posix_fadvise(f, static_cast<off_t>(offset), static_cast<off_t>(len),
                          POSIX_FADV_WILLNEED);
  }
  Status truncate(FileId f, std::uint64_t size) override {
    if (::ftruncate(f, static_cast<off_t>(size)) != 0) {
      return errno_status("cannot truncate", "fd " + std::to_string(f), errno);
    }
    return Status::ok();
  }

  Result<std::unique_ptr<IoQueue>> make_queue(std::uint32_t depth) override {
    if (!uring_) return std::unique_ptr<IoQueue>(new SyncQueue(depth));
    if (poll_.cpu < 0) return UringQueue::make(depth, -1);
    std::lock_guard<std::mutex> g(anchor_mutex_);
    if (!anchor_ready_) {
      // The anchor owns the polling thread and carries no request; it lives as long as the
      // file system, so queues made and dropped later (bulk loads) can attach to its thread.
      io_uring_params p{};
      p.flags = IORING_SETUP_SQPOLL | IORING_SETUP_SQ_AFF;
      p.sq_thread_cpu = static_cast<std::uint32_t>(poll_.cpu);
      p.sq_thread_idle = poll_.idle_ms;
      const int e = io_uring_queue_init_params(1, &anchor_, &p);
      if (e < 0) {
        return Status::io_error("cannot start io_uring's submission polling thread on CPU " +
                                std::to_string(poll_.cpu) +
                                " (Options::durability.sq_poll_cpu): " + std::strerror(-e));
      }
      anchor_ready_ = true;
    }
    return UringQueue::make(depth, anchor_.ring_fd);
  }

 private:
  bool uring_;
  SubmitPoll poll_;
  std::mutex anchor_mutex_;
  io_uring anchor_{};
  bool anchor_ready_ = false;
  std::vector<int> locks_;
};

}  // namespace

std::unique_ptr<FileSystem> make_posix_file_system(bool uring, SubmitPoll poll) {
  return std::make_unique<PosixFileSystem>(uring, poll);
}

bool probe_io_uring(std::string* why) {
  io_uring ring{};
  const int e = io_uring_queue_init(4, &ring, 0);
  if (e < 0) {
    *why = std::string("io_uring_queue_init failed: ") + std::strerror(-e);
    return false;
  }
  io_uring_sqe* sqe = io_uring_get_sqe(&ring);
  io_uring_prep_nop(sqe);
  io_uring_cqe* cqe = nullptr;
  bool ok = io_uring_submit(&ring) == 1 && io_uring_wait_cqe(&ring, &cqe) == 0 && cqe->res == 0;
  if (!ok) *why = "io_uring no-op request did not complete";
  io_uring_queue_exit(&ring);
  return ok;
}

Result<std::uint64_t> file_size(FileSystem& fs, const std::string& path) {
  Result<FileId> f = fs.open(path, {});
  if (!f.is_ok()) return f.status();
  Result<std::uint64_t> n = fs.size(*f);
  fs.close(*f);
  return n;
}

Status read_file(FileSystem& fs, const std::string& path, std::string* out) {
  Result<FileId> f = fs.open(path, {});
  if (!f.is_ok()) return f.status();
  Result<std::uint64_t> n = fs.size(*f);
  if (!n.is_ok()) {
    fs.close(*f);
    return n.status();
  }
  out->resize(*n);
  std::size_t got = 0;
  Status s = fs.read(*f, 0, *n, out->data(), &got);
  fs.close(*f);
  if (!s.is_ok()) return s;
  out->resize(got);
  return Status::ok();
}

}  // namespace braid::storage
