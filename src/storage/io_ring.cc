#include "storage/io_ring.h"

#include <algorithm>

#include "util/assert.h"

namespace braid::storage {

// A channel: requests go to the ring's queue, tagged; completions come back through the ring.
class IoRing::Port final : public IoQueue {
 public:
  Port(IoRing* ring, Channel id) : ring_(ring), id_(id) {}
  ~Port() override {
    // The requests in flight name the client's buffers: they complete before the client goes
    // (a client that stopped waiting after a failure is covered here).
    while (ready_.size() < in_flight_ && ring_->queue_->in_flight() != 0) {
      (void)ring_->collect(true);  // a timed-out wait answers nothing: wait again
    }
    ring_->ports_[id_] = nullptr;
  }

  Status submit(const IoRequest& request) override {
    BRAID_ASSERT(request.user < (std::uint64_t{1} << kTagBits));
    IoRequest r = request;
    r.user = (std::uint64_t{id_} << kTagBits) | request.user;
    if (Status s = ring_->queue_->submit(r); !s.is_ok()) return s;
    ++in_flight_;
    return Status::ok();
  }

  std::size_t poll(IoCompletion* out, std::size_t max, bool wait) override {
    // Nothing of ours outstanding: the worker's once-per-loop reap() was enough.
    if (ready_.empty() && in_flight_ != 0) ring_->collect(false);
    // A waiting poll blocks until one of ours is back; the queue's wait answering nothing (a
    // timed-out wait) is passed on as it is.
    if (wait && ready_.empty() && in_flight_ != 0) {
      // Another channel's completion may come first: wait on until ours is back, or one
      // wait answered nothing (timed out, or the ring has nothing in flight).
      while (ready_.empty() && ring_->collect(true) != 0) {
      }
    }
    const std::size_t n = std::min(max, ready_.size());
    std::copy_n(ready_.begin(), n, out);
    ready_.erase(ready_.begin(), ready_.begin() + static_cast<std::ptrdiff_t>(n));
    BRAID_ASSERT(in_flight_ >= n);
    in_flight_ -= static_cast<std::uint32_t>(n);
    return n;
  }

  std::uint32_t in_flight() const override { return in_flight_; }
  Status flush() override { return ring_->queue_->flush(); }
  // The ring's registered blocks are one table for all its channels (the cold reads ask).
  std::int32_t register_buffer(char* base, std::size_t len) override {
    return ring_->queue_->register_buffer(base, len);
  }
  void unregister_buffers() override { ring_->queue_->unregister_buffers(); }

  void deliver(const IoCompletion& c) {
    // Never more than in flight: each request completes once.
    BRAID_ASSERT(ready_.size() < in_flight_);
    ready_.push_back(c);
  }

 private:
  IoRing* ring_;
  Channel id_;
  std::uint32_t in_flight_ = 0;      // submitted, not yet handed to the client
  std::vector<IoCompletion> ready_;  // routed here, not yet handed out (<= in_flight_)
};

IoRing::IoRing(std::unique_ptr<IoQueue> queue) : queue_(std::move(queue)) {
  // A loop's requests go with its one reap (or a client's flush): one kernel entry for all.
  queue_->defer_submissions();
}

IoRing::~IoRing() {
  for (Port* p : ports_) BRAID_ASSERT(p == nullptr);  // channels go first
}

std::unique_ptr<IoQueue> IoRing::channel(Channel id) {
  BRAID_ASSERT(id < kChannels);
  BRAID_ASSERT(ports_[id] == nullptr);
  auto port = std::make_unique<Port>(this, id);
  ports_[id] = port.get();
  return port;
}

std::size_t IoRing::reap() { return collect(false); }

std::size_t IoRing::collect(bool wait) {
  IoCompletion c[8];
  const std::size_t n = queue_->poll(c, 8, wait);
  for (std::size_t i = 0; i < n; ++i) {
    const auto id = static_cast<std::uint32_t>(c[i].user >> kTagBits);
    BRAID_ASSERT(id < kChannels);
    if (ports_[id] == nullptr) continue;  // its channel gave up on it while closing
    ports_[id]->deliver({c[i].user & ((std::uint64_t{1} << kTagBits) - 1), c[i].result});
  }
  return n;
}

}  // namespace braid::storage
