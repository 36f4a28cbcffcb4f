// Node segments: the files B+-tree node images live in (docs/internals/index-paging.md, "A
// persistent index"; the image itself is index/node_image.h).
//
// Format. A segment `idx-N` (N a database-wide file number, from the counter log segments and
// checkpoint parts take theirs from) is a sequence of 1 KiB slots, each a node image or zeros.
// There is nothing else in it: an image carries its own checksum, its tree and its own address,
// so a reader verifies a slot without a header to trust first. An image's address is the cold
// word (storage/cold_address.h) of (N, the slot's offset, 1 KiB): the word an inner node's
// image names its child by, and the word a leaf evicted from memory leaves in its parent.
//
// Writing. Images are copy-on-write: a changed node gets a new slot, never the old one, so a
// slot once written holds one image for the file's life. The writer stages images in a buffer
// of whole blocks; flush() writes what is staged, the last block padded with zero slots, and the
// next image starts a new block. A block is therefore written once: a write torn by a crash
// damages only images no synced checkpoint names yet, never a neighbour that one does.
//
// Space. Each segment counts its images still named by someone (taken by add(), given back by
// release()); a segment the writer has moved past goes once its count falls to 0: the file
// table forgets it (a read already under way keeps its handle) and the file is removed.
//
// Reading. One read of the 4 KiB block that holds the slot (what O_DIRECT reads; a node read
// measures the device, not the page cache, as a cold record's does), through the file table's
// handles.
#pragma once

#include <braid/status.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "storage/file_system.h"
#include "storage/file_table.h"

namespace braid::storage {

inline constexpr std::uint32_t kNodeSlotBytes = 1024;

std::string node_segment_name(std::uint64_t number);
bool parse_node_segment_name(std::string_view name, std::uint64_t* number);

// Appends node images to node segments in `dir`. add(), flush() and sync(): one thread at a
// time (its owner's); release(): any thread.
class NodeSegmentWriter {
 public:
  // Staged bytes at most: a flush is at least one write per this many.
  static constexpr std::uint32_t kStageBytes = 64 * 1024;

  // New segments take their numbers from `files` and join it (so reads find them at once); a
  // segment holds `segment_bytes` at most (a multiple of the block, at most what a cold
  // address reaches).
  NodeSegmentWriter(FileSystem* fs, FileTable* files, std::string dir, std::uint64_t segment_bytes);
  // Closes the segment being written. Staged images that no flush() wrote are dropped.
  ~NodeSegmentWriter();
  NodeSegmentWriter(const NodeSegmentWriter&) = delete;
  NodeSegmentWriter& operator=(const NodeSegmentWriter&) = delete;

  // Takes the next slot: answers its address and points `*slot` at the kNodeSlotBytes the
  // caller writes the image into (encode_node_image with that address), valid until the next
  // call of any method. Writes the staged images first when the stage is full, and opens a new
  // segment when the current one is; IOError naming the file when either fails (the slot is
  // then not taken).
  Result<std::uint64_t> add(char** slot);
  // Writes every staged image. IOError naming the segment: the staged images stay staged, and
  // their addresses must not be handed to anyone (a later flush may still write them).
  Status flush();
  // flush(), then makes every image written so far durable: each segment written since the
  // last sync is synced, and the directory when a segment was created since.
  Status sync();

  // No one names the image at `address` (an address add() answered) any more. Any thread; no
  // I/O: a segment past which the writer moved, and whose every image was released, is removed
  // by the writer's next reap().
  void release(std::uint64_t address);
  // Removes the segments release() emptied: the file table forgets each (a read already under
  // way keeps its handle) and the file goes. The writer's thread, beside its other calls.
  // IOError naming a file that could not be removed (it stays, a stray that a later open
  // removes).
  Status reap();

  // The segments this writer created and has not removed, oldest first (a writer that runs
  // for days creates segments without end: the list holds only those still on disk), and how
  // many of them hold images still named.
  const std::vector<std::uint64_t>& segments() const { return segments_; }
  std::size_t live_segments() const;

 private:
  Status open_segment();
  Status write_stage();

  FileSystem* const fs_;
  FileTable* const files_;
  const std::string dir_;
  const std::uint64_t segment_bytes_;
  FileId file_ = -1;            // the segment being written, -1: none yet
  std::uint64_t stage_at_ = 0;  // the file offset of the stage's first byte
  std::uint32_t staged_ = 0;    // slots in the stage, in bytes
  struct FreeDeleter {
    void operator()(char* p) const;
  };
  std::unique_ptr<char, FreeDeleter> stage_;
  std::vector<std::uint64_t> segments_;
  // Write handles still open (the current segment's, and those written since the last sync),
  // and which of them hold writes not yet synced.
  std::map<std::uint64_t, FileId> open_;
  std::vector<std::uint64_t> unsynced_;
  bool dir_dirty_ = false;  // a segment was created since the last sync
  // Under live_mutex_ (release() is any thread's): images taken and not released, by segment;
  // the segment being written (number_, which only the writer's thread changes); and the
  // segments release() emptied, for reap().
  mutable std::mutex live_mutex_;
  std::map<std::uint64_t, std::uint64_t> live_;
  std::uint64_t number_ = 0;
  std::vector<std::uint64_t> dead_;
};

// Reads the slot at `address` (a node segment's, opened through `files`) into `block`
// (kDirectAlign bytes, kDirectAlign-aligned) and answers where in `block` the image starts:
// unverified (decode_node_image checks it). IOError when the read fails or the file is
// unknown; Corruption when the address is not a node slot's or the file ends before it.
Result<const char*> read_node_slot(FileTable* files, std::uint64_t address, char* block);
// Reads the slots at `addresses` into `out` (kNodeSlotBytes each, in order), unverified, with
// one read per run of slots that lie side by side in one segment. Errors as read_node_slot's.
Status read_node_slots(FileTable* files, std::span<const std::uint64_t> addresses, char* out);

}  // namespace braid::storage
