#include "storage/file_table.h"

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
  if (e.handle.id >= 0) fs_->close(e.handle.id);
  e = Entry{std::move(path), Handle{}};
}

void FileTable::forget(std::uint64_t number) {
  std::lock_guard<std::mutex> g(mutex_);
  auto it = files_.find(number);
  if (it == files_.end()) return;
  if (it->second.handle.id >= 0) fs_->close(it->second.handle.id);
  files_.erase(it);
}

Result<FileTable::Handle> FileTable::get(std::uint64_t number) {
  std::lock_guard<std::mutex> g(mutex_);
  auto it = files_.find(number);
  if (it == files_.end()) {
    return Status::io_error("cold read: no file numbered " + std::to_string(number) +
                            " in the database");
  }
  Entry& e = it->second;
  if (e.handle.id >= 0) return e.handle;
  OpenOptions o;
  if (try_direct_) {
    o.direct = true;
    if (Result<FileId> f = fs_->open(e.path, o); f.is_ok()) {
      e.handle = Handle{*f, true};
      return e.handle;
    }
    o.direct = false;  // the file system refuses O_DIRECT (tmpfs): read through the cache
  }
  Result<FileId> f = fs_->open(e.path, o);
  if (!f.is_ok()) return f.status();
  e.handle = Handle{*f, false};
  return e.handle;
}

std::size_t FileTable::size() const {
  std::lock_guard<std::mutex> g(mutex_);
  return files_.size();
}

}  // namespace braid::storage
