// The same bank as bank_transfer.cc, written as coroutine transactions that the database's
// workers run: each worker interleaves many open transactions and switches among them where
// one would wait for memory, so the application never blocks inside a transaction. Several
// application threads hand transactions over with submit() (non-blocking; each keeps up to
// `kInFlight` of them outstanding) and execute() (submit and wait).
//
//   bank_coroutines [app-threads] [transfers-per-thread] [workers]
#include <braid/braid.h>
#include <braid/tx.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr std::uint32_t kAccounts = 1000;
constexpr std::int64_t kOpening = 100;
constexpr std::size_t kInFlight = 32;

braid::Key account_key(std::uint32_t id) { return braid::Key().str("acct").u32(id); }
std::int64_t parse(std::string_view v) { return std::strtoll(std::string(v).c_str(), nullptr, 10); }

// Coroutine parameters are taken by value: the frame outlives the caller's expression (see
// <braid/task.h>). Returning OK commits; returning an error aborts. A Conflict is retried by the
// worker (SubmitOptions::conflict_retries), which calls the function again.
braid::Task<braid::Status> transfer(braid::Tx& tx, braid::Table* accounts, std::uint32_t from,
                                    std::uint32_t to, std::int64_t amount) {
  const braid::Key kf = account_key(from), kt = account_key(to);
  braid::Result<std::string_view> a = co_await tx.get(*accounts, kf);
  if (!a.is_ok()) co_return a.status();
  const std::int64_t balance_from = parse(*a);  // views are valid until the next operation
  braid::Result<std::string_view> b = co_await tx.get(*accounts, kt);
  if (!b.is_ok()) co_return b.status();
  const std::int64_t balance_to = parse(*b);
  if (balance_from < amount) co_return braid::Status::ok();
  braid::Status s = co_await tx.update(*accounts, kf, std::to_string(balance_from - amount));
  if (!s.is_ok()) co_return s;
  co_return co_await tx.update(*accounts, kt, std::to_string(balance_to + amount));
}

braid::Task<braid::Status> open_accounts(braid::Tx& tx, braid::Table* accounts) {
  for (std::uint32_t id = 0; id < kAccounts; ++id) {
    braid::Status s = co_await tx.insert(*accounts, account_key(id), std::to_string(kOpening));
    if (!s.is_ok()) co_return s;
  }
  co_return braid::Status::ok();
}

braid::Task<braid::Status> audit(braid::Tx& tx, braid::Table* accounts, std::int64_t* total,
                                 std::uint32_t* seen) {
  co_return co_await tx.scan(*accounts, "", "", 0, [&](std::string_view, std::string_view v) {
    *total += parse(v);
    ++*seen;
    return true;
  });
}

}  // namespace

int main(int argc, char** argv) {
  const int apps = argc > 1 ? std::atoi(argv[1]) : 3;
  const int per_thread = argc > 2 ? std::atoi(argv[2]) : 20000;
  const int workers = argc > 3 ? std::atoi(argv[3]) : 2;
  if (apps < 1 || apps > 64 || per_thread < 0 || workers < 1 || workers > 64) {
    std::fprintf(stderr, "usage: bank_coroutines [app-threads] [transfers-per-thread] [workers]\n");
    return 2;
  }
  braid::Options options;
  options.workers = static_cast<std::uint32_t>(workers);
  options.exec.mode = braid::ExecMode::kInterleaved;  // the default, spelled out
  auto opened = braid::Database::open(options);
  if (!opened.is_ok()) {
    std::fprintf(stderr, "open: %s\n", opened.status().to_string().c_str());
    return 1;
  }
  braid::Database& db = **opened;
  braid::Table* accounts = *db.create_table("accounts");
  if (braid::Status s =
          db.execute([accounts](braid::Tx& tx) { return open_accounts(tx, accounts); });
      !s.is_ok()) {
    std::fprintf(stderr, "opening accounts: %s\n", s.to_string().c_str());
    return 1;
  }

  braid::SubmitOptions retry;
  retry.conflict_retries = 100;
  std::vector<std::thread> threads;
  std::vector<std::string> failures(apps);
  std::vector<std::uint64_t> committed(apps);
  for (int t = 0; t < apps; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(static_cast<std::uint32_t>(t + 1));
      std::uniform_int_distribution<std::uint32_t> pick(0, kAccounts - 1);
      std::deque<braid::Pending> outstanding;
      auto settle = [&](braid::Pending& p) {
        braid::Status s = p.wait();
        if (s.is_ok()) {
          ++committed[t];
        } else if (failures[t].empty()) {
          failures[t] = s.to_string();
        }
      };
      for (int i = 0; i < per_thread; ++i) {
        const std::uint32_t from = pick(rng), to = pick(rng);
        if (from == to) continue;
        const std::int64_t amount = 1 + rng() % 20;
        braid::TxnFunction fn = [=](braid::Tx& tx) {
          return transfer(tx, accounts, from, to, amount);
        };
        for (;;) {
          braid::Result<braid::Pending> p = db.submit(fn, retry);
          if (p.is_ok()) {
            outstanding.push_back(*std::move(p));
            break;
          }
          if (p.status().code() != braid::Code::kBusy) {
            failures[t] = p.status().to_string();
            break;
          }
          // The worker's queue is full: wait for our oldest, or let the others' drain.
          if (outstanding.empty()) {
            std::this_thread::yield();
            continue;
          }
          settle(outstanding.front());
          outstanding.pop_front();
        }
        if (!failures[t].empty()) break;
        if (outstanding.size() >= kInFlight) {
          settle(outstanding.front());
          outstanding.pop_front();
        }
      }
      for (braid::Pending& p : outstanding) settle(p);
    });
  }
  for (std::thread& th : threads) th.join();
  for (const std::string& f : failures) {
    if (!f.empty()) {
      std::fprintf(stderr, "transfer failed: %s\n", f.c_str());
      return 1;
    }
  }

  std::int64_t total = 0;
  std::uint32_t seen = 0;
  if (braid::Status s =
          db.execute([&](braid::Tx& tx) { return audit(tx, accounts, &total, &seen); });
      !s.is_ok()) {
    std::fprintf(stderr, "audit: %s\n", s.to_string().c_str());
    return 1;
  }
  std::uint64_t ok = 0;
  for (std::uint64_t c : committed) ok += c;
  const braid::ExecStats stats = db.exec_stats();
  std::printf(
      "bank_coroutines: %d app threads, %d workers; %llu transfers committed, %llu "
      "transaction runs in all (conflicts re-run); %u accounts hold %lld (expected "
      "%lld)\n",
      apps, workers, static_cast<unsigned long long>(ok),
      static_cast<unsigned long long>(stats.transactions), seen, static_cast<long long>(total),
      static_cast<long long>(kAccounts * kOpening));
  return total == static_cast<std::int64_t>(kAccounts) * kOpening && seen == kAccounts ? 0 : 1;
}
