#include <braid/status.h>

#include <cstdio>
#include <cstdlib>

#include "util/enum_names.h"

namespace braid {

namespace {
constexpr const char* kCodeNames[] = {
    "OK", "NotFound", "Duplicate", "Conflict", "InvalidArgument", "IOError", "Busy", "Corruption"};
static_assert(util::names_every(kCodeNames, Code::kCorruption));
}  // namespace

std::string_view code_name(Code code) { return util::enum_name(code, kCodeNames, "Unknown"); }

Status::Status(Code code, std::string_view message) : code_(code) {
  if (!message.empty()) message_ = std::make_unique<std::string>(message);
}

Status::Status(const Status& other) : code_(other.code_) {
  if (other.message_) message_ = std::make_unique<std::string>(*other.message_);
}

Status& Status::operator=(const Status& other) {
  if (this != &other) {
    code_ = other.code_;
    message_ = other.message_ ? std::make_unique<std::string>(*other.message_) : nullptr;
  }
  return *this;
}

std::string Status::to_string() const {
  std::string s(code_name(code_));
  if (message_) {
    s += ": ";
    s += *message_;
  }
  return s;
}

namespace detail {
void bad_result_access(const Status& status) {
  std::fprintf(stderr, "braid: value() of an error Result (%s)\n", status.to_string().c_str());
  std::abort();
}
}  // namespace detail

}  // namespace braid
