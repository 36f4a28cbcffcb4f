#include "history/checker.h"

#include <algorithm>
#include <charconv>
#include <deque>
#include <sstream>
#include <unordered_map>
#include <utility>

namespace braid::history {

namespace {

enum : std::uint8_t { kWW = 1, kWR = 2, kRW = 4 };
constexpr std::size_t kNone = ~std::size_t{0};
// Examples kept per anomaly type (the count keeps going).
constexpr std::size_t kMaxExamples = 20;
// G-single searches per rw edge are bounded so a broken engine's huge tangle still finishes.
constexpr std::size_t kMaxGSingleSearches = 200000;

struct Edge {
  std::uint32_t to;
  std::uint8_t type;
};
using Graph = std::vector<std::vector<Edge>>;

const char* edge_name(std::uint8_t t) { return t == kWW ? "ww" : t == kWR ? "wr" : "rw"; }

// Strongly connected components over the edges whose type is in `mask` (iterative Tarjan).
std::vector<std::uint32_t> components(const Graph& g, std::uint8_t mask, std::uint32_t* count) {
  const auto n = static_cast<std::uint32_t>(g.size());
  std::vector<std::uint32_t> index(n, UINT32_MAX), low(n, 0), comp(n, UINT32_MAX);
  std::vector<bool> on_stack(n, false);
  std::vector<std::uint32_t> stack;
  std::vector<std::pair<std::uint32_t, std::size_t>> call;  // node, next edge
  std::uint32_t next_index = 0;
  *count = 0;
  for (std::uint32_t root = 0; root < n; ++root) {
    if (index[root] != UINT32_MAX) continue;
    call.push_back({root, 0});
    index[root] = low[root] = next_index++;
    stack.push_back(root);
    on_stack[root] = true;
    while (!call.empty()) {
      auto& [v, e] = call.back();
      if (e < g[v].size()) {
        const Edge ed = g[v][e++];
        if ((ed.type & mask) == 0) continue;
        const std::uint32_t w = ed.to;
        if (index[w] == UINT32_MAX) {
          index[w] = low[w] = next_index++;
          stack.push_back(w);
          on_stack[w] = true;
          call.push_back({w, 0});
        } else if (on_stack[w]) {
          low[v] = std::min(low[v], index[w]);
        }
        continue;
      }
      const std::uint32_t done = v;
      call.pop_back();
      if (!call.empty()) low[call.back().first] = std::min(low[call.back().first], low[done]);
      if (low[done] == index[done]) {
        for (;;) {
          const std::uint32_t w = stack.back();
          stack.pop_back();
          on_stack[w] = false;
          comp[w] = *count;
          if (w == done) break;
        }
        ++*count;
      }
    }
  }
  return comp;
}

// A path from `from` to `to` over `mask` edges staying inside component `c` of `comp`; empty
// when there is none. The path lists nodes, `from` first.
std::vector<std::uint32_t> path(const Graph& g, std::uint8_t mask,
                                const std::vector<std::uint32_t>& comp, std::uint32_t from,
                                std::uint32_t to) {
  std::unordered_map<std::uint32_t, std::uint32_t> parent;
  std::deque<std::uint32_t> q{from};
  parent[from] = from;
  while (!q.empty()) {
    const std::uint32_t v = q.front();
    q.pop_front();
    if (v == to) break;
    for (const Edge& e : g[v]) {
      if ((e.type & mask) == 0 || comp[e.to] != comp[from] || parent.count(e.to) != 0) continue;
      parent[e.to] = v;
      q.push_back(e.to);
    }
  }
  if (parent.count(to) == 0) return {};
  std::vector<std::uint32_t> out{to};
  while (out.back() != from) out.push_back(parent[out.back()]);
  std::reverse(out.begin(), out.end());
  return out;
}

// A cycle through the component of `start` over `mask` edges (start -> ... -> start).
std::vector<std::uint32_t> cycle_from(const Graph& g, std::uint8_t mask,
                                      const std::vector<std::uint32_t>& comp, std::uint32_t start) {
  for (const Edge& e : g[start]) {
    if ((e.type & mask) == 0 || comp[e.to] != comp[start]) continue;
    std::vector<std::uint32_t> p = path(g, mask, comp, e.to, start);
    if (p.empty()) continue;
    p.insert(p.begin(), start);
    return p;
  }
  return {};
}

class Checker {
 public:
  Checker(const std::vector<Txn>& txns,
          const std::map<std::uint32_t, std::vector<std::uint64_t>>& final_state)
      : txns_(txns), final_(final_state), graph_(txns.size()) {}

  Report run() {
    index_writers();
    for (const auto& [key, order] : final_) {
      auto& pos = positions_[key];
      for (std::size_t i = 0; i < order.size(); ++i) pos[order[i]] = i;
      check_list(kNone, key, order);  // the final read is a read too
    }
    for (std::size_t t = 0; t < txns_.size(); ++t) {
      (txns_[t].committed ? report_.committed : report_.aborted) += 1;
      if (!txns_[t].committed) continue;
      for (const Op& op : txns_[t].ops) {
        if (op.kind == Op::Kind::kRead) {
          read_edges(t, op);
        } else {
          lost_update(t, op);
        }
      }
    }
    ww_edges();
    cycles();
    return std::move(report_);
  }

