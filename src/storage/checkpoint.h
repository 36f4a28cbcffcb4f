// Writing a checkpoint into one of the two slots, chunk by chunk through an IoQueue, so a
// worker can interleave it with transactions (DESIGN §5: a system transaction, no thread of
// its own). The slot written is seq % 2: the other one keeps the previous checkpoint whole
// until this one is durable, so a crash mid-write falls back to it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "storage/file_system.h"
#include "storage/log_format.h"

namespace braid::storage {

class CheckpointWriter {
 public:
  // `starts`: where each log of the header's generation continues the checkpoint.
  CheckpointWriter(FileSystem* fs, IoQueue* queue, std::string dir, const CkptHeader& header,
                   std::vector<LogStart> starts, std::uint32_t chunk_bytes = 1u << 20);
  ~CheckpointWriter();
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;

  // Opens and empties the slot, queues the header chunk.
  Status begin();
  // True when add() may be called now (a chunk buffer is free).
  bool ready();
  Status add(std::uint32_t table, std::string_view key, std::string_view value);
  // After the last add: queues the last chunk and the trailer, then the sync. Call until it
  // answers true (done) or an error; with `wait`, blocks on the device meanwhile.
  Result<bool> finish(bool wait);

  std::uint64_t records() const { return records_; }
  std::uint64_t bytes() const { return offset_; }
  const std::string& path() const { return path_; }

 private:
  Status submit_chunk(std::uint32_t magic, std::uint32_t count);
  Status reap(bool wait);

  FileSystem* fs_;
  IoQueue* queue_;
  std::string dir_;
  std::string path_;
  CkptHeader header_;
  std::vector<LogStart> starts_;
  std::uint32_t chunk_bytes_;
  FileId file_ = -1;
  std::unique_ptr<char[]> buffers_[2];
  bool busy_[2] = {false, false};
  IoRequest requests_[2];  // each buffer's write, advanced past short writes
  int active_ = 0;
  std::uint32_t used_ = 0;
  std::uint32_t count_ = 0;
  std::uint64_t chunk_index_ = 0;
  std::uint64_t data_chunks_ = 0;
  std::uint64_t records_ = 0;
  std::uint64_t offset_ = 0;
  enum class Phase : std::uint8_t { kData, kSyncing, kDone } phase_ = Phase::kData;
  bool trailer_queued_ = false;
  std::uint32_t writes_in_flight_ = 0;
  Status failure_;
};

}  // namespace braid::storage
