// A small command-line flag parser for braid-bench: --name value or --name=value, typed,
// range-checked, with one usage text per sub-command. Errors are values (the caller prints them
// with the usage and exits 2).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace braid::bench {

// "a,b,c" -> {"a", "b", "c"} (empty items kept, so the caller can reject them).
std::vector<std::string> split_commas(const std::string& text);

// The value of a list flag (--mode, --mix): "all" (every name in `known`), or a comma-separated
// list of distinct names from `known`, in the order given. On a bad item sets `*err` and
// answers an empty list.
std::vector<std::string> parse_name_list(const std::string& flag, const std::string& text,
                                         const std::vector<std::string>& known, std::string* err);

class Flags {
 public:
  // Parses argv[first..argc). Fails on a positional argument or a flag without a value, except
  // the `switches`, which stand alone (--name means --name=1).
  bool parse(int argc, char** argv, int first, std::string* error,
             const std::vector<std::string>& switches = {});

  // Typed getters: absent → default; present but malformed or out of range → error set, default
  // returned. `seen` tells whether the user gave the flag.
  std::uint64_t u64(std::string_view name, std::uint64_t def, std::uint64_t min, std::uint64_t max);
  double f64(std::string_view name, double def, double min, double max);
  // A comma-separated list of whole numbers, each in [min, max]; absent → `def`.
  std::vector<std::uint64_t> u64_list(std::string_view name, std::vector<std::uint64_t> def,
                                      std::uint64_t min, std::uint64_t max);
  std::string str(std::string_view name, std::string def);
  // One of `choices`.
  std::string choice(std::string_view name, std::string def,
                     const std::vector<std::string>& choices);
  bool has(std::string_view name) const { return values_.count(std::string(name)) != 0; }

  // After all getters ran: flags nobody asked for, and the first conversion error.
  bool finish(std::string* error) const;

 private:
  // --name as a T in [min, max], def when absent; a malformed or out-of-range value records the
  // first error for finish() (`expects` says what was expected) and answers def.
  template <typename T>
  T number(std::string_view name, T def, T min, T max, const char* expects);
  // The value given for --key (marking the flag as known), or null.
  const std::string* lookup(const std::string& key);

  std::map<std::string, std::string> values_;
  std::map<std::string, bool> used_;
  std::string error_;
};

}  // namespace braid::bench
