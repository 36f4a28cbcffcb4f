#include "storage/file_table.h"

#include "util/assert.h"

namespace braid::storage {

FileTable::~FileTable() {
  for (auto& [number, e] : files_) {
    if (e.handle.id >= 0) fs_->close(e.handle.id);
  }
}

void FileTable::reserve_through(std::uint64_t n) {
  std::uint64_t cur = next_.load(std::memory_order_relaxed);
  while (cur <= n && !next_.compare_exchange_weak(cur, n + 1, std::memory_order_relaxed)) {
  }
}

void FileTable::add(std::uint64_t number, std::string path) {
  reserve_through(number);
  std::lock_guard<std::mutex> g(mutex_);
  Entry& e = files_[number];
  BRAID_ASSERT(e.uses == 0);  // numbers are never reused: nobody reads a file not yet added
  close_entry(e);
  e = Entry{std::move(path), Handle{}};
}

void FileTable::close_entry(Entry& e) {
  if (e.handle.id >= 0) fs_->close(e.handle.id);
  e.handle = Handle{};
}

void FileTable::forget(std::uint64_t number) {
  std::lock_guard<std::mutex> g(mutex_);
  auto it = files_.find(number);
  if (it == files_.end()) return;
  if (it->second.uses != 0) {
    it->second.forgotten = true;
    return;
  }
  close_entry(it->second);
  files_.erase(it);
}

Result<FileTable::Handle> FileTable::open_handle(const std::string& path) {
  OpenOptions o;
  if (try_direct_) {
    o.direct = true;
    if (Result<FileId> f = fs_->open(path, o); f.is_ok()) return Handle{*f, true};
    o.direct = false;  // the file system refuses O_DIRECT (tmpfs): read through the cache
  }
  Result<FileId> f = fs_->open(path, o);
  if (!f.is_ok()) return f.status();
  return Handle{*f, false};
}

Result<FileTable::Handle> FileTable::acquire(std::uint64_t number) {
  std::lock_guard<std::mutex> g(mutex_);
  auto it = files_.find(number);
  if (it == files_.end() || it->second.forgotten) {
    return Status::io_error("cold read: no file numbered " + std::to_string(number) +
                            " in the database");
  }
  Entry& e = it->second;
  if (e.handle.id < 0) {
    Result<Handle> h = open_handle(e.path);
    if (!h.is_ok()) return h.status();
    e.handle = *h;
  }
  ++e.uses;
  return e.handle;
}

void FileTable::release(std::uint64_t number) {
  std::lock_guard<std::mutex> g(mutex_);
  auto it = files_.find(number);
  BRAID_ASSERT(it != files_.end());
  Entry& e = it->second;
  BRAID_ASSERT(e.uses > 0);
  if (--e.uses == 0 && e.forgotten) {
    close_entry(e);
    files_.erase(it);
  }
}

std::size_t FileTable::size() const {
  std::lock_guard<std::mutex> g(mutex_);
  return files_.size();
}

}  // namespace braid::storage
