#include "flags.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <type_traits>

namespace braid::bench {

bool Flags::parse(int argc, char** argv, int first, std::string* error,
                  const std::vector<std::string>& switches) {
  for (int i = first; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a.size() < 3 || a.substr(0, 2) != "--") {
      *error = "unexpected argument '" + std::string(a) + "'";
      return false;
    }
    a.remove_prefix(2);
    std::string name;
    std::string value;
    if (auto eq = a.find('='); eq != std::string_view::npos) {
      name = std::string(a.substr(0, eq));
      value = std::string(a.substr(eq + 1));
    } else {
      name = std::string(a);
      if (std::find(switches.begin(), switches.end(), name) != switches.end()) {
        value = "1";
      } else if (i + 1 >= argc) {
        *error = "flag --" + name + " needs a value";
        return false;
      } else {
        value = argv[++i];
      }
    }
    if (values_.count(name) != 0) {
      *error = "flag --" + name + " given twice";
      return false;
    }
    values_[name] = value;
  }
  return true;
}

namespace {
template <typename T>
std::string range_error(const std::string& key, T min, T max, const std::string& got) {
  return "--" + key + " must be in " + std::to_string(min) + ".." + std::to_string(max) + ", got " +
         got;
}
// `text` as a T: a whole number without sign, or a finite floating-point number; nothing else
// (no trailing characters, no overflow).
template <typename T>
std::optional<T> parse_number(const std::string& text) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  T x;
  if constexpr (std::is_floating_point_v<T>) {
    x = std::strtod(text.c_str(), &end);
    if (!std::isfinite(x)) return std::nullopt;
  } else {
    if (text[0] == '-') return std::nullopt;  // strtoull would wrap it around
    x = std::strtoull(text.c_str(), &end, 10);
  }
  if (*end != '\0' || errno != 0) return std::nullopt;
  return x;
}

}  // namespace

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  for (;;) {
    const std::size_t comma = text.find(',', pos);
    out.push_back(text.substr(pos, comma == std::string::npos ? comma : comma - pos));
    if (comma == std::string::npos) return out;
    pos = comma + 1;
  }
}

std::vector<std::string> parse_name_list(const std::string& flag, const std::string& text,
                                         const std::vector<std::string>& known, std::string* err) {
  if (text == "all") return known;
  std::vector<std::string> out;
  for (std::string& m : split_commas(text)) {
    if (std::find(known.begin(), known.end(), m) == known.end()) {
      std::string names;
      for (const std::string& k : known) names += k + ", ";
      *err = "--" + flag + " must be one of " + names + "all (or a comma-separated list), got '" +
             m + "'";
      return {};
    }
    if (std::find(out.begin(), out.end(), m) != out.end()) {
      *err = "--" + flag + " lists '" + m + "' twice";
      return {};
    }
    out.push_back(std::move(m));
  }
  return out;
}

std::vector<std::uint64_t> Flags::u64_list(std::string_view name, std::vector<std::uint64_t> def,
                                           std::uint64_t min, std::uint64_t max) {
  const std::string key(name);
  const std::string* found = lookup(key);
  if (found == nullptr) return def;
  std::vector<std::uint64_t> out;
  for (const std::string& item : split_commas(*found)) {
    const std::optional<std::uint64_t> x = parse_number<std::uint64_t>(item);
    if (!x) {
      if (error_.empty()) {
        error_ = "--" + key + " expects whole numbers separated by commas, got '" + *found + "'";
      }
      return def;
    }
    if (*x < min || *x > max) {
      if (error_.empty()) error_ = range_error(key, min, max, item);
      return def;
    }
    out.push_back(*x);
  }
  return out;
}

template <typename T>
T Flags::number(std::string_view name, T def, T min, T max, const char* expects) {
  const std::string key(name);
  const std::string* found = lookup(key);
  if (found == nullptr) return def;
  const std::optional<T> x = parse_number<T>(*found);
  if (!x) {
    if (error_.empty()) error_ = "--" + key + " expects " + expects + ", got '" + *found + "'";
    return def;
  }
  if (*x < min || *x > max) {
    if (error_.empty()) error_ = range_error(key, min, max, *found);
    return def;
  }
  return *x;
}

std::uint64_t Flags::u64(std::string_view name, std::uint64_t def, std::uint64_t min,
                         std::uint64_t max) {
  return number<std::uint64_t>(name, def, min, max, "a whole number");
}

double Flags::f64(std::string_view name, double def, double min, double max) {
  return number<double>(name, def, min, max, "a number");
}

const std::string* Flags::lookup(const std::string& key) {
  used_[key] = true;
  auto it = values_.find(key);
  return it == values_.end() ? nullptr : &it->second;
}

std::string Flags::str(std::string_view name, std::string def) {
  const std::string* v = lookup(std::string(name));
  return v == nullptr ? def : *v;
}

std::string Flags::choice(std::string_view name, std::string def,
                          const std::vector<std::string>& choices) {
  std::string v = str(name, std::move(def));
  for (const auto& c : choices) {
    if (c == v) return v;
  }
  if (error_.empty()) {
    error_ = "--" + std::string(name) + " must be one of";
    for (const auto& c : choices) error_ += " " + c;
    error_ += ", got '" + v + "'";
  }
  return choices.front();
}

bool Flags::finish(std::string* error) const {
  for (const auto& [name, value] : values_) {
    if (used_.count(name) == 0) {
      *error = "unknown flag --" + name;
      return false;
    }
  }
  if (!error_.empty()) {
    *error = error_;
    return false;
  }
  return true;
}

}  // namespace braid::bench
