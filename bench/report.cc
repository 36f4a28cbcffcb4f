#include "report.h"

#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <sstream>

namespace braid::bench {

// ---- Histogram ----------------------------------------------------------------------------------

int Histogram::bucket(std::uint64_t ns) {
  if (ns < kSub) return static_cast<int>(ns);
  const int msb = 63 - __builtin_clzll(ns);  // >= 4
  const int shift = msb - 4;                 // keep 5 significant bits: 16 sub-buckets
  const int sub = static_cast<int>((ns >> shift) & (kSub - 1));
  return (shift + 1) * kSub + sub;
}

double Histogram::midpoint(int b) {
  if (b < kSub) return b;
  const int shift = b / kSub - 1;
  const int sub = b % kSub;
  const double lo = static_cast<double>((std::uint64_t{kSub} + sub) << shift);
  return lo + static_cast<double>(std::uint64_t{1} << shift) / 2.0;
}

void Histogram::record(std::uint64_t ns) {
  int b = bucket(ns);
  if (b >= kBuckets) b = kBuckets - 1;
  ++counts_[b];
  ++count_;
}

void Histogram::merge(const Histogram& o) {
  for (int i = 0; i < kBuckets; ++i) counts_[i] += o.counts_[i];
  count_ += o.count_;
}

double Histogram::quantile(double q) const {
  if (count_ == 0) return 0;
  const auto rank = static_cast<std::uint64_t>(std::ceil(q * static_cast<double>(count_)));
  std::uint64_t seen = 0;
  for (int i = 0; i < kBuckets; ++i) {
    seen += counts_[i];
    if (seen >= rank && counts_[i] != 0) return midpoint(i);
  }
  return midpoint(kBuckets - 1);
}

// ---- JSON ---------------------------------------------------------------------------------------

std::string json_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out;
}

void JsonObject::key(std::string_view k) {
  if (!body_.empty()) body_ += ",";
  body_ += "\"" + json_escape(k) + "\":";
}
JsonObject& JsonObject::add(std::string_view k, std::string_view v) {
  key(k);
  body_ += "\"" + json_escape(v) + "\"";
  return *this;
}
JsonObject& JsonObject::add(std::string_view k, double v) {
  key(k);
  if (!std::isfinite(v)) {
    body_ += "null";
    return *this;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  body_ += buf;
  return *this;
}
JsonObject& JsonObject::add(std::string_view k, std::uint64_t v) {
  key(k);
  body_ += std::to_string(v);
  return *this;
}
JsonObject& JsonObject::add(std::string_view k, std::int64_t v) {
  key(k);
  body_ += std::to_string(v);
  return *this;
}
JsonObject& JsonObject::add_bool(std::string_view k, bool v) {
  key(k);
  body_ += v ? "true" : "false";
  return *this;
}
JsonObject& JsonObject::add_object(std::string_view k, const JsonObject& v) {
  key(k);
  body_ += v.str();
  return *this;
}

namespace {
std::string first_line_with(const char* path, std::string_view prefix) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(prefix, 0) == 0) return line;
  }
  return "";
}
std::string after_colon(const std::string& line) {
  auto p = line.find(':');
  if (p == std::string::npos) return "";
  auto v = line.substr(p + 1);
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.erase(v.begin());
  return v;
}
}  // namespace

