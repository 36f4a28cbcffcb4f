#include <braid/status.h>

#include <cstdio>
#include <cstdlib>

namespace braid {

std::string_view code_name(Code code) {
  switch (code) {
    case Code::kOk:
      return "OK";
    case Code::kNotFound:
      return "NotFound";
    case Code::kDuplicate:
      return "Duplicate";
    case Code::kConflict:
      return "Conflict";
    case Code::kInvalidArgument:
      return "InvalidArgument";
    case Code::kIOError:
      return "IOError";
    case Code::kBusy:
      return "Busy";
    case Code::kCorruption:
      return "Corruption";
  }
  return "Unknown";
}

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
