// A bank with the blocking API: application threads open Transactions, move money between
// accounts and retry on Conflict. Snapshot isolation with first-updater-wins means two
// transfers touching the same account cannot both commit, so the total never changes.
//
//   bank_transfer [threads] [transfers-per-thread]
#include <braid/braid.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr std::uint32_t kAccounts = 1000;
constexpr std::int64_t kOpening = 100;

braid::Key account_key(std::uint32_t id) { return braid::Key().str("acct").u32(id); }

// Balances are stored as decimal text: easy to read back with `braid stats`-style tools.
std::int64_t parse(std::string_view v) { return std::strtoll(std::string(v).c_str(), nullptr, 10); }

// One transfer; Conflict when another transaction updated one of the accounts first.
braid::Status transfer(braid::Database& db, braid::Table& accounts, std::uint32_t from,
                       std::uint32_t to, std::int64_t amount) {
  braid::Result<braid::Transaction> tx = db.begin();
  if (!tx.is_ok()) return tx.status();
  std::string a, b;
  if (braid::Status s = tx->get(accounts, account_key(from), &a); !s.is_ok()) return s;
  if (braid::Status s = tx->get(accounts, account_key(to), &b); !s.is_ok()) return s;
  if (parse(a) < amount) return tx->commit();  // insufficient funds: nothing to do
  if (braid::Status s = tx->update(accounts, account_key(from), std::to_string(parse(a) - amount));
      !s.is_ok()) {
    return s;  // the Transaction's destructor aborts it
  }
  if (braid::Status s = tx->update(accounts, account_key(to), std::to_string(parse(b) + amount));
      !s.is_ok()) {
    return s;
  }
  return tx->commit();
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  const int per_thread = argc > 2 ? std::atoi(argv[2]) : 20000;
  if (threads < 1 || threads > 64 || per_thread < 0) {
    std::fprintf(stderr, "usage: bank_transfer [threads 1..64] [transfers-per-thread]\n");
    return 2;
  }
  braid::Options options;  // in memory; see durable_reopen.cc for a directory
  options.external_transactions = static_cast<std::uint32_t>(threads);
  auto opened = braid::Database::open(options);
  if (!opened.is_ok()) {
    std::fprintf(stderr, "open: %s\n", opened.status().to_string().c_str());
    return 1;
  }
  braid::Database& db = **opened;
  braid::Table& accounts = **db.create_table("accounts");

  {
    braid::Transaction tx = *db.begin();
    for (std::uint32_t id = 0; id < kAccounts; ++id) {
      if (braid::Status s = tx.insert(accounts, account_key(id), std::to_string(kOpening));
          !s.is_ok()) {
        std::fprintf(stderr, "insert: %s\n", s.to_string().c_str());
        return 1;
      }
    }
    if (braid::Status s = tx.commit(); !s.is_ok()) {
      std::fprintf(stderr, "commit: %s\n", s.to_string().c_str());
      return 1;
    }
  }

  std::vector<std::thread> workers;
  std::vector<std::uint64_t> committed(threads), conflicts(threads);
  std::vector<std::string> failures(threads);
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      std::mt19937 rng(static_cast<std::uint32_t>(t + 1));
      std::uniform_int_distribution<std::uint32_t> pick(0, kAccounts - 1);
      for (int i = 0; i < per_thread; ++i) {
        const std::uint32_t from = pick(rng), to = pick(rng);
        if (from == to) continue;
        for (;;) {  // retry a transfer that lost a conflict
          braid::Status s = transfer(db, accounts, from, to, 1 + rng() % 20);
          if (s.is_ok()) {
            ++committed[t];
            break;
          }
          if (s.code() != braid::Code::kConflict) {
            failures[t] = s.to_string();
            return;
          }
          // The other transfer may still be open: give it the core before trying again.
          ++conflicts[t];
          std::this_thread::yield();
        }
      }
    });
  }
  for (std::thread& w : workers) w.join();
  for (const std::string& f : failures) {
    if (!f.empty()) {
      std::fprintf(stderr, "transfer failed: %s\n", f.c_str());
      return 1;
    }
  }

  // Audit: one snapshot sees every account; money was only moved, never made or lost.
  std::int64_t total = 0;
  std::uint32_t seen = 0;
  braid::Transaction audit = *db.begin();
  braid::Status s = audit.scan(accounts, "", "", 0, [&](std::string_view, std::string_view v) {
    total += parse(v);
    ++seen;
    return true;
  });
  if (!s.is_ok() || !audit.commit().is_ok()) {
    std::fprintf(stderr, "audit scan: %s\n", s.to_string().c_str());
    return 1;
  }
  std::uint64_t ok = 0, retried = 0;
  for (int t = 0; t < threads; ++t) ok += committed[t], retried += conflicts[t];
  std::printf(
      "bank_transfer: %llu transfers committed by %d threads, %llu conflicts retried; "
      "%u accounts hold %lld (expected %lld)\n",
      static_cast<unsigned long long>(ok), threads, static_cast<unsigned long long>(retried), seen,
      static_cast<long long>(total), static_cast<long long>(kAccounts * kOpening));
  return total == static_cast<std::int64_t>(kAccounts) * kOpening && seen == kAccounts ? 0 : 1;
}
