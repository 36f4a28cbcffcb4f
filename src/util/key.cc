#include <braid/key.h>

namespace braid {

Key& Key::overflow() {
  if (!overflow_) {
    std::memset(buf_ + size_, 0, sizeof buf_ - size_);
    size_ = kMaxKeyBytes + 1;
    overflow_ = true;
  }
  return *this;
}

Key& Key::append_be(std::uint64_t v, std::size_t n) {
  if (overflow_ || size_ + n > kMaxKeyBytes) return overflow();
  for (std::size_t i = 0; i < n; ++i) buf_[size_ + i] = static_cast<char>(v >> (8 * (n - 1 - i)));
  size_ = static_cast<std::uint16_t>(size_ + n);
  return *this;
}

Key& Key::append_bytes(std::string_view s) {
  if (overflow_ || size_ + s.size() > kMaxKeyBytes) return overflow();
  std::memcpy(buf_ + size_, s.data(), s.size());
  size_ = static_cast<std::uint16_t>(size_ + s.size());
  return *this;
}

Key& Key::str(std::string_view s) {
  // The common string holds no NUL: one copy and the terminator, not a call per byte (TPC-C's
  // last names went through this twice per customer write).
  if (!s.empty() && std::memchr(s.data(), '\0', s.size()) == nullptr) {
    return append_bytes(s).append_be(0x0001, 2);
  }
  for (char c : s) {
    if (c == '\0') {
      append_be(0x00FF, 2);
    } else {
      append_be(static_cast<unsigned char>(c), 1);
    }
  }
  return append_be(0x0001, 2);
}

namespace keycodec {

namespace {
template <typename T>
bool read_be(std::string_view& in, std::size_t n, T* out) {
  if (in.size() < n) return false;
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < n; ++i) v = (v << 8) | static_cast<unsigned char>(in[i]);
  in.remove_prefix(n);
  *out = static_cast<T>(v);
  return true;
}
}  // namespace

bool read_u8(std::string_view& in, std::uint8_t* out) { return read_be(in, 1, out); }
bool read_u16(std::string_view& in, std::uint16_t* out) { return read_be(in, 2, out); }
bool read_u32(std::string_view& in, std::uint32_t* out) { return read_be(in, 4, out); }
bool read_u64(std::string_view& in, std::uint64_t* out) { return read_be(in, 8, out); }

bool read_i32(std::string_view& in, std::int32_t* out) {
  std::uint32_t u;
  if (!read_u32(in, &u)) return false;
  *out = static_cast<std::int32_t>(u ^ 0x8000'0000u);
  return true;
}

bool read_i64(std::string_view& in, std::int64_t* out) {
  std::uint64_t u;
  if (!read_u64(in, &u)) return false;
  *out = static_cast<std::int64_t>(u ^ 0x8000'0000'0000'0000ull);
  return true;
}

bool read_str(std::string_view& in, std::string* out) {
  out->clear();
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '\0') {
      out->push_back(in[i]);
      continue;
    }
    if (i + 1 >= in.size()) return false;
    const auto next = static_cast<unsigned char>(in[i + 1]);
    if (next == 0x01) {
      in.remove_prefix(i + 2);
      return true;
    }
    if (next != 0xFF) return false;
    out->push_back('\0');
    ++i;
  }
  return false;  // no terminator
}

}  // namespace keycodec
}  // namespace braid
