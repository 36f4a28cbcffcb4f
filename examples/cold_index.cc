// A secondary index over a table that lives on storage. Customers are bulk-loaded straight to
// the directory (nothing stays in memory); the database is then reopened under a memory budget,
// as a process that restarts would open it, and an index by city is created. The first time,
// create_index reads every record: the evicted ones in file order, many to a read (the way
// `braid check` reads them), not one read per record in key order. The index is created with a
// key version, so a checkpoint stores it; the program then restarts once more, and this time
// create_index attaches to the stored entries without reading the table. After each, the program
// asks the index for every city and checks that each customer is found under its own.
//
//   cold_index DIR [customers] [budget_mib]   (DIR: a new or empty directory; it is left in place)
//   cold_index DIR customers budget_mib time VERSION
//       times one open of DIR (made by the first form) and its create_index with key version
//       VERSION (1 attaches to the stored index, another builds it), then exits: no check and
//       no checkpoint but the open's own, which keeps the stored index as it was, so the run
//       can be repeated (with the page cache dropped before each, say)
#include <braid/braid.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

namespace {

constexpr std::uint32_t kCities = 50;

std::string city_of(std::uint32_t customer) {
  return "city-" + std::to_string(customer * 7919u % kCities);
}

// A customer's value: its city, a separator, then the rest of the row (~100 bytes in all).
std::string customer_value(std::uint32_t customer) {
  std::string v = city_of(customer) + "|customer " + std::to_string(customer) + " ";
  v.resize(100, '.');
  return v;
}

// The index's key function: the city (everything before the '|').
bool by_city(std::string_view /*primary_key*/, std::string_view value, braid::Key* out) {
  const std::size_t bar = value.find('|');
  if (bar == std::string_view::npos) return false;
  out->str(value.substr(0, bar));
  return true;
}

// The customer number back from its key (Key::u32: four bytes, big-endian).
std::uint32_t customer_of(std::string_view key) {
  std::uint32_t id = 0;
  for (std::size_t i = 0; i < 4 && i < key.size(); ++i) {
    id = id << 8 | static_cast<unsigned char>(key[i]);
  }
  return id;
}

int fail(const char* what, const braid::Status& s) {
  std::fprintf(stderr, "cold_index: %s: %s\n", what, s.to_string().c_str());
  return 1;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// Every customer under its own city, each exactly once: 0, or the exit code of a failure.
int check_cities(braid::Database& db, braid::Index& index, std::uint32_t customers) {
  std::vector<std::uint8_t> seen(customers, 0);
  std::uint64_t found = 0;
  for (std::uint32_t c = 0; c < kCities; ++c) {
    const std::string city = "city-" + std::to_string(c);
    auto tx = db.begin();
    if (!tx.is_ok()) return fail("begin", tx.status());
    bool wrong = false;
    braid::Status s = tx->lookup_index(index, braid::Key().str(city).view(), 0,
                                       [&](std::string_view pk, std::string_view value) {
                                         const std::uint32_t id = customer_of(pk);
                                         wrong = wrong || id >= customers || seen[id] != 0 ||
                                                 value != customer_value(id) || city_of(id) != city;
                                         if (!wrong) seen[id] = 1;
                                         ++found;
                                         return true;
                                       });
    if (!s.is_ok()) return fail("lookup_index", s);
    tx->abort();
    if (wrong) {
      std::fprintf(stderr, "cold_index: %s lists a customer that is not its own\n", city.c_str());
      return 1;
    }
  }
  if (found != customers) {
    std::fprintf(stderr, "cold_index: the index lists %llu customers of %u\n",
                 static_cast<unsigned long long>(found), customers);
    return 1;
  }
  std::printf("every customer found under its city (%u cities)\n", kCities);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || (argc > 4 && (argc != 6 || std::string(argv[4]) != "time"))) {
    std::fprintf(stderr,
                 "usage: cold_index DIR [customers] [budget_mib]\n"
                 "       cold_index DIR customers budget_mib time VERSION\n");
    return 2;
  }
  const bool time_only = argc == 6;
  const std::uint32_t customers =
      argc > 2 ? static_cast<std::uint32_t>(std::strtoul(argv[2], nullptr, 10)) : 100000;
  const std::uint64_t budget_mib = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 16;
  if (customers == 0 || budget_mib == 0) {
    std::fprintf(stderr, "cold_index: customers and budget_mib must be positive\n");
    return 2;
  }
  braid::Options options;
  options.directory = argv[1];
  options.workers = 1;

  if (!time_only) {
    auto opened = braid::Database::open(options);
    if (!opened.is_ok()) return fail("open", opened.status());
    std::unique_ptr<braid::Database> db = std::move(opened).value();
    auto table = db->create_table("customers");
    if (!table.is_ok()) return fail("create_table", table.status());
    std::uint32_t next = 0;
    std::string key;
    std::string value;
    braid::BulkLoadOptions cold;
    cold.keep_in_memory = false;  // every record starts on storage
    braid::Status loaded = db->bulk_load(
        **table,
        [&](std::string_view* k, std::string_view* v) {
          if (next == customers) return false;
          key = std::string(braid::Key().u32(next).view());
          value = customer_value(next);
          ++next;
          *k = key;
          *v = value;
          return true;
        },
        cold);
    if (!loaded.is_ok()) return fail("bulk_load", loaded);
  }

  // Restarts: the records stay on storage; only what the budget allows comes into memory, the
  // index included: its leaves page too (Options::page_index_leaves, on by default), so an
  // index larger than the budget is built (its entries sorted first, in runs on storage past a
  // share of the budget) and read through it.
  options.memory_budget_bytes = budget_mib << 20;
  braid::IndexOptions stored;
  stored.key_version = 1;  // bump it whenever by_city changes what it derives
  if (time_only) stored.key_version = std::strtoull(argv[5], nullptr, 10);
  for (int restart = 0; restart < (time_only ? 1 : 2); ++restart) {
    const auto opening = std::chrono::steady_clock::now();
    auto opened = braid::Database::open(options);
    if (!opened.is_ok()) return fail("reopen", opened.status());
    std::unique_ptr<braid::Database> db = std::move(opened).value();
    auto table = db->open_table("customers");
    if (!table.is_ok()) return fail("open_table", table.status());
    std::printf("open: %.2f s\n", seconds_since(opening));
    const auto start = std::chrono::steady_clock::now();
    auto index = db->create_index(**table, "by_city", by_city, stored);
    if (!index.is_ok()) return fail("create_index", index.status());
    const double took = seconds_since(start);
    const braid::DatabaseStats stats = db->stats();
    std::printf(
        "create_index over %u customers (%s): %.2f s, %llu entries from storage, "
        "%llu records read back in %llu reads\n",
        customers, stats.indexes_attached != 0 ? "attached" : "built", took,
        static_cast<unsigned long long>(stats.index_entries_attached),
        static_cast<unsigned long long>(stats.cold_reads),
        static_cast<unsigned long long>(stats.cold_read_ios));
    if (time_only) break;
    if (int rc = check_cities(*db, **index, customers); rc != 0) return rc;
    // The checkpoint stores the index for the next open.
    if (braid::Status st = db->checkpoint(); !st.is_ok()) return fail("checkpoint", st);
  }
  return 0;
}
