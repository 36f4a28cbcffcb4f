// The I/O backend interface: everything the engine does to files goes through a FileSystem, so
// the same engine code runs on the real disk (PosixFileSystem: plain syscalls for metadata and
// recovery reads, io_uring for the log and checkpoint writes and the cold reads) and on the
// simulated disk of the crash tests (SimFileSystem: durable images, pending writes, seeded
// completion order, power loss with damage).
//
// Two halves. The synchronous calls are for open, recovery, tools and rare metadata changes;
// the asynchronous IoQueue is the hot path: one per worker, used only by its thread, so a
// worker submits its log write and keeps running transactions until the completion shows up
// in poll(). Errors come back as Status with the path and errno text; asynchronous results as
// a byte count or -errno, as io_uring reports them.
#pragma once

#include <braid/status.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace braid::storage {

using FileId = std::int32_t;

struct OpenOptions {
  bool create = false;  // create when missing (the new name is volatile until sync_dir)
  bool direct = false;  // O_DIRECT: offsets, lengths and buffers 4 KiB aligned
};

struct IoRequest {
  enum class Op : std::uint8_t {
    kWrite,          // pwrite; durable only after a later kSync
    kSync,           // fdatasync
    kWriteDsync,     // pwrite with RWF_DSYNC: durable when it completes
    kWriteThenSync,  // pwrite then fdatasync, linked: durable when it completes
    kRead            // pread into `out`: what a read of the file would see now (the cold store)
  };
  Op op = Op::kWrite;
  FileId file = -1;
  std::uint64_t offset = 0;
  const char* data = nullptr;  // writes: must stay valid until the completion
  char* out = nullptr;         // kRead: `len` bytes, valid until the completion
  std::uint32_t len = 0;
  // kRead: the buffer register_buffer() answered, which `out` lies within; -1: none. The
  // kernel then skips pinning the destination's pages on every read.
  std::int32_t fixed_buffer = -1;
  std::uint64_t user = 0;  // returned in the completion
};

struct IoCompletion {
  std::uint64_t user = 0;
  // Bytes written (possibly fewer than asked: the caller resubmits the rest), 0 for a sync,
  // bytes read (fewer than asked only at the end of the file), or -errno.
  std::int64_t result = 0;
};

// One worker's asynchronous queue. Single-threaded: only its owner calls it.
class IoQueue {
 public:
  virtual ~IoQueue() = default;
  // Queues a request; IOError when the queue is full or the backend refuses it.
  virtual Status submit(const IoRequest& request) = 0;
  // Collects up to `max` completions; with `wait`, blocks until at least one is there,
  // nothing is in flight, or a bounded slice (~100 ms) passed: callers that must have a
  // completion wait in a loop, so each turn can check for a halt or a stall.
  virtual std::size_t poll(IoCompletion* out, std::size_t max, bool wait) = 0;
  virtual std::uint32_t in_flight() const = 0;
  // Batching: once deferred, submit() only queues a request, and the next flush() or poll()
  // hands every queued one to the device with one kernel entry (on a VM one doorbell, an exit
  // to the hypervisor, instead of one per request). Queued requests count as in flight.
  virtual void defer_submissions() {}
  virtual Status flush() { return Status::ok(); }
  // Registers `len` bytes at `base` as a buffer reads may name (IoRequest::fixed_buffer),
  // pinned once instead of per read. Answers its index, or -1 when the backend has no such
  // thing, has no room for another, or refused (the locked-memory limit, RLIMIT_MEMLOCK,
  // counts it): reads into it then go as before. A queue takes a few blocks (io_uring: four,
  // one on kernels before 5.19); they last until unregister_buffers() or the queue goes.
  [[nodiscard]] virtual std::int32_t register_buffer(char* /*base*/, std::size_t /*len*/) {
    return -1;
  }
  // Lets every registered block go; only with nothing in flight that names one.
  virtual void unregister_buffers() {}
};

class FileSystem {
 public:
  virtual ~FileSystem() = default;
  // A description for logs and statistics ("posix+io_uring", "posix+sync", "sim").
  virtual std::string name() const = 0;

  // Creates the directory when missing (NotFound-style IOError when `create` is false and it
  // is missing); IOError when the path exists and is not a directory.
  virtual Status open_dir(const std::string& dir, bool create) = 0;
  // Excludes other processes from `dir` until the FileSystem is destroyed (Busy when held).
  // `create`: make the lock file when missing; otherwise a directory without one is left as it
  // is (a reader that must not write: no process that writes has had it open).
  virtual Status lock_dir(const std::string& dir, bool create) = 0;
  virtual Status list(const std::string& dir, std::vector<std::string>* names) = 0;
  virtual Status sync_dir(const std::string& dir) = 0;
  virtual Status rename(const std::string& from, const std::string& to) = 0;
  virtual Status remove(const std::string& path) = 0;

  virtual Result<FileId> open(const std::string& path, const OpenOptions& options) = 0;
  virtual void close(FileId file) = 0;
  virtual Result<std::uint64_t> size(FileId file) = 0;
  // Reads up to `len` bytes; `*got` receives the count (short only at the end of the file).
  virtual Status read(FileId file, std::uint64_t offset, std::size_t len, char* out,
                      std::size_t* got) = 0;
  // Synchronous full write and sync (rare paths: catalog, tools, application-thread commits).
  virtual Status write(FileId file, std::uint64_t offset, const char* data, std::size_t len) = 0;
  virtual Status sync(FileId file) = 0;
  virtual Status truncate(FileId file, std::uint64_t size) = 0;
  // A hint that `len` bytes from `offset` will be read soon (recovery's sequential reads of a
  // checkpoint part): the kernel reads them ahead while the caller decodes what it has, so
  // the read and the index build overlap. A backend may ignore it.
  virtual void will_need(FileId /*file*/, std::uint64_t /*offset*/, std::uint64_t /*len*/) {}

  // An asynchronous queue of at most `depth` requests in flight.
  virtual Result<std::unique_ptr<IoQueue>> make_queue(std::uint32_t depth) = 0;
};

// Kernel-side submission polling for the io_uring queues (DurabilityOptions::sq_poll_cpu):
// cpu -1 is off; otherwise every queue of one file system shares one polling kernel thread,
// pinned to `cpu`, idle after `idle_ms`.
struct SubmitPoll {
  std::int32_t cpu = -1;
  std::uint32_t idle_ms = 50;
};

// The real file system. `uring`: use io_uring for the queues; otherwise requests are executed
// synchronously at submit (the fallback where io_uring is missing).
std::unique_ptr<FileSystem> make_posix_file_system(bool uring, SubmitPoll poll = {});
// Whether io_uring works here (a ring can be created and a no-op completes); `why` says what
// failed.
bool probe_io_uring(std::string* why);

// Reads a whole file (recovery and tools).
Status read_file(FileSystem& fs, const std::string& path, std::string* out);
// The size of the file at `path` (open, size, close).
Result<std::uint64_t> file_size(FileSystem& fs, const std::string& path);

}  // namespace braid::storage
