// One asynchronous I/O queue per worker, shared by everything the worker writes or reads: its
// log, the checkpoints' writes and reads (worker 0) and the cold store's reads (kColdRead).
// Each client gets a channel, an IoQueue of its own whose requests go through the worker's one
// queue (one io_uring ring on the real backend) with the channel's id in the top bits of their tag;
// the ring routes each completion back to the channel that submitted it.
//
// Requests wait in the ring's submission queue until a client's flush() or the next reap or
// poll, so requests made together go with one kernel entry (the cold reader flushes its batch).
// The worker reaps the ring once per scheduler loop (reap()); a channel's poll() then hands out
// what was routed to it. A poll that finds nothing buffered reaps the ring once more, and a
// waiting poll reaps until one of its own completions is back (completions of other channels
// met meanwhile are kept for them). Single-threaded, like the IoQueue it wraps: used by the
// worker's thread, or by the opening or closing thread while no worker runs.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "storage/file_system.h"

namespace braid::storage {

class IoRing {
 public:
  // Channels of a ring. Tags keep 63 bits (IoQueue); the top 7 name the channel.
  enum Channel : std::uint32_t {
    kLog = 0,
    kCheckpoint = 1,
    kColdRead = 2,
    kCheckpointRead = 3,
    kChannels = 4
  };
  static constexpr int kTagBits = 56;

  explicit IoRing(std::unique_ptr<IoQueue> queue);
  ~IoRing();
  IoRing(const IoRing&) = delete;
  IoRing& operator=(const IoRing&) = delete;

  // The channel's queue. Each channel is handed out once and must not outlive the ring.
  std::unique_ptr<IoQueue> channel(Channel id);

  // Collects the completions that are ready and routes them to their channels. Answers how
  // many it routed.
  std::size_t reap();
  std::uint32_t in_flight() const { return queue_->in_flight(); }

 private:
  class Port;
  // One completion-collecting pass; with `wait`, blocks for at least one if any is in flight.
  std::size_t collect(bool wait);

  std::unique_ptr<IoQueue> queue_;
  Port* ports_[kChannels] = {};
};

}  // namespace braid::storage
