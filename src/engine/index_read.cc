// The read side of secondary indexes (scan_op in access_ops.inc): whether an entry is still
// current for the version a reader sees, and the end of a key-prefix range.
#include "engine/access.h"

#include <string>

#include "util/assert.h"

namespace braid::engine {

bool entry_current(Index* sec, std::string_view entry_key, std::size_t secondary_len,
                   std::string_view value) {
  BRAID_DASSERT(secondary_len <= entry_key.size());
  Key derived;
  if (!sec->extract(entry_key.substr(secondary_len), value, &derived)) return false;
  return derived.view() == entry_key.substr(0, secondary_len);
}

std::string prefix_successor(std::string_view prefix) {
  std::string s(prefix);
  while (!s.empty() && static_cast<unsigned char>(s.back()) == 0xff) s.pop_back();
  if (!s.empty()) s.back() = static_cast<char>(static_cast<unsigned char>(s.back()) + 1);
  return s;
}

}  // namespace braid::engine
