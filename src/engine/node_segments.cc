#include "engine/node_segments.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "index/node_image.h"
#include "storage/cold_address.h"
#include "storage/log_format.h"
#include "storage/node_segment.h"
#include "storage/recovery.h"

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

bool NodeSegments::is_run(std::uint64_t address) const {
  return !run_files_.empty() &&
         std::binary_search(run_files_.begin(), run_files_.end(), storage::cold(address).segment);
}

Status NodeSegments::image_of(const storage::RunRecords& run, std::uint64_t address, char* out) {
  // The tree checks the image's tree (the records' table) and address like any other.
  if (!index::encode_leaf_image(run.keys, run.values, run.table, address, out)) {
    return Status::corruption(storage::part_file_name(storage::cold(address).segment) +
                              " at offset " + std::to_string(storage::cold(address).offset) +
                              ": a run holds more than one index leaf");
  }
  return Status::ok();
}

NodeSegments::Blocks NodeSegments::blocks_of(std::uint64_t address, bool run) {
  const mvcc::entry::ColdAddress a = storage::cold(address);
  Blocks b;
  b.segment = a.segment;
  b.start = a.offset / storage::kDirectAlign * storage::kDirectAlign;
  b.len = static_cast<std::uint32_t>(run ? (a.offset + a.size + storage::kDirectAlign - 1) /
                                                   storage::kDirectAlign * storage::kDirectAlign -
                                               b.start
                                         : storage::kDirectAlign);
  return b;
}

Status NodeSegments::image_from(std::uint64_t address, bool run, const char* bytes,
                                std::int64_t got, char* scratch, const char** image) {
  const mvcc::entry::ColdAddress a = storage::cold(address);
  const std::uint64_t skip = a.offset - blocks_of(address, run).start;
  const std::uint64_t need = run ? a.size : index::kNodeImageBytes;
  if (got < 0 || static_cast<std::uint64_t>(got) < skip + need) {
    return Status::io_error(
        std::string(run ? "index leaf in " + storage::part_file_name(a.segment)
                        : "index node in " + storage::node_segment_name(a.segment)) +
        " at offset " + std::to_string(a.offset) + ": " +
        (got < 0 ? std::string(std::strerror(static_cast<int>(-got)))
                 : std::string("the file ends before it")));
  }
  if (!run) {
    *image = bytes + skip;
    return Status::ok();
  }
  // One scratch per thread: decoded and encoded with no suspension between, so every
  // coroutine of a worker can share it (and 1 KiB stays out of each frame).
  thread_local storage::RunRecords records;
  if (Status s = storage::decode_run(address, bytes + skip, &records); !s.is_ok()) return s;
  if (Status s = image_of(records, address, scratch); !s.is_ok()) return s;
  *image = scratch;
  return Status::ok();
}

bool NodeSegments::read_shared(std::uint64_t address, bool run, char* out, Status* status) {
  ColdPort* port = ColdPort::current();
  if (port != nullptr && !port->has_ring()) port = nullptr;
  const Blocks b = blocks_of(address, run);
  ColdLoad* read = port != nullptr ? port->read_shared(b.segment, b.start, b.len)
                                   : cold_->join_shared(b.segment, b.start, b.len);
  if (read == nullptr) return false;
  // Issued now if this thread's ring holds it back for its next round; the wait completes
  // this thread's own reads meanwhile.
  if (port != nullptr) port->flush_extents();
  cold_->wait_shared(port, read);
  const char* image = nullptr;
  *status = image_from(address, run, read->data(), read->extent_got, out, &image);
  if (status->is_ok() && image != out) std::memcpy(out, image, index::kNodeImageBytes);
  if (port != nullptr) {
    port->release_shared(read);
  } else {
    cold_->release_joined(read);
  }
  return true;
}

Status NodeSegments::read(std::uint64_t address, char* out) {
  const bool run = is_run(address);
  if (Status s; read_shared(address, run, out, &s)) return s;
  if (run) {
    storage::RunRecords run;
    if (Status s = storage::read_run(files_, address, &run); !s.is_ok()) return s;
    return image_of(run, address, out);
  }
  alignas(storage::kDirectAlign) char block[storage::kDirectAlign];
  Result<const char*> at = storage::read_node_slot(files_, address, block);
  if (!at.is_ok()) return at.status();
  std::memcpy(out, *at, index::kNodeImageBytes);
  return Status::ok();
}

Status NodeSegments::read_many(std::span<const std::uint64_t> addresses, char* out) {
  if (run_files_.empty()) return storage::read_node_slots(files_, addresses, out);
  // Stretches of runs (read together: a checkpoint's scan of the leaves reads the part nearly
  // in order) and of images, each with the reads its kind does best.
  std::vector<storage::RunRecords> runs;
  for (std::size_t i = 0; i < addresses.size();) {
    const bool run = is_run(addresses[i]);
    std::size_t j = i + 1;
    while (j < addresses.size() && is_run(addresses[j]) == run) ++j;
    const std::span<const std::uint64_t> stretch = addresses.subspan(i, j - i);
    char* const to = out + i * index::kNodeImageBytes;
    if (!run) {
      if (Status s = storage::read_node_slots(files_, stretch, to); !s.is_ok()) return s;
    } else {
      runs.resize(stretch.size());
      if (Status s = storage::read_runs(files_, stretch, runs.data()); !s.is_ok()) return s;
      for (std::size_t k = 0; k < stretch.size(); ++k) {
        if (Status s = image_of(runs[k], stretch[k], to + k * index::kNodeImageBytes); !s.is_ok()) {
          return s;
        }
      }
    }
    i = j;
  }
  return Status::ok();
}

}  // namespace braid::engine