JsonObject machine_description() {
  JsonObject m;
  m.add("cpu_model", after_colon(first_line_with("/proc/cpuinfo", "model name")));
  m.add("cores", static_cast<std::uint64_t>(std::thread::hardware_concurrency()));
  std::uint64_t kib = 0;
  std::istringstream(after_colon(first_line_with("/proc/meminfo", "MemTotal"))) >> kib;
  m.add("memory_bytes", kib * 1024);
  struct utsname u{};
  if (::uname(&u) == 0) m.add("kernel", std::string(u.sysname) + " " + u.release);
  std::ifstream thp("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string thp_mode;
  std::getline(thp, thp_mode);
  m.add("thp", thp_mode);
  m.add("compiler", build_compiler());
  m.add("build_type", build_type());
  m.add_bool("march_native", build_native());
  m.add("git_commit", build_commit());
  return m;
}

std::string append_json_line(const std::string& path, const JsonObject& obj) {
  if (auto slash = path.rfind('/'); slash != std::string::npos && slash > 0) {
    const std::string dir = path.substr(0, slash);
    struct stat st{};
    if (::stat(dir.c_str(), &st) != 0 && ::mkdir(dir.c_str(), 0755) != 0) {
      return "cannot create directory '" + dir + "'";
    }
  }
  std::ofstream out(path, std::ios::app);
  if (!out) return "cannot open '" + path + "' for appending";
  out << obj.str() << "\n";
  out.flush();
  if (!out) return "cannot write '" + path + "'";
  return "";
}

std::uint64_t peak_rss_bytes() {
  struct rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  return static_cast<std::uint64_t>(ru.ru_maxrss) * 1024;
}

std::uint64_t rss_bytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  unsigned long long size = 0, resident = 0;
  const int got = std::fscanf(f, "%llu %llu", &size, &resident);
  std::fclose(f);
  if (got != 2) return 0;
  return static_cast<std::uint64_t>(resident) * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
}

void print_memory_line(const DatabaseStats& st) {
  const auto in_mib = [](std::uint64_t b) { return static_cast<double>(b) / (1 << 20); };
  std::printf("  memory: version heap %.1f MiB (%.1f MiB live", in_mib(st.version_heap_bytes),
              in_mib(st.live_version_bytes));
  if (st.version_bytes_released != 0) {
    std::printf(", %.1f MiB given back", in_mib(st.version_bytes_released));
  }
  std::printf("), index frames %.1f MiB, OIDs %.1f MiB", in_mib(st.index_frame_bytes),
              in_mib(st.oid_bytes));
  if (st.records_named_by_address != 0) {
    std::printf(" (%s records named by address hold none",
                with_commas(st.records_named_by_address).c_str());
    // Records that held one until they went cold and the leaves' hand took it back, so far.
    if (st.records_demoted != 0) {
      std::printf("; %s demotions", with_commas(st.records_demoted).c_str());
    }
    std::printf(")");
  }
  if (st.index_run_list_bytes != 0) {
    std::printf(", run list %.1f MiB", in_mib(st.index_run_list_bytes));
  }
  if (st.memory_budget_bytes != 0) {
    std::printf("; the budget counts %.1f of %.1f MiB", in_mib(st.memory_budget_counted_bytes),
                in_mib(st.memory_budget_bytes));
    // Under a budget the question a reader asks is how far past it the process sits, and why:
    // the engine's shares above are what its stats name; the remainder is the process around
    // them. Read after the run, so it is the resident memory now, not the peak.
    const std::uint64_t rss = rss_bytes();
    const std::uint64_t named =
        st.version_heap_bytes + st.index_frame_bytes + st.oid_bytes + st.index_run_list_bytes;
    if (rss != 0) {
      std::printf(
          "\n  resident now %.1f MiB: the shares above %.1f (of them the version heap's "
          "free objects %.1f), the rest of the process %.1f",
          in_mib(rss), in_mib(named),
          in_mib(st.version_heap_bytes - std::min(st.version_heap_bytes, st.live_version_bytes)),
          in_mib(rss - std::min(rss, named)));
    }
  }
  std::printf("\n");
}

// ---- Progress -----------------------------------------------------------------------------------

