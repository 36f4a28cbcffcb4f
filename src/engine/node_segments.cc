#include "engine/node_segments.h"

#include <cstring>

#include "index/node_image.h"
#include "storage/log_format.h"

namespace braid::engine {

Result<std::uint64_t> NodeSegments::add(char** slot) {
  std::lock_guard<std::mutex> g(mutex_);
  return writer_.add(slot);
}

Status NodeSegments::flush() {
  std::lock_guard<std::mutex> g(mutex_);
  if (Status s = writer_.flush(); !s.is_ok()) return s;
  // A flush writes at most a stage, and at least a block.
  if (++flushes_since_sync_ * storage::kDirectAlign >= kSyncBytes) {
    flushes_since_sync_ = 0;
    if (Status s = writer_.sync(); !s.is_ok()) return s;
  }
  // A segment that cannot be removed stays until the next open removes it: the eviction that
  // flushed succeeded, and says nothing.
  (void)writer_.reap();
  return Status::ok();
}

Status NodeSegments::read(std::uint64_t address, char* out) {
  alignas(storage::kDirectAlign) char block[storage::kDirectAlign];
  Result<const char*> at = storage::read_node_slot(files_, address, block);
  if (!at.is_ok()) return at.status();
  std::memcpy(out, *at, index::kNodeImageBytes);
  return Status::ok();
}

}  // namespace braid::engine
