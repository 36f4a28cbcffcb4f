// Error values of the public API.
//
// Expected outcomes (a key not found, a write-write conflict) and environment errors (I/O) are
// values, never exceptions: the engine runs transactions as coroutines and nothing may throw
// across a suspension point. Programmer errors (broken invariants) assert instead.
#pragma once

#include <cstdint>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace braid {

enum class Code : std::uint8_t {
  kOk = 0,
  kNotFound,         // the key has no visible version
  kDuplicate,        // insert of a key that is visible
  kConflict,         // write-write conflict under snapshot isolation; the transaction was aborted
  kInvalidArgument,  // bad input: key or value size, unknown table, transaction not active, ...
  kIOError,          // the environment failed (file system, memory reservation)
  kBusy,             // a bounded resource is exhausted (transaction slots, table slots)
  kCorruption,       // persistent data failed a check
};

std::string_view code_name(Code code);

class Status;
namespace detail {
// Reading the value of an error Result is a programmer error: report it and abort.
[[noreturn]] void bad_result_access(const Status& status);
}  // namespace detail

// A Status is one byte of code plus an optional heap-allocated context message, so the OK path
// and the message-less expected outcomes (NotFound, Conflict) never allocate.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Code code, std::string_view message = {});
  Status(const Status& other);
  Status& operator=(const Status& other);
  Status(Status&&) noexcept = default;
  Status& operator=(Status&&) noexcept = default;
  ~Status() = default;

  static Status ok() { return Status(); }
  static Status not_found(std::string_view m = {}) { return {Code::kNotFound, m}; }
  static Status duplicate(std::string_view m = {}) { return {Code::kDuplicate, m}; }
  static Status conflict(std::string_view m = {}) { return {Code::kConflict, m}; }
  static Status invalid_argument(std::string_view m) { return {Code::kInvalidArgument, m}; }
  static Status io_error(std::string_view m) { return {Code::kIOError, m}; }
  static Status busy(std::string_view m) { return {Code::kBusy, m}; }
  static Status corruption(std::string_view m) { return {Code::kCorruption, m}; }

  bool is_ok() const { return code_ == Code::kOk; }
  explicit operator bool() const { return is_ok(); }
  Code code() const { return code_; }
  std::string_view message() const { return message_ ? std::string_view(*message_) : ""; }
  // "NotFound" or "InvalidArgument: key is empty".
  std::string to_string() const;

  friend bool operator==(const Status& s, Code c) { return s.code_ == c; }

 private:
  Code code_ = Code::kOk;
  std::unique_ptr<std::string> message_;
};

// Either a value or a non-OK Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  // NOLINTNEXTLINE: implicit, so that a function returns a value or a Status alike
  Result(T value) : has_value_(true) { new (static_cast<void*>(&value_)) T(std::move(value)); }
  Result(Status status) : has_value_(false), status_(std::move(status)) {}  // NOLINT: implicit
  Result(Code code, std::string_view message = {}) : Result(Status(code, message)) {}
  Result(Result&& other) noexcept(std::is_nothrow_move_constructible_v<T>)
      : has_value_(other.has_value_), status_(std::move(other.status_)) {
    if (has_value_) new (static_cast<void*>(&value_)) T(std::move(other.value_));
  }
  Result(const Result&) = delete;
  Result& operator=(const Result&) = delete;
  Result& operator=(Result&&) = delete;
  ~Result() {
    if (has_value_) value_.~T();
  }

  bool is_ok() const { return has_value_; }
  explicit operator bool() const { return has_value_; }
  // The error; Status::ok() when a value is held.
  const Status& status() const { return status_; }
  Code code() const { return status_.code(); }

  T& value() & { return checked(); }
  const T& value() const& { return const_cast<Result*>(this)->checked(); }
  T&& value() && { return std::move(checked()); }
  T* operator->() { return &checked(); }
  const T* operator->() const { return &const_cast<Result*>(this)->checked(); }
  T& operator*() & { return checked(); }
  const T& operator*() const& { return const_cast<Result*>(this)->checked(); }
  // `Transaction tx = *db->begin();` moves the value out of the temporary.
  T&& operator*() && { return std::move(checked()); }

 private:
  T& checked() {
    if (!has_value_) [[unlikely]]
      detail::bad_result_access(status_);
    return value_;
  }

  bool has_value_;
  Status status_;
  union {
    T value_;
  };
};

}  // namespace braid
