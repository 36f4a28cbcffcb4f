// A worker's statistics: published by the worker thread, summed by any thread (ExecStats).
#include "engine/worker.h"

#include <algorithm>

namespace braid::engine {

void Worker::publish_stats() {
  const runtime::FrameCounters& f = frames_.counters();
  published_.transactions.store(transactions_, std::memory_order_relaxed);
  published_.resumes.store(resumes_, std::memory_order_relaxed);
  published_.suspends.store(suspends_, std::memory_order_relaxed);
  published_.frames_allocated.store(f.allocated, std::memory_order_relaxed);
  published_.frames_freed.store(f.freed, std::memory_order_relaxed);
  published_.heap_fallbacks.store(f.heap_fallbacks, std::memory_order_relaxed);
  published_.auto_decisions.store(tuner_.decisions(), std::memory_order_relaxed);
  published_.auto_batch.store(exec_.mode == ExecMode::kAuto ? tuner_.choice() : last_auto_choice_,
                              std::memory_order_relaxed);
  published_.commit_waits.store(commit_waits_, std::memory_order_relaxed);
  published_.io_checks.store(io_checks_, std::memory_order_relaxed);
  const index::ContentionCounters& c = index::thread_contention();  // this worker's thread
  published_.index_restarts.store(c.restarts, std::memory_order_relaxed);
  published_.index_backoff_ns.store(c.backoff_ns, std::memory_order_relaxed);
  published_.index_leaf_visits.store(index::thread_paging().leaf_visits, std::memory_order_relaxed);
  published_.index_inner_visits.store(index::thread_paging().inner_visits,
                                      std::memory_order_relaxed);
  published_.teams.store(old_teams_ + policy_->teams(), std::memory_order_relaxed);
  published_.team_members.store(old_team_members_ + policy_->team_members(),
                                std::memory_order_relaxed);
  published_.max_passed_over.store(std::max(old_max_passed_, policy_->max_passed_over()),
                                   std::memory_order_relaxed);
  if (reader_ != nullptr) {
    const ColdReader::Counters& r = reader_->counters();
    published_.cold_reads_issued.store(r.issued, std::memory_order_relaxed);
    published_.cold_read_submissions.store(r.submissions, std::memory_order_relaxed);
    published_.cold_reads_registered.store(r.registered, std::memory_order_relaxed);
    published_.cold_reaps.store(r.reaps, std::memory_order_relaxed);
    published_.cold_reads_reaped.store(r.reaped, std::memory_order_relaxed);
  }
  for (int i = 0; i < ExecStats::kStorageStages; ++i) {
    published_.stage_ns[i].store(stages_.ns(static_cast<Stage>(i)), std::memory_order_relaxed);
  }
}

void Worker::add_stats(ExecStats* out) const {
  out->transactions += published_.transactions.load(std::memory_order_relaxed);
  out->resumes += published_.resumes.load(std::memory_order_relaxed);
  out->suspends += published_.suspends.load(std::memory_order_relaxed);
  out->frames_allocated += published_.frames_allocated.load(std::memory_order_relaxed);
  out->frames_freed += published_.frames_freed.load(std::memory_order_relaxed);
  out->frame_heap_fallbacks += published_.heap_fallbacks.load(std::memory_order_relaxed);
  out->auto_decisions += published_.auto_decisions.load(std::memory_order_relaxed);
  out->commit_waits += published_.commit_waits.load(std::memory_order_relaxed);
  out->io_checks += published_.io_checks.load(std::memory_order_relaxed);
  out->index_restarts += published_.index_restarts.load(std::memory_order_relaxed);
  out->teams += published_.teams.load(std::memory_order_relaxed);
  out->team_members += published_.team_members.load(std::memory_order_relaxed);
  out->max_passed_over =
      std::max(out->max_passed_over, published_.max_passed_over.load(std::memory_order_relaxed));
  out->index_backoff_ns += published_.index_backoff_ns.load(std::memory_order_relaxed);
  out->index_leaf_visits += published_.index_leaf_visits.load(std::memory_order_relaxed);
  out->index_inner_visits += published_.index_inner_visits.load(std::memory_order_relaxed);
  out->auto_batch =
      std::max(out->auto_batch, published_.auto_batch.load(std::memory_order_relaxed));
  out->cold_reads_issued += published_.cold_reads_issued.load(std::memory_order_relaxed);
  out->cold_read_submissions += published_.cold_read_submissions.load(std::memory_order_relaxed);
  out->cold_reads_registered += published_.cold_reads_registered.load(std::memory_order_relaxed);
  out->cold_reaps += published_.cold_reaps.load(std::memory_order_relaxed);
  out->cold_reads_reaped += published_.cold_reads_reaped.load(std::memory_order_relaxed);
  for (int i = 0; i < ExecStats::kStorageStages; ++i) {
    out->storage_stage_ns[i] += published_.stage_ns[i].load(std::memory_order_relaxed);
  }
}

}  // namespace braid::engine
