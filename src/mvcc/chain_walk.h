// The walk down a version chain to the newest version a transaction sees, as a stepper that
// never suspends (the index's Lookup and ScanLeaf are its siblings): each step names the next
// version, which the access drivers (engine/access.h) prefetch and suspend on, or not, by mode.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "mvcc/protocol.h"
#include "mvcc/version.h"
#include "util/assert.h"

namespace braid::mvcc {

// The newest version of a record visible to a transaction, one version per step. The first
// step only names the head (which the caller prefetches before it is read).
class ChainWalk {
 public:
  // `fetch_bytes`: what a driver that hints fetches of each version before its step reads
  // it (read_bytes).
  ChainWalk(const Protocol* protocol, const TxnContext* ctx, std::uint64_t entry,
            std::size_t fetch_bytes = 64)
      : protocol_(protocol),
        ctx_(ctx),
        v_(mvcc::entry::is_hot(entry) ? mvcc::entry::hot(entry) : nullptr),
        fetch_bytes_(fetch_bytes) {
    BRAID_ASSERT(!mvcc::entry::is_cold(entry));  // the caller fetched a cold record first
    // A moved entry reads as no version: the caller looks the key up again first (relocate).
    BRAID_DASSERT(!mvcc::entry::is_moved(entry));
  }
  bool step() {
    if (!started_) {
      started_ = true;
      return v_ != nullptr;
    }
    for (;;) {
      const Vis vis = protocol_->read_visibility(ctx_, v_->stamp.load(std::memory_order_acquire));
      if (vis == Vis::kRetry) {
        // The owner ended, having restamped its writes: the next read is final. A stamp that
        // stays an ended owner's is a broken invariant (a checkpoint once wrote one to disk,
        // and every reader of the record span here): stop loudly instead of hanging.
        BRAID_ASSERT(++owner_retries_ < kMaxOwnerRetries);
        continue;
      }
      if (vis == Vis::kVisible) {
        found_ = v_;
        // Read since a sweep passed it: keep it (mvcc/version.h, `cooling`).
        if (v_->cooling.load(std::memory_order_relaxed) != 0) [[unlikely]] {
          v_->cooling.store(0, std::memory_order_relaxed);
        }
        return false;
      }
      v_ = v_->next.load(std::memory_order_acquire);
      return v_ != nullptr;
    }
  }
  const Version* next() const { return v_; }
  std::size_t fetch_bytes() const { return fetch_bytes_; }
  // A version the caller fetched already (by the leaf's value hint, with the entry): the step
  // that reads it needs no suspension of its own (resident(), access_ops.inc).
  void fetched(const void* p) { fetched_ = p; }
  bool next_fetched() const { return v_ != nullptr && static_cast<const void*>(v_) == fetched_; }
  const Version* found() const { return found_; }

 private:
  const Protocol* protocol_;
  const TxnContext* ctx_;
  const Version* v_;
  std::size_t fetch_bytes_;
  static constexpr std::uint32_t kMaxOwnerRetries = 1u << 20;
  const Version* found_ = nullptr;
  const void* fetched_ = nullptr;
  bool started_ = false;
  std::uint32_t owner_retries_ = 0;
};

// The walk without hints, for versions whose lines were already prefetched as a group (scans).
inline const Version* visible_version(const Protocol* protocol, const TxnContext* ctx,
                                      std::uint64_t entry) {
  ChainWalk walk(protocol, ctx, entry);
  while (walk.step()) {
  }
  return walk.found();
}

}  // namespace braid::mvcc
