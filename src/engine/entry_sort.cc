#include "engine/entry_sort.h"

#include <braid/key.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <utility>

#include "storage/sort_run.h"
#include "util/assert.h"

namespace braid::engine {

namespace {
// As in a run: the lengths, then the value, then the key.
constexpr std::size_t kEntryHeader = storage::kEntryLengthsBytes + sizeof(std::uint64_t);

std::uint64_t head_of(std::string_view key) {
  unsigned char b[8] = {};
  std::memcpy(b, key.data(), std::min<std::size_t>(key.size(), 8));
  std::uint64_t h = 0;
  for (unsigned char c : b) h = h << 8 | c;
  return h;
}
}  // namespace

EntrySorter::EntrySorter(storage::FileSystem* fs, std::string dir, storage::FileTable* numbers,
                         std::size_t memory_bytes)
    : fs_(fs), dir_(std::move(dir)), numbers_(numbers), memory_bytes_(memory_bytes) {
  BRAID_ASSERT(memory_bytes_ > 0);
  BRAID_ASSERT(memory_bytes_ <= UINT32_MAX);  // arena offsets are 32-bit
}

EntrySorter::~EntrySorter() {
  for (const Run& r : runs_) remove_run(r);
}

namespace {
storage::EntryLengths lengths_at(const std::string& arena, std::uint32_t offset) {
  storage::EntryLengths lens;
  const bool valid = storage::decode_entry_lengths(arena.data() + offset, &lens);
  BRAID_DASSERT(valid);  // written by add()
  (void)valid;
  return lens;
}
}  // namespace

std::string_view EntrySorter::key_at(std::uint32_t offset) const {
  return {arena_.data() + offset + kEntryHeader, lengths_at(arena_, offset).key};
}

std::size_t EntrySorter::secondary_len_at(std::uint32_t offset) const {
  return lengths_at(arena_, offset).secondary;
}

std::uint64_t EntrySorter::value_at(std::uint32_t offset) const {
  std::uint64_t v = 0;
  std::memcpy(&v, arena_.data() + offset + storage::kEntryLengthsBytes, sizeof v);
  return v;
}

Status EntrySorter::add(std::string_view key, std::size_t secondary_len, std::uint64_t value) {
  BRAID_ASSERT(!drained_);
  const std::size_t need = kEntryHeader + key.size() + sizeof(Slot);
  if (!slots_.empty() && arena_.size() + slots_.size() * sizeof(Slot) + need > memory_bytes_) {
    if (Status s = spill(); !s.is_ok()) return s;
  }
  const auto lens = storage::encode_entry_lengths(key, secondary_len);
  slots_.push_back({head_of(key), static_cast<std::uint32_t>(arena_.size())});
  arena_.append(lens.data(), lens.size());
  arena_.append(reinterpret_cast<const char*>(&value), sizeof value);
  arena_.append(key);
  ++entries_;
  return Status::ok();
}

void EntrySorter::sort_buffer() {
  std::sort(slots_.begin(), slots_.end(), [this](const Slot& a, const Slot& b) {
    if (a.head != b.head) return a.head < b.head;
    return key_at(a.offset) < key_at(b.offset);
  });
}

Status EntrySorter::spill() {
  sort_buffer();
  Run run{numbers_->allocate(), 0};
  runs_.push_back(run);  // listed before it exists, so any path out removes it
  ++runs_written_;
  storage::SortRunWriter w;
  if (Status s = w.open(fs_, dir_, run.number); !s.is_ok()) return s;
  for (const Slot& slot : slots_) {
    Status s = w.add(key_at(slot.offset), secondary_len_at(slot.offset), value_at(slot.offset));
    if (!s.is_ok()) return s;
  }
  if (Status s = w.finish(); !s.is_ok()) return s;
  runs_.back().entries = w.entries();
  BRAID_ASSERT(w.entries() == slots_.size());
  // The buffer's memory is kept for the next run (its bound is what the build may hold).
  arena_.clear();
  slots_.clear();
  return Status::ok();
}

void EntrySorter::remove_run(const Run& run) {
  // A run left behind by a failed removal goes with the next open.
  (void)fs_->remove(dir_ + "/" + storage::sort_run_file_name(run.number));
}

Status EntrySorter::merge(const std::vector<Run>& runs, bool buffer, const Sink& sink) {
  std::vector<std::unique_ptr<storage::SortRunReader>> readers;
  readers.reserve(runs.size());
  for (const Run& r : runs) {
    readers.push_back(std::make_unique<storage::SortRunReader>());
    if (Status s = readers.back()->open(fs_, dir_, r.number, r.entries); !s.is_ok()) return s;
  }
  // Sources 0..runs-1 are the readers, source `runs` the buffer (at slots_[next_slot]).
  const std::size_t n = readers.size();
  std::size_t next_slot = 0;
  auto key_of = [&](std::size_t src) {
    return src < n ? readers[src]->key() : key_at(slots_[next_slot].offset);
  };
  std::vector<std::size_t> heap;  // a min-heap of sources by their current key
  auto later = [&](std::size_t a, std::size_t b) { return key_of(a) > key_of(b); };
  for (std::size_t i = 0; i < n; ++i) {
    bool more = false;
    if (Status s = readers[i]->next(&more); !s.is_ok()) return s;
    if (more) heap.push_back(i);
  }
  if (buffer && !slots_.empty()) heap.push_back(n);
  std::make_heap(heap.begin(), heap.end(), later);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), later);
    const std::size_t src = heap.back();
    bool more = false;
    if (src < n) {
      const storage::SortRunReader& r = *readers[src];
      if (Status s = sink(r.key(), r.secondary_len(), r.value()); !s.is_ok()) return s;
      if (Status s = readers[src]->next(&more); !s.is_ok()) return s;
    } else {
      const std::uint32_t off = slots_[next_slot].offset;
      if (Status s = sink(key_at(off), secondary_len_at(off), value_at(off)); !s.is_ok()) return s;
      more = ++next_slot < slots_.size();
    }
    if (more) {
      std::push_heap(heap.begin(), heap.end(), later);
    } else {
      heap.pop_back();
    }
  }
  readers.clear();  // closed before their files go
  for (const Run& r : runs) {
    remove_run(r);
    runs_.erase(std::find_if(runs_.begin(), runs_.end(),
                             [&](const Run& x) { return x.number == r.number; }));
  }
  return Status::ok();
}

Status EntrySorter::drain(const Sink& sink) {
  BRAID_ASSERT(!drained_);
  drained_ = true;
  sort_buffer();
  // Passes over the oldest runs until one merge can read every run left and the buffer.
  while (runs_.size() + 1 > kMaxFanIn) {
    const std::vector<Run> batch(runs_.begin(), runs_.begin() + kMaxFanIn);
    Run out{numbers_->allocate(), 0};
    runs_.push_back(out);
    ++runs_written_;
    storage::SortRunWriter w;
    if (Status s = w.open(fs_, dir_, out.number); !s.is_ok()) return s;
    Status s = merge(batch, false, [&](std::string_view k, std::size_t len, std::uint64_t v) {
      return w.add(k, len, v);
    });
    if (!s.is_ok()) return s;
    if (Status f = w.finish(); !f.is_ok()) return f;
    const auto it = std::find_if(runs_.begin(), runs_.end(),
                                 [&](const Run& x) { return x.number == out.number; });
    BRAID_ASSERT(it != runs_.end());
    it->entries = w.entries();
  }
  const std::vector<Run> last = runs_;
  Status s = merge(last, true, sink);
  arena_ = std::string();
  slots_ = std::vector<Slot>();
  return s;
}

}  // namespace braid::engine
