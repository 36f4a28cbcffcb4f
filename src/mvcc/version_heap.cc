#include "mvcc/version_heap.h"

#include <sys/mman.h>

#include <algorithm>
#include <bit>
#include <string>

#include "util/assert.h"

namespace braid::mvcc {

namespace {
void*& next_of(void* p) { return *static_cast<void**>(p); }

// A central list holds whole batches, so that a transfer is O(1): refilling by walking a list of
// freed versions would chase one cold pointer per object under the mutex, every one a DRAM
// miss. A batch's first
// object carries, in its second word, the next batch and the batch's length in the top 16 bits.
// Every class is at least 32 bytes, so the second word exists.
constexpr unsigned kCountShift = 48;
constexpr std::uint64_t kLinkMask = (std::uint64_t{1} << kCountShift) - 1;

std::uint64_t& batch_word(void* p) { return static_cast<std::uint64_t*>(p)[1]; }
void* next_batch(void* first) {
  return reinterpret_cast<void*>(static_cast<std::uintptr_t>(batch_word(first) & kLinkMask));
}
std::uint32_t batch_count(void* first) {
  return static_cast<std::uint32_t>(batch_word(first) >> kCountShift);
}

constexpr std::size_t kPage = 4096;
constexpr std::size_t kHugePage = std::size_t{2} << 20;

void push_batch(void** central, void* first, std::uint32_t n) {
  BRAID_DASSERT(n > 0);
  BRAID_DASSERT(n < (1u << 16));
  BRAID_DASSERT((reinterpret_cast<std::uintptr_t>(*central) & ~kLinkMask) == 0);
  batch_word(first) =
      reinterpret_cast<std::uintptr_t>(*central) | (std::uint64_t{n} << kCountShift);
  *central = first;
}

// The next allocation from a cache writes this object right away (a new version's header and
// payload), and its first word is the list link the pop after it reads: fetch both now, with
// intent to write, so neither the pop nor the version's stores wait for DRAM. The whole class,
// not the bytes asked for now: a table's rows vary in length (TPC-C's customer and stock), and
// the next object of a class may serve a longer one. Its stores must not miss: the CAS that
// publishes a version waits for every store before it, and a store that missed held that CAS
// for a DRAM round trip, where the install's CAS then spent most of its time. Capped at 1 KiB:
// 16 prefetches per allocation at most; longer payloads stream from one address on.
void prefetch_next(const void* p, std::size_t class_bytes) {
  if (p == nullptr) return;
  const char* c = static_cast<const char*>(p);
  const std::size_t n = class_bytes < 1024 ? class_bytes : 1024;
  for (std::size_t off = 0; off < n; off += 64) __builtin_prefetch(c + off, 1, 3);
}
}  // namespace

Status VersionHeap::init(std::size_t reserve_bytes, bool huge_pages, std::size_t prefault_bytes) {
  BRAID_ASSERT(prefault_bytes <= reserve_bytes);
  if (Status s = arena_.reserve(reserve_bytes, huge_pages); !s.is_ok()) return s;
  if (Status s = arena_.populate(prefault_bytes); !s.is_ok()) {
    return Status::io_error("Options::prefault_version_bytes: " + std::string(s.message()));
  }
  return Status::ok();
}

VersionHeap::~VersionHeap() = default;  // the arena unmaps everything

std::size_t VersionHeap::class_of(std::size_t bytes) {
  BRAID_DASSERT(bytes > 0);
  BRAID_DASSERT(bytes <= kMaxBytes);
  if (bytes <= 256) return bytes <= 32 ? 0 : (bytes + 15) / 16 - 2;
  return 15 + static_cast<std::size_t>(std::bit_width(bytes - 1)) - 9;
}

std::size_t VersionHeap::class_bytes(std::size_t c) {
  return c < 15 ? (c + 2) * 16 : std::size_t{512} << (c - 15);
}

std::uint32_t VersionHeap::batch_of(std::size_t c) {
  // About 8 KiB per transfer, at least 2 objects: a context holds at most two batches per class.
  const std::size_t n = (std::size_t{8} << 10) / class_bytes(c);
  return static_cast<std::uint32_t>(n < 2 ? 2 : (n > 128 ? 128 : n));
}

bool VersionHeap::refill(Cache* cache, std::size_t c) {
  BRAID_DASSERT(cache->head[c] == nullptr);
  BRAID_DASSERT(cache->count[c] == 0);
  const std::uint32_t want = batch_of(c);
  const std::size_t size = class_bytes(c);
  std::lock_guard<std::mutex> guard(mutex_);
  if (void* first = central_[c]; first != nullptr) {
    central_[c] = next_batch(first);
    cache->head[c] = first;
    cache->count[c] = batch_count(first);
    const std::size_t left =
        central_bytes_.load(std::memory_order_relaxed) - cache->count[c] * size;
    central_bytes_.store(left, std::memory_order_relaxed);
    // (Before the first release there is no window: kNoWindow stays.)
    if (const std::size_t low = window_low_.load(std::memory_order_relaxed);
        low != kNoWindow && left < low) {
      window_low_.store(left, std::memory_order_relaxed);
    }
    took(cache->count[c] * size);
    return true;
  }
  if (!runs_.empty()) {
    std::uint32_t got = 0;
    if (void* head = carve_run(size, want, &got); head != nullptr) {
      cache->head[c] = head;
      cache->count[c] = got;
      took(got * size);
      return true;
    }
  }
  const std::size_t need = want * size;
  const std::size_t cursor = cursor_.load(std::memory_order_relaxed);
  if (cursor + need > arena_.reserved() || !arena_.ensure_committed(cursor + need).is_ok()) {
    return false;  // exhausted: a partial batch would only postpone the same answer
  }
  // Linked back to front so the cache hands out ascending addresses (the pages fault in order).
  void* head = nullptr;
  for (std::uint32_t i = want; i-- > 0;) {
    void* p = arena_.base() + cursor + i * size;
    next_of(p) = head;
    head = p;
  }
  cursor_.store(cursor + need, std::memory_order_relaxed);
  cache->head[c] = head;
  cache->count[c] = want;
  took(need);
  return true;
}

void* VersionHeap::allocate(Cache* cache, std::size_t bytes) {
  if (bytes > kMaxBytes) return nullptr;
  const std::size_t c = class_of(bytes);
  if (cache->head[c] == nullptr && !refill(cache, c)) return nullptr;
  void* p = cache->head[c];
  void* next = next_of(p);
  cache->head[c] = next;
  --cache->count[c];
  prefetch_next(next, class_bytes(c));
  return p;
}

void VersionHeap::free(Cache* cache, void* p, std::size_t bytes) {
  const std::size_t c = class_of(bytes);
  next_of(p) = cache->head[c];
  cache->head[c] = p;
  if (++cache->count[c] < 2 * batch_of(c)) return;
  // Give one batch back so memory freed here can serve other contexts.
  std::uint32_t n = batch_of(c);
  void* first = cache->head[c];
  void* last = first;
  for (std::uint32_t i = 1; i < n; ++i) last = next_of(last);
  cache->head[c] = next_of(last);
  cache->count[c] -= n;
  next_of(last) = nullptr;
  std::lock_guard<std::mutex> guard(mutex_);
  add_central(c, first, n);
}

void VersionHeap::add_central(std::size_t c, void* first, std::uint32_t n) {
  push_batch(&central_[c], first, n);
  central_bytes_.store(central_bytes_.load(std::memory_order_relaxed) + n * class_bytes(c),
                       std::memory_order_relaxed);
  window_given_.store(window_given_.load(std::memory_order_relaxed) + n * class_bytes(c),
                      std::memory_order_relaxed);
}

void VersionHeap::drain(Cache* cache) {
  std::lock_guard<std::mutex> guard(mutex_);
  for (std::size_t c = 0; c < kClasses; ++c) {
    if (cache->head[c] != nullptr) add_central(c, cache->head[c], cache->count[c]);
    cache->head[c] = nullptr;
    cache->count[c] = 0;
  }
}

std::size_t VersionHeap::granule() const {
  return arena_.huge_pages_advised() && !small_releases_ ? kHugePage : kPage;
}

std::size_t VersionHeap::pages_inside(Run r, std::size_t g) {
  const std::size_t from = (r.begin + g - 1) / g * g;
  const std::size_t to = r.end / g * g;
  return to > from ? to - from : 0;
}

void* VersionHeap::carve_run(std::size_t size, std::uint32_t want, std::uint32_t* got) {
  for (std::size_t i = runs_.size(); i-- > 0;) {
    Run& r = runs_[i];
    const std::size_t fit = (r.end - r.begin) / size;
    if (fit == 0) continue;  // a sliver: it joins its neighbours when they are freed
    const auto n = static_cast<std::uint32_t>(fit < want ? fit : want);
    const std::size_t g = granule();
    const std::size_t before = pages_inside(r, g);
    const std::size_t at = r.begin;
    r.begin += n * size;
    const std::size_t after = pages_inside(r, g);
    BRAID_DASSERT(before >= after);
    released_now_.store(released_now_.load(std::memory_order_relaxed) - (before - after),
                        std::memory_order_relaxed);
    if (r.begin == r.end) runs_.erase(runs_.begin() + static_cast<std::ptrdiff_t>(i));
    void* head = nullptr;
    for (std::uint32_t k = n; k-- > 0;) {
      void* p = arena_.base() + at + k * size;
      next_of(p) = head;
      head = p;
    }
    *got = n;
    return head;
  }
  return nullptr;
}

bool VersionHeap::release_due() const {
  const std::size_t free = central_bytes_.load(std::memory_order_relaxed);
  if (free < kReleaseFloor) return false;
  if (free < resident_bytes() / 4) return false;
  return !releasing_.load(std::memory_order_relaxed);
}

void VersionHeap::start_window() {
  window_low_.store(central_bytes_.load(std::memory_order_relaxed), std::memory_order_relaxed);
  window_taken_.store(0, std::memory_order_relaxed);
  window_given_.store(0, std::memory_order_relaxed);
}

void VersionHeap::maybe_release() {
  if (!release_due()) return;
  const std::size_t resident = resident_bytes();
  const std::size_t low = window_low_.load(std::memory_order_relaxed);
  if (low == kNoWindow) {
    (void)release_free(resident / 8);
    return;
  }
  const std::size_t taken = window_taken_.load(std::memory_order_relaxed);
  if (taken + window_given_.load(std::memory_order_relaxed) < resident / 8) return;  // too young
  const std::size_t listed = central_bytes_.load(std::memory_order_relaxed);
  const std::size_t idle = std::max(low, listed > taken ? listed - taken : 0);
  if (idle < kReleaseFloor) {
    std::lock_guard<std::mutex> guard(mutex_);
    start_window();
    return;
  }
  (void)release_free(std::max(resident / 8, listed - std::min(listed, idle)));
}

std::size_t VersionHeap::release_free(std::size_t keep) {
  std::unique_lock<std::mutex> one(release_mutex_, std::try_to_lock);
  if (!one.owns_lock()) return 0;
  releasing_.store(true, std::memory_order_relaxed);
  struct Clear {
    std::atomic<bool>* flag;
    ~Clear() { flag->store(false, std::memory_order_relaxed); }
  } clear{&releasing_};

  // Take the central lists and the runs whole, so the walk and the sort below hold no lock.
  void* lists[kClasses];
  std::vector<Run> old;
  std::size_t g = 0;  // granule(), read where the arena's growth cannot change it
  {
    std::lock_guard<std::mutex> guard(mutex_);
    g = granule();
    if (central_bytes_.load(std::memory_order_relaxed) <= keep) {
      start_window();
      return 0;
    }
    for (std::size_t c = 0; c < kClasses; ++c) {
      lists[c] = central_[c];
      central_[c] = nullptr;
    }
    central_bytes_.store(0, std::memory_order_relaxed);
    old.swap(runs_);
  }
  std::size_t old_pages = 0;
  for (const Run& r : old) old_pages += pages_inside(r, g);

  // Every free object as one word: its offset in 16-byte units above its class (5 bits). The
  // batch heads give the count first, so the vector is sized once: 8 bytes per object.
  static_assert(kClasses <= 32);
  constexpr unsigned kClassBits = 5;
  std::size_t objects = 0;
  for (std::size_t c = 0; c < kClasses; ++c) {
    for (void* b = lists[c]; b != nullptr; b = next_batch(b)) objects += batch_count(b);
  }
  std::vector<std::uint64_t> items;
  items.reserve(objects);
  const char* base = arena_.base();
  for (std::size_t c = 0; c < kClasses; ++c) {
    for (void* b = lists[c]; b != nullptr;) {
      void* const following = next_batch(b);
      void* p = b;
      for (std::uint32_t k = batch_count(b); k-- > 0; p = next_of(p)) {
        BRAID_DASSERT(p != nullptr);
        const auto off = static_cast<std::uint64_t>(static_cast<const char*>(p) - base);
        BRAID_DASSERT(off % 16 == 0);
        items.push_back((off / 16) << kClassBits | c);
      }
      b = following;
    }
  }
  std::sort(items.begin(), items.end());
  std::sort(old.begin(), old.end(), [](const Run& a, const Run& b) { return a.begin < b.begin; });
  const auto begin_of = [](std::uint64_t item) {
    return static_cast<std::size_t>(item >> kClassBits) * 16;
  };
  const auto class_of_item = [](std::uint64_t item) {
    return static_cast<std::size_t>(item & ((1u << kClassBits) - 1));
  };

  // Runs of free memory, ascending: objects and old runs that touch end to end.
  struct Span {
    Run run;
    std::size_t object_bytes;
    bool old;  // holds pages given back before: given back again, whatever `keep` says
    bool release;
  };
  std::vector<Span> spans;
  std::size_t listed = 0;
  {
    std::size_t i = 0, j = 0;
    while (i < items.size() || j < old.size()) {
      const bool take_old =
          j < old.size() && (i == items.size() || old[j].begin < begin_of(items[i]));
      Run r;
      std::size_t bytes = 0;
      if (take_old) {
        r = old[j++];
      } else {
        r.begin = begin_of(items[i]);
        bytes = class_bytes(class_of_item(items[i++]));
        r.end = r.begin + bytes;
      }
      listed += bytes;
      if (!spans.empty() && spans.back().run.end == r.begin) {
        spans.back().run.end = r.end;
        spans.back().object_bytes += bytes;
        spans.back().old |= take_old;
      } else {
        BRAID_DASSERT(spans.empty() || spans.back().run.end < r.begin);  // no object twice
        spans.push_back({r, bytes, take_old, false});
      }
    }
  }
  // Highest addresses first, so what stays listed and what is carved again packs low.
  for (std::size_t k = spans.size(); k-- > 0;) {
    Span& s = spans[k];
    const bool worth = listed > keep && pages_inside(s.run, g) >= kMinReleaseRun;
    if (!s.old && !worth) continue;
    s.release = true;
    listed -= s.object_bytes;
  }

  std::vector<Run> runs;
  std::size_t new_pages = 0;
  for (const Span& s : spans) {
    if (!s.release) continue;
    runs.push_back(s.run);
    const std::size_t inside = pages_inside(s.run, g);
    new_pages += inside;
    if (inside == 0) continue;
    const std::size_t from = (s.run.begin + g - 1) / g * g;
    // A page given back reads as zeros when touched again; nothing reads a free object but the
    // carving that writes it, so no failure here can be observed (the pages just stay).
    (void)::madvise(arena_.base() + from, inside, MADV_DONTNEED);
  }
  std::reverse(runs.begin(), runs.end());  // runs_ is kept descending

  // The objects that stay listed, relinked into batches of their class.
  void* heads[kClasses] = {};
  std::uint32_t counts[kClasses] = {};
  std::vector<std::pair<void*, std::uint32_t>> batches[kClasses];
  std::size_t at = 0;
  for (const std::uint64_t item : items) {
    const std::size_t off = begin_of(item);
    while (spans[at].run.end <= off) ++at;
    if (spans[at].release) continue;
    const std::size_t c = class_of_item(item);
    void* p = arena_.base() + off;
    next_of(p) = heads[c];
    heads[c] = p;
    if (++counts[c] == batch_of(c)) {
      batches[c].emplace_back(heads[c], counts[c]);
      heads[c] = nullptr;
      counts[c] = 0;
    }
  }
  std::lock_guard<std::mutex> guard(mutex_);
  for (std::size_t c = 0; c < kClasses; ++c) {
    for (const auto& [first, n] : batches[c]) add_central(c, first, n);
    if (heads[c] != nullptr) add_central(c, heads[c], counts[c]);
  }
  BRAID_DASSERT(runs_.empty());  // only a release adds runs, and this one holds them
  runs_ = std::move(runs);
  start_window();
  released_now_.store(new_pages, std::memory_order_relaxed);
  BRAID_DASSERT(new_pages >= old_pages);
  const std::size_t given = new_pages - old_pages;
  released_total_.fetch_add(given, std::memory_order_relaxed);
  return given;
}

}  // namespace braid::mvcc
