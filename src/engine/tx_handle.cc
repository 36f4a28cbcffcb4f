// The public handles of worker transactions: Tx (a slot's transaction, seen from its body) and
// Pending (a submitted transaction's outcome).
#include "engine/worker.h"

#include <braid/tx.h>

#include <utility>

#include "engine/checks.h"

namespace braid {

void Tx::abort() {
  if (state_->ctx == nullptr || state_->ctx->in_scan) return;
  state_->worker->abort(state_->ctx);
  state_->ctx = nullptr;
}
Status Tx::configure(const TxnOptions& options) {
  if (Status s = engine::check_txn(options, "Tx::configure: "); !s.is_ok()) return s;
  detail::TxState* st = state_;
  if (st->ctx == nullptr) {
    // Called from TxnGenerator::next, before the worker begins the transaction.
    st->txn = options;
    st->configured = true;
    return Status::ok();
  }
  if (st->touched) {
    return Status::invalid_argument(
        "Tx::configure after the transaction's first operation: isolation is chosen before it "
        "reads anything");
  }
  st->db->configure(st->ctx, options);
  return Status::ok();
}
bool Tx::is_active() const { return state_->ctx != nullptr; }
std::uint64_t Tx::snapshot() const { return state_->ctx != nullptr ? state_->ctx->snapshot : 0; }
std::uint32_t Tx::worker() const { return state_->worker->index(); }

Pending::Pending(Pending&& other) noexcept : request_(std::exchange(other.request_, nullptr)) {}
Pending& Pending::operator=(Pending&& other) noexcept {
  if (this != &other) {
    if (request_ != nullptr) request_->release();
    request_ = std::exchange(other.request_, nullptr);
  }
  return *this;
}
Pending::~Pending() {
  if (request_ != nullptr) request_->release();
}
bool Pending::ready() const {
  return request_ != nullptr && request_->done.load(std::memory_order_acquire) != 0;
}
std::uint64_t Pending::commit_timestamp() const { return ready() ? request_->cts : 0; }
Status Pending::wait() {
  if (request_ == nullptr) return Status::invalid_argument("empty Pending handle");
  while (request_->done.load(std::memory_order_acquire) == 0) request_->done.wait(0);
  // Copy: wait() may be called again.
  const Status& s = request_->status;
  return s.is_ok() ? Status::ok() : Status(s.code(), s.message());
}

}  // namespace braid