 private:
  struct Writer {
    std::size_t txn;
    std::uint32_t key;
    std::size_t op;
  };

  void add(const std::string& type, std::vector<std::uint64_t> txns, std::string detail) {
    if (++counts_[type] > kMaxExamples) detail.clear();  // counted, not spelled out
    report_.anomalies.push_back({type, std::move(txns), std::move(detail)});
  }
  std::uint64_t id(std::size_t t) const { return t == kNone ? 0 : txns_[t].id; }

  void index_writers() {
    for (std::size_t t = 0; t < txns_.size(); ++t) {
      for (std::size_t o = 0; o < txns_[t].ops.size(); ++o) {
        const Op& op = txns_[t].ops[o];
        if (op.kind != Op::Kind::kAppend) continue;
        if (!writers_.emplace(op.element, Writer{t, op.key, o}).second) {
          add("duplicate-element", {txns_[t].id, id(writers_[op.element].txn)},
              "element " + std::to_string(op.element) + " appended twice");
        }
      }
    }
  }

  // Element checks of one read (reader kNone: the final state): garbage, G1a, G1b, order.
  bool check_list(std::size_t reader, std::uint32_t key, const std::vector<std::uint64_t>& list) {
    const std::string who = reader == kNone ? "the final read" : "a read";
    for (std::uint64_t x : list) {
      auto w = writers_.find(x);
      if (w == writers_.end()) {
        add("garbage-read", {id(reader)},
            who + " of key " + std::to_string(key) + " saw element " + std::to_string(x) +
                " that nobody appended");
      } else if (!txns_[w->second.txn].committed) {
        add("G1a", {id(w->second.txn), id(reader)},
            who + " of key " + std::to_string(key) + " saw element " + std::to_string(x) +
                " of an aborted transaction");
      }
    }
    if (reader == kNone) return true;
    const auto& order = final_.count(key) != 0 ? final_.at(key) : empty_;
    if (list.size() > order.size() || !std::equal(list.begin(), list.end(), order.begin())) {
      add("incompatible-order", {id(reader)},
          "read of key " + std::to_string(key) + " [" + encode(list) +
              "] is not a prefix of its final order [" + encode(order) + "]");
      return false;
    }
    if (!list.empty()) {
      auto w = writers_.find(list.back());
      if (w != writers_.end() && w->second.txn != reader && txns_[w->second.txn].committed) {
        const Txn& wt = txns_[w->second.txn];
        for (std::size_t o = w->second.op + 1; o < wt.ops.size(); ++o) {
          if (wt.ops[o].kind == Op::Kind::kAppend && wt.ops[o].key == key) {
            add("G1b", {wt.id, id(reader)},
                "read of key " + std::to_string(key) + " ended at " + std::to_string(list.back()) +
                    ", which its writer followed with " + std::to_string(wt.ops[o].element));
            break;
          }
        }
      }
    }
    return true;
  }

  void edge(std::size_t from, std::size_t to, std::uint8_t type) {
    if (from == to || from == kNone || to == kNone) return;
    if (!txns_[from].committed || !txns_[to].committed) return;
    graph_[from].push_back({static_cast<std::uint32_t>(to), type});
    ++report_.edges;
  }

  std::size_t writer_of(std::uint64_t element) const {
    auto w = writers_.find(element);
    return w == writers_.end() ? kNone : w->second.txn;
  }

  void read_edges(std::size_t t, const Op& op) {
    if (!check_list(t, op.key, op.list)) return;
    if (!op.list.empty()) edge(writer_of(op.list.back()), t, kWR);
    const auto& order = final_.count(op.key) != 0 ? final_.at(op.key) : empty_;
    if (op.list.size() < order.size()) edge(t, writer_of(order[op.list.size()]), kRW);
  }

  void lost_update(std::size_t t, const Op& op) {
    const auto it = positions_.find(op.key);
    if (it != positions_.end() && it->second.count(op.element) != 0) return;
    add("lost-update", {txns_[t].id},
        "committed append of " + std::to_string(op.element) + " to key " + std::to_string(op.key) +
            " is missing from the key's final order");
  }

  void ww_edges() {
    for (const auto& [key, order] : final_) {
      for (std::size_t i = 0; i + 1 < order.size(); ++i) {
        edge(writer_of(order[i]), writer_of(order[i + 1]), kWW);
      }
    }
  }

  void add_cycle(const std::string& type, const std::vector<std::uint32_t>& nodes) {
    std::vector<std::uint64_t> ids;
    std::string detail;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      ids.push_back(txns_[nodes[i]].id);
      detail += "T" + std::to_string(txns_[nodes[i]].id);
      if (i + 1 < nodes.size()) {
        std::uint8_t t = 0;
        for (const Edge& e : graph_[nodes[i]]) {
          if (e.to == nodes[i + 1]) t |= e.type;
        }
        // Name the weakest edge kind between the two (ww before wr before rw).
        detail += std::string(" -") + edge_name(t & kWW ? kWW : t & kWR ? kWR : kRW) + "-> ";
      }
    }
    add(type, std::move(ids), detail);
  }