Progress::Progress(std::string label, const char* unit, const std::atomic<std::uint64_t>* done,
                   std::uint64_t total)
    : label_(std::move(label)), unit_(unit), done_(done), total_(total) {
  if (!tools::ProgressLine::on_stderr().enabled() || total_ == 0) return;
  thread_ = std::thread([this] {
    for (;;) {
      const bool last = stop_.load();
      // The end reports the total even when the phase did less than it (a timed warm-up).
      const std::uint64_t d =
          last ? total_ : std::min(done_->load(std::memory_order_relaxed), total_);
      tools::ProgressLine::on_stderr().report({label_.c_str(), unit_, d, total_});
      if (d == total_) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  });
}

Progress::~Progress() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
}

std::string iso_time() {
  std::time_t now = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return buf;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void print_rounds_summary(const std::vector<std::string>& labels,
                          const std::vector<std::vector<double>>& rates, const char* unit) {
  assert(labels.size() == rates.size());
  if (labels.empty() || rates.front().empty()) return;
  const std::size_t rounds = rates.front().size();
  std::size_t width = 14;
  for (const std::string& l : labels) width = std::max(width, l.size());
  const int w = static_cast<int>(width);
  std::vector<double> med(labels.size());
  for (std::size_t i = 0; i < labels.size(); ++i) med[i] = median(rates[i]);
  if (rounds > 1) {
    std::printf("  over %zu rounds (%s):\n  %-*s %12s %12s %12s\n", rounds, unit, w, "", "min",
                "median", "max");
    for (std::size_t i = 0; i < labels.size(); ++i) {
      const auto [lo, hi] = std::minmax_element(rates[i].begin(), rates[i].end());
      std::printf("  %-*s %12.0f %12.0f %12.0f\n", w, labels[i].c_str(), *lo, med[i], *hi);
    }
  }
  if (labels.size() < 2) return;
  std::printf("  ratios (row / column%s):\n  %-*s", rounds > 1 ? ", medians" : "", w, "");
  for (const std::string& c : labels) std::printf(" %*s", w, c.c_str());
  std::printf("\n");
  for (std::size_t r = 0; r < labels.size(); ++r) {
    std::printf("  %-*s", w, labels[r].c_str());
    for (std::size_t c = 0; c < labels.size(); ++c) {
      std::printf(" %*.2f", w, med[c] > 0 ? med[r] / med[c] : 0.0);
    }
    std::printf("\n");
  }
}

ExecStats exec_delta(const ExecStats& before, const ExecStats& after) {
  ExecStats d = after;
  d.transactions = after.transactions - before.transactions;
  d.resumes = after.resumes - before.resumes;
  d.suspends = after.suspends - before.suspends;
  d.frames_allocated = after.frames_allocated - before.frames_allocated;
  d.frames_freed = after.frames_freed - before.frames_freed;
  d.frame_heap_fallbacks = after.frame_heap_fallbacks - before.frame_heap_fallbacks;
  d.auto_decisions = after.auto_decisions - before.auto_decisions;
  d.commit_waits = after.commit_waits - before.commit_waits;
  d.io_checks = after.io_checks - before.io_checks;
  d.index_restarts = after.index_restarts - before.index_restarts;
  d.index_backoff_ns = after.index_backoff_ns - before.index_backoff_ns;
  d.index_leaf_visits = after.index_leaf_visits - before.index_leaf_visits;
  d.index_inner_visits = after.index_inner_visits - before.index_inner_visits;
  d.teams = after.teams - before.teams;
  d.team_members = after.team_members - before.team_members;
  d.cold_reads_issued = after.cold_reads_issued - before.cold_reads_issued;
  d.cold_read_submissions = after.cold_read_submissions - before.cold_read_submissions;
  d.cold_reads_registered = after.cold_reads_registered - before.cold_reads_registered;
  d.cold_reaps = after.cold_reaps - before.cold_reaps;
  d.cold_reads_reaped = after.cold_reads_reaped - before.cold_reads_reaped;
  for (int i = 0; i < ExecStats::kStorageStages; ++i) {
    d.storage_stage_ns[i] = after.storage_stage_ns[i] - before.storage_stage_ns[i];
  }
  return d;
}

}  // namespace braid::bench
