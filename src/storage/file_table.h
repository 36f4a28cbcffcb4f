// The database's files by number (the cold store): a cold entry names its record's
// file by a database-wide number (storage/cold_address.h), and a reader needs an open handle for
// it. Log segments take their numbers here when they are created; the table opens a file for
// reading on its first cold read, with O_DIRECT where the file system allows it (a cold read
// then measures the device, not the page cache), buffered otherwise, and keeps it open until
// the file is forgotten. A reader holds a use of the handle from acquire() to release(), so a
// file forgotten meanwhile (a checkpoint deleted it after moving its records' entries) is
// closed only once its last read is done: a descriptor is never closed under a read, let
// alone reused by another file while a read still names it.
//
// Any thread: numbers are handed out by an atomic counter, the map is under a mutex (one lock
// per cold read, beside an I/O of tens of microseconds).
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>

#include "storage/file_system.h"

namespace braid::storage {

class FileTable {
 public:
  FileTable(FileSystem* fs, bool try_direct) : fs_(fs), try_direct_(try_direct) {}
  ~FileTable();
  FileTable(const FileTable&) = delete;
  FileTable& operator=(const FileTable&) = delete;

  // A number no file of the database has had (above every one passed to reserve_through).
  std::uint64_t allocate() { return next_.fetch_add(1, std::memory_order_relaxed); }
  // Numbers up to n are taken (files found at open).
  void reserve_through(std::uint64_t n);

  // File `number` is at `path` (created, or found at open).
  void add(std::uint64_t number, std::string path);
  // File `number` is gone (retired): no new reader gets it, and its handle is closed once the
  // reads holding it are released.
  void forget(std::uint64_t number);

  struct Handle {
    FileId id = -1;
    bool direct = false;  // reads must be kDirectAlign-aligned in offset, length and buffer
  };
  // The read handle of file `number`, opened on first use, with a use taken: call release()
  // when the read is done. IOError naming the file when the number is unknown (or forgotten)
  // or the file cannot be opened.
  Result<Handle> acquire(std::uint64_t number);
  void release(std::uint64_t number);

  std::size_t size() const;
  // The file system the handles are of (a caller that reads through a handle it acquired).
  FileSystem* fs() const { return fs_; }

 private:
  struct Entry {
    std::string path;
    Handle handle;
    std::uint32_t uses = 0;  // reads between acquire and release
    bool forgotten = false;  // closed and erased when the last use is released
  };
  void close_entry(Entry& e);
  Result<Handle> open_handle(const std::string& path);
  FileSystem* fs_;
  const bool try_direct_;
  std::atomic<std::uint64_t> next_{0};
  mutable std::mutex mutex_;
  std::unordered_map<std::uint64_t, Entry> files_;
};

}  // namespace braid::storage