  void cycles() {
    std::uint32_t nfull = 0, n1 = 0, n0 = 0;
    const auto full = components(graph_, kWW | kWR | kRW, &nfull);
    std::vector<std::uint32_t> size(nfull, 0);
    for (std::uint32_t c : full) ++size[c];
    std::vector<bool> explained(nfull, false);
    // G0, then G1c: cycles within the ww and the ww+wr subgraphs.
    const auto g0 = components(graph_, kWW, &n0);
    const auto g1 = components(graph_, kWW | kWR, &n1);
    std::vector<std::uint32_t> size0(n0, 0), size1(n1, 0);
    for (std::uint32_t c : g0) ++size0[c];
    for (std::uint32_t c : g1) ++size1[c];
    std::vector<bool> seen0(n0, false), seen1(n1, false);
    for (std::uint32_t v = 0; v < graph_.size(); ++v) {
      if (size0[g0[v]] > 1 && !seen0[g0[v]]) {
        seen0[g0[v]] = true;
        seen1[g1[v]] = true;  // this ww+wr component is explained by its write cycle
        explained[full[v]] = true;
        add_cycle("G0", cycle_from(graph_, kWW, g0, v));
      }
    }
    for (std::uint32_t v = 0; v < graph_.size(); ++v) {
      if (size1[g1[v]] > 1 && !seen1[g1[v]]) {
        seen1[g1[v]] = true;
        explained[full[v]] = true;
        add_cycle("G1c", cycle_from(graph_, kWW | kWR, g1, v));
      }
    }
    // G-single: an rw edge a -> b closed by a ww/wr path from b back to a.
    std::size_t searches = 0;
    for (std::uint32_t a = 0; a < graph_.size() && searches < kMaxGSingleSearches; ++a) {
      if (size[full[a]] <= 1) continue;
      for (const Edge& e : graph_[a]) {
        if (e.type != kRW || full[e.to] != full[a]) continue;
        if (++searches > kMaxGSingleSearches) break;
        std::vector<std::uint32_t> back = path(graph_, kWW | kWR, full, e.to, a);
        if (back.empty()) continue;
        back.insert(back.begin(), a);
        explained[full[a]] = true;
        add_cycle("G-single", back);
      }
    }
    // G2-item: every other cycle needs two rw edges or more.
    std::vector<bool> reported(nfull, false);
    for (std::uint32_t v = 0; v < graph_.size(); ++v) {
      const std::uint32_t c = full[v];
      if (size[c] <= 1 || explained[c] || reported[c]) continue;
      reported[c] = true;
      add_cycle("G2-item", cycle_from(graph_, kWW | kWR | kRW, full, v));
    }
  }

  const std::vector<Txn>& txns_;
  const std::map<std::uint32_t, std::vector<std::uint64_t>>& final_;
  const std::vector<std::uint64_t> empty_;
  std::unordered_map<std::uint64_t, Writer> writers_;
  std::unordered_map<std::uint32_t, std::unordered_map<std::uint64_t, std::size_t>> positions_;
  Graph graph_;
  Report report_;
  std::map<std::string, std::size_t> counts_;
};

}  // namespace

std::size_t Report::count(const std::string& type) const {
  return static_cast<std::size_t>(std::count_if(anomalies.begin(), anomalies.end(),
                                                [&](const Anomaly& a) { return a.type == type; }));
}

std::string Report::summary() const {
  std::ostringstream out;
  out << committed << " committed, " << aborted << " aborted, " << edges << " edges";
  std::map<std::string, std::size_t> by_type;
  for (const Anomaly& a : anomalies) ++by_type[a.type];
  if (by_type.empty()) out << "; no anomalies";
  for (const auto& [type, n] : by_type) out << "; " << type << ": " << n;
  std::size_t shown = 0;
  for (const Anomaly& a : anomalies) {
    if (a.detail.empty() || ++shown > 10) continue;
    out << "\n  " << a.type << ": " << a.detail;
  }
  return out.str();
}

Report check(const std::vector<Txn>& txns,
             const std::map<std::uint32_t, std::vector<std::uint64_t>>& final_state) {
  return Checker(txns, final_state).run();
}

std::string encode(const std::vector<std::uint64_t>& list) {
  std::string out;
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (i != 0) out += ',';
    out += std::to_string(list[i]);
  }
  return out;
}

bool decode(std::string_view value, std::vector<std::uint64_t>* list) {
  list->clear();
  if (value.empty()) return true;
  const char* p = value.data();
  const char* end = p + value.size();
  for (;;) {
    std::uint64_t x = 0;
    const auto r = std::from_chars(p, end, x);
    if (r.ec != std::errc() || r.ptr == p) return false;
    list->push_back(x);
    if (r.ptr == end) return true;
    if (*r.ptr != ',') return false;
    p = r.ptr + 1;
  }
}

}  // namespace braid::history
