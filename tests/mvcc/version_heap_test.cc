#include "mvcc/version_heap.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <thread>
#include <vector>

namespace braid::mvcc {
namespace {

TEST(VersionHeap, ClassesCoverEverySizeAndRecycle) {
  for (std::size_t b = 1; b <= VersionHeap::kMaxBytes; b += (b < 600 ? 1 : 997)) {
    const std::size_t c = VersionHeap::class_of(b);
    ASSERT_LT(c, VersionHeap::kClasses);
    ASSERT_GE(VersionHeap::class_bytes(c), b);
    if (c > 0) {
      ASSERT_LT(VersionHeap::class_bytes(c - 1), b);
    }
  }
  VersionHeap heap;
  ASSERT_TRUE(heap.init(std::size_t{64} << 20, true).is_ok());
  VersionHeap::Cache a;
  VersionHeap::Cache b;
  std::vector<void*> ptrs;
  for (int i = 0; i < 10000; ++i) {
    void* p = heap.allocate(&a, 40);
    ASSERT_NE(p, nullptr);
    ASSERT_EQ(reinterpret_cast<std::uintptr_t>(p) % 16, 0u);
    ptrs.push_back(p);
  }
  const std::size_t committed = heap.committed_bytes();
  for (void* p : ptrs) heap.free(&b, p, 40);  // freed by another context
  heap.drain(&b);
  // Everything freed went back through whole batches (given back by `b` as its list grew, then
  // its remainder by drain): a third context gets each freed object exactly once and carves
  // nothing new (`a` would first hand out what is left of its own last batch).
  std::set<void*> freed(ptrs.begin(), ptrs.end());
  VersionHeap::Cache c;
  for (int i = 0; i < 10000; ++i) {
    void* p = heap.allocate(&c, 40);
    ASSERT_NE(p, nullptr);
    ASSERT_EQ(freed.erase(p), 1u) << "object " << i << " handed out twice or never freed";
  }
  EXPECT_TRUE(freed.empty());
  EXPECT_EQ(heap.committed_bytes(), committed);  // recycled, not carved anew
}

TEST(VersionHeap, ExhaustionAnswersNull) {
  VersionHeap heap;
  ASSERT_TRUE(heap.init(std::size_t{2} << 20, false).is_ok());
  VersionHeap::Cache c;
  int n = 0;
  while (heap.allocate(&c, 64 << 10) != nullptr) ++n;
  EXPECT_GT(n, 0);
  EXPECT_LE(n, 32);
  EXPECT_EQ(heap.allocate(&c, VersionHeap::kMaxBytes + 1), nullptr);
}

// Pages of [p, p + bytes) the process holds now (mincore), whole pages only.
std::size_t resident_pages(const void* p, std::size_t bytes) {
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto from = (reinterpret_cast<std::uintptr_t>(p) + page - 1) / page * page;
  const auto to = (reinterpret_cast<std::uintptr_t>(p) + bytes) / page * page;
  if (to <= from) return 0;
  std::vector<unsigned char> in((to - from) / page);
  if (::mincore(reinterpret_cast<void*>(from), to - from, in.data()) != 0) return SIZE_MAX;
  return static_cast<std::size_t>(
      std::count_if(in.begin(), in.end(), [](unsigned char c) { return (c & 1) != 0; }));
}

// Live objects keep a pattern of their own; any overlap with memory handed out twice, or a
// page given back under a live object, breaks it.
struct Live {
  void* p;
  std::size_t bytes;
  unsigned char mark;
};
void fill(const Live& l) { std::memset(l.p, l.mark, l.bytes); }
bool intact(const Live& l) {
  const auto* c = static_cast<const unsigned char*>(l.p);
  return std::all_of(c, c + l.bytes, [&](unsigned char x) { return x == l.mark; });
}

// `n` objects of `bytes` from `cache`, each filled with a mark of its own (from `first` on);
// fewer, with a failure, if the heap refuses one.
std::vector<Live> allocate_marked(VersionHeap& heap, VersionHeap::Cache* cache, int n,
                                  std::size_t bytes, unsigned first) {
  std::vector<Live> out;
  for (int i = 0; i < n; ++i) {
    void* p = heap.allocate(cache, bytes);
    EXPECT_NE(p, nullptr);
    if (p == nullptr) break;
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % 16, 0u);
    out.push_back(
        {p, bytes, static_cast<unsigned char>(1 + (first + static_cast<unsigned>(i)) % 251)});
    fill(out.back());
  }
  return out;
}

TEST(VersionHeap, FreePagesGoBackAndAreCarvedBeforeFreshMemory) {
  VersionHeap heap;
  ASSERT_TRUE(heap.init(std::size_t{256} << 20, false).is_ok());
  VersionHeap::Cache a;
  VersionHeap::Cache b;
  constexpr int kObjects = 40000;
  constexpr std::size_t kBytes = 160;
  const std::vector<Live> all = allocate_marked(heap, &a, kObjects, kBytes, 0);
  ASSERT_EQ(all.size(), std::size_t{kObjects});
  const std::size_t carved = heap.resident_bytes();
  ASSERT_GE(carved, kObjects * kBytes);
  // Every 500th object stays: most pages hold only free objects, a few hold a live one.
  std::vector<Live> kept;
  for (int i = 0; i < kObjects; ++i) {
    if (i % 500 == 0) {
      kept.push_back(all[static_cast<std::size_t>(i)]);
    } else {
      heap.free(&b, all[static_cast<std::size_t>(i)].p, kBytes);
    }
  }
  heap.drain(&b);
  const std::size_t listed = heap.central_free_bytes();
  EXPECT_GE(listed, (kObjects - kObjects / 500 - 1) * kBytes - 2 * 8192);
  EXPECT_TRUE(heap.release_due());

  const std::size_t given = heap.release_free(0);
  EXPECT_GT(given, (kObjects - 2 * (kObjects / 500)) * kBytes - 2 * (kObjects / 500) * 4096);
  EXPECT_EQ(heap.released_bytes(), given);
  EXPECT_EQ(heap.resident_bytes(), carved - given);
  // What stays listed sits on pages shared with live objects: little.
  EXPECT_LT(heap.central_free_bytes(), (kObjects / 500 + 1) * 2 * 4096);
  EXPECT_FALSE(heap.release_due());
  for (const Live& l : kept) ASSERT_TRUE(intact(l));
  // The pages really left: between two kept objects (80 KB apart) whole pages are gone.
  const std::size_t gap_pages =
      resident_pages(static_cast<char*>(kept[1].p) - 64 * 1024, 60 * 1024);
  EXPECT_EQ(gap_pages, 0u);

  // A second release with nothing new to give finds nothing.
  EXPECT_EQ(heap.release_free(0), 0u);

  // Allocations now take the listed objects, then the given-back runs, before fresh memory:
  // as many objects as were freed fit without carving past the old end.
  VersionHeap::Cache c;
  const std::vector<Live> again =
      allocate_marked(heap, &c, kObjects - static_cast<int>(kept.size()), kBytes, 100);
  ASSERT_EQ(again.size(), kObjects - kept.size());
  for (const Live& l : kept) ASSERT_TRUE(intact(l)) << "a live object was handed out again";
  for (const Live& l : again) ASSERT_TRUE(intact(l)) << "an object was handed out twice";
  EXPECT_LE(heap.resident_bytes(), carved + 2 * 8192);  // at most a batch or two beyond
}

// After a large drop the first release gives back what is free. Then a steady churn that
// frees as much as it allocates keeps more than a quarter of the heap listed: only what stayed
// listed through a window of allocations goes back, once, and the pages the churn uses are not
// given back and faulted in again round after round (each release a sort of every free object).
TEST(VersionHeap, ASteadyChurnIsNotReleasedRoundAfterRound) {
  VersionHeap heap;
  ASSERT_TRUE(heap.init(std::size_t{256} << 20, false).is_ok());
  VersionHeap::Cache cache;
  constexpr int kObjects = 40000;
  constexpr std::size_t kBytes = 160;
  std::vector<Live> all = allocate_marked(heap, &cache, kObjects, kBytes, 0);
  ASSERT_EQ(all.size(), std::size_t{kObjects});
  std::vector<Live> kept;
  for (int i = 0; i < kObjects; ++i) {
    if (i % 500 == 0) {
      kept.push_back(all[static_cast<std::size_t>(i)]);
    } else {
      heap.free(&cache, all[static_cast<std::size_t>(i)].p, kBytes);
    }
  }
  heap.drain(&cache);
  ASSERT_TRUE(heap.release_due());
  heap.maybe_release();
  const std::uint64_t first = heap.released_bytes();
  EXPECT_GT(first, 0u);
  std::vector<std::uint64_t> after_round;
  for (int round = 0; round < 40; ++round) {
    std::vector<Live> churn =
        allocate_marked(heap, &cache, 2000, kBytes, static_cast<unsigned>(round));
    ASSERT_EQ(churn.size(), 2000u);
    for (const Live& l : churn) ASSERT_TRUE(intact(l));
    for (const Live& l : churn) heap.free(&cache, l.p, kBytes);
    heap.drain(&cache);
    heap.maybe_release();
    after_round.push_back(heap.released_bytes());
  }
  // At most a few windows give anything back; the rest of the rounds give nothing.
  EXPECT_EQ(after_round.back(), after_round[9])
      << "first " << first << ", after 10 rounds " << after_round[9];
  for (const Live& l : kept) ASSERT_TRUE(intact(l));
}

TEST(VersionHeap, MixedClassesReleasedAndReusedKeepEveryLiveObject) {
  std::mt19937_64 rng(20261201);
  VersionHeap heap;
  ASSERT_TRUE(heap.init(std::size_t{512} << 20, false).is_ok());
  VersionHeap::Cache cache;
  std::vector<Live> live;
  unsigned char mark = 1;
  const auto allocate = [&](int n) {
    for (int i = 0; i < n; ++i) {
      const std::size_t bytes = 32 + rng() % (rng() % 8 == 0 ? 6000 : 300);
      void* p = heap.allocate(&cache, bytes);
      ASSERT_NE(p, nullptr);
      live.push_back({p, bytes, mark});
      fill(live.back());
      mark = static_cast<unsigned char>(mark % 254 + 1);
    }
  };
  for (int round = 0; round < 6; ++round) {
    SCOPED_TRACE(round);
    allocate(30000);
    // Free most, in runs (as eviction frees a range of records) and at random.
    std::shuffle(live.begin(), live.end(), rng);
    const std::size_t stay = live.size() / (round % 2 == 0 ? 10 : 3);
    for (std::size_t i = stay; i < live.size(); ++i) heap.free(&cache, live[i].p, live[i].bytes);
    live.resize(stay);
    heap.drain(&cache);
    (void)heap.release_free(heap.resident_bytes() / 8);
    for (const Live& l : live) ASSERT_TRUE(intact(l));
  }
  EXPECT_GT(heap.released_bytes(), 0u);
  // No two live objects overlap.
  std::map<std::uintptr_t, std::size_t> spans;
  for (const Live& l : live) spans[reinterpret_cast<std::uintptr_t>(l.p)] = l.bytes;
  std::uintptr_t end = 0;
  for (const auto& [at, bytes] : spans) {
    ASSERT_GE(at, end);
    end = at + bytes;
  }
}

// On huge pages only whole huge pages go back: giving back part of one would split it, and
// every live version left on it would cost a TLB miss more.
TEST(VersionHeap, OnHugePagesOnlyWholeHugePagesGoBack) {
  VersionHeap heap;
  ASSERT_TRUE(heap.init(std::size_t{256} << 20, true).is_ok());
  VersionHeap::Cache a;
  VersionHeap::Cache b;
  constexpr int kObjects = 60000;  // 9.6 MB: four huge pages and more
  constexpr std::size_t kBytes = 160;
  const std::vector<Live> all = allocate_marked(heap, &a, kObjects, kBytes, 0);
  ASSERT_EQ(all.size(), std::size_t{kObjects});
  // The first and the last objects stay: the huge pages they sit on stay whole.
  for (int i = 1; i + 1 < kObjects; ++i) heap.free(&b, all[static_cast<std::size_t>(i)].p, kBytes);
  heap.drain(&b);
  const std::size_t given = heap.release_free(0);
  const std::size_t huge = std::size_t{2} << 20;
  if (heap.huge_pages()) {
    EXPECT_EQ(given % huge, 0u);
    EXPECT_GE(given, 2 * huge);  // at least the two huge pages between the kept objects
    // The kept objects' huge pages stay whole (resident).
    const std::size_t page = 4096;
    EXPECT_EQ(resident_pages(all.front().p, page), 1u);
    EXPECT_EQ(resident_pages(static_cast<char*>(all.front().p) + huge - page, page), 1u);
  } else {
    EXPECT_GT(given, kObjects * kBytes / 2);
  }
  EXPECT_TRUE(intact(all.front()));
  EXPECT_TRUE(intact(all.back()));
  VersionHeap::Cache c;
  const std::vector<Live> again = allocate_marked(heap, &c, kObjects, kBytes, 100);
  ASSERT_EQ(again.size(), std::size_t{kObjects});
  EXPECT_TRUE(intact(all.front()));
  EXPECT_TRUE(intact(all.back()));
  for (const Live& l : again) ASSERT_TRUE(intact(l));
}

// With small releases (where the index pages under a budget) 4 KiB pages go back even on huge
// pages: the pages between scattered live objects, which whole huge pages never free.
TEST(VersionHeap, SmallReleasesGiveBackPagesBetweenScatteredLiveObjects) {
  for (const bool small : {false, true}) {
    SCOPED_TRACE(small ? "small releases" : "huge-page releases");
    VersionHeap heap;
    ASSERT_TRUE(heap.init(std::size_t{256} << 20, true).is_ok());
    heap.set_small_releases(small);
    VersionHeap::Cache a;
    VersionHeap::Cache b;
    constexpr int kObjects = 60000;  // 9.6 MB
    constexpr std::size_t kBytes = 160;
    constexpr int kKeepEvery = 1024;  // one live object every 160 KiB: on every huge page
    const std::vector<Live> all = allocate_marked(heap, &a, kObjects, kBytes, 0);
    ASSERT_EQ(all.size(), std::size_t{kObjects});
    for (int i = 0; i < kObjects; ++i) {
      if (i % kKeepEvery != 0) heap.free(&b, all[static_cast<std::size_t>(i)].p, kBytes);
    }
    heap.drain(&b);
    const std::size_t given = heap.release_free(0);
    if (small || !heap.huge_pages()) {
      // All but the pages the kept objects sit on (and the run ends short of a page).
      EXPECT_GT(given, std::size_t{kObjects} * kBytes * 9 / 10);
      EXPECT_EQ(given % 4096, 0u);
    } else {
      EXPECT_EQ(given, 0u);  // every huge page holds a live object
    }
    for (int i = 0; i < kObjects; i += kKeepEvery) {
      ASSERT_TRUE(intact(all[static_cast<std::size_t>(i)]));
    }
    VersionHeap::Cache c;
    const std::vector<Live> again = allocate_marked(heap, &c, kObjects, kBytes, 100);
    ASSERT_EQ(again.size(), std::size_t{kObjects});
    for (const Live& l : again) ASSERT_TRUE(intact(l));
    for (int i = 0; i < kObjects; i += kKeepEvery) {
      ASSERT_TRUE(intact(all[static_cast<std::size_t>(i)]));
    }
  }
}

// Releases race allocations and frees on other threads (run under TSan): no live object is
// touched, nothing is handed out twice.
TEST(VersionHeap, ReleasesRaceAllocationsAndFrees) {
  VersionHeap heap;
  ASSERT_TRUE(heap.init(std::size_t{512} << 20, true).is_ok());
  std::atomic<bool> stop{false};
  std::atomic<int> failures{0};
  const auto worker = [&](unsigned seed) {
    std::mt19937 rng(seed);
    VersionHeap::Cache cache;
    std::vector<Live> live;
    for (int step = 0; step < 60000; ++step) {
      if (live.size() < 4000 || rng() % 3 != 0) {
        const std::size_t bytes = 32 + rng() % 400;
        void* p = heap.allocate(&cache, bytes);
        if (p == nullptr) {
          failures.fetch_add(1);
          break;
        }
        live.push_back({p, bytes, static_cast<unsigned char>(seed * 16 + step % 16)});
        fill(live.back());
      }
      if (step % 20000 == 19999) {  // a large drop of the live set
        for (const Live& l : live) {
          if (!intact(l)) failures.fetch_add(1);
          heap.free(&cache, l.p, l.bytes);
        }
        live.clear();
      }
    }
    for (const Live& l : live) {
      if (!intact(l)) failures.fetch_add(1);
      heap.free(&cache, l.p, l.bytes);
    }
    heap.drain(&cache);
  };
  std::thread releaser([&] {
    while (!stop.load()) {
      (void)heap.release_free(0);
      std::this_thread::yield();
    }
  });
  std::thread t1(worker, 1);
  std::thread t2(worker, 2);
  t1.join();
  t2.join();
  stop.store(true);
  releaser.join();
  EXPECT_EQ(failures.load(), 0);
  (void)heap.release_free(0);
  EXPECT_GT(heap.released_bytes(), 0u);
}

}  // namespace
}  // namespace braid::mvcc
