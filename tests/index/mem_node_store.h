// A NodeStore in memory for the B+-tree's paging tests: images by address, with injected
// failures of adds, flushes and reads, a hook that runs inside flush() (a writer racing an
// eviction's write), and counts to check that no image leaks.
#pragma once

#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <utility>

#include "index/btree.h"
#include "index/node_image.h"
#include "index/node_store.h"

namespace braid::index {

class MemNodeStore final : public NodeStore {
 public:
  Result<std::uint64_t> add(char** slot) override {
    std::lock_guard<std::mutex> g(mu_);
    if (fail_adds_ > 0) {
      --fail_adds_;
      return Status::io_error("no room for a node image (injected)");
    }
    const std::uint64_t a = (next_++ << 13) | kAddressBit;
    pending_.emplace_back(a, std::string(kNodeImageBytes, '\0'));
    *slot = pending_.back().second.data();
    return a;
  }
  Status flush() override {
    std::function<void()> hook;
    {
      std::lock_guard<std::mutex> g(mu_);
      hook = std::exchange(on_flush_, nullptr);
    }
    if (hook) hook();
    std::lock_guard<std::mutex> g(mu_);
    if (fail_flushes_ > 0) {
      --fail_flushes_;
      return Status::io_error("cannot write node images (injected)");
    }
    for (auto& [a, img] : pending_) images_.emplace(a, std::move(img));
    pending_.clear();
    return Status::ok();
  }
  Status read(std::uint64_t address, char* out) override {
    std::lock_guard<std::mutex> g(mu_);
    if (fail_reads_ > 0) {
      --fail_reads_;
      return Status::io_error("cannot read index node " + std::to_string(address) + " (injected)");
    }
    const auto it = images_.find(address);
    if (it == images_.end()) {
      return Status::corruption("no node image at " + std::to_string(address));
    }
    std::memcpy(out, it->second.data(), kNodeImageBytes);
    ++reads_;
    return Status::ok();
  }
  // One request for all (as a store whose images lie side by side), counted.
  Status read_many(std::span<const std::uint64_t> addresses, char* out) override {
    {
      std::lock_guard<std::mutex> g(mu_);
      ++batch_reads_;
    }
    return NodeStore::read_many(addresses, out);
  }
  void release(std::uint64_t address) override {
    std::lock_guard<std::mutex> g(mu_);
    // A slot given up before its flush is still pending.
    for (auto it = pending_.begin(); it != pending_.end(); ++it) {
      if (it->first == address) {
        pending_.erase(it);
        return;
      }
    }
    const std::size_t erased = images_.erase(address);
    if (erased != 1) bad_releases_++;
  }

  void fail_adds(int n) {
    std::lock_guard<std::mutex> g(mu_);
    fail_adds_ = n;
  }
  void fail_flushes(int n) {
    std::lock_guard<std::mutex> g(mu_);
    fail_flushes_ = n;
  }
  void fail_reads(int n) {
    std::lock_guard<std::mutex> g(mu_);
    fail_reads_ = n;
  }
  void on_next_flush(std::function<void()> hook) {
    std::lock_guard<std::mutex> g(mu_);
    on_flush_ = std::move(hook);
  }
  // Flips a byte of the image at `address`; answers whether there was one.
  bool damage(std::uint64_t address, std::size_t byte) {
    std::lock_guard<std::mutex> g(mu_);
    const auto it = images_.find(address);
    if (it == images_.end()) return false;
    it->second[byte] = static_cast<char>(it->second[byte] ^ 0x10);
    return true;
  }
  std::size_t live() const {
    std::lock_guard<std::mutex> g(mu_);
    return images_.size() + pending_.size();
  }
  std::uint64_t reads() const {
    std::lock_guard<std::mutex> g(mu_);
    return reads_;
  }
  std::uint64_t batch_reads() const {
    std::lock_guard<std::mutex> g(mu_);
    return batch_reads_;
  }
  std::uint64_t bad_releases() const {
    std::lock_guard<std::mutex> g(mu_);
    return bad_releases_;
  }
  std::vector<std::uint64_t> addresses() const {
    std::lock_guard<std::mutex> g(mu_);
    std::vector<std::uint64_t> v;
    for (const auto& [a, img] : images_) v.push_back(a);
    return v;
  }

 private:
  mutable std::mutex mu_;
  std::uint64_t next_ = 1;
  std::deque<std::pair<std::uint64_t, std::string>> pending_;
  std::map<std::uint64_t, std::string> images_;
  int fail_adds_ = 0;
  int fail_flushes_ = 0;
  int fail_reads_ = 0;
  std::function<void()> on_flush_;
  std::uint64_t reads_ = 0;
  std::uint64_t batch_reads_ = 0;
  std::uint64_t bad_releases_ = 0;
};

}  // namespace braid::index
