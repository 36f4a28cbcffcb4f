// Order-preserving key encoding.
//
// BraidDB keys are byte strings compared with memcmp. These helpers turn integers and composite
// keys into byte strings whose memcmp order equals the natural order of the encoded tuple:
//   * unsigned integers: big-endian;
//   * signed integers: big-endian with the sign bit flipped;
//   * strings inside a composite key: every 0x00 byte becomes 0x00 0xFF and the string ends with
//     0x00 0x01, so a string sorts before any of its extensions and the components after it
//     cannot change the order the string fixes.
// Key has inline storage (no allocation) because it is built on the hot path of every operation.
#pragma once

#include <braid/options.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace braid {

class Key {
 public:
  Key() = default;
  explicit Key(std::string_view bytes) { append_bytes(bytes); }

  Key& u8(std::uint8_t v) { return append_be(v, 1); }
  Key& u16(std::uint16_t v) { return append_be(v, 2); }
  Key& u32(std::uint32_t v) { return append_be(v, 4); }
  Key& u64(std::uint64_t v) { return append_be(v, 8); }
  Key& i32(std::int32_t v) { return u32(static_cast<std::uint32_t>(v) ^ 0x8000'0000u); }
  Key& i64(std::int64_t v) { return u64(static_cast<std::uint64_t>(v) ^ 0x8000'0000'0000'0000ull); }
  // A string component of a composite key (escaped and terminated, see above).
  Key& str(std::string_view s);
  // Raw bytes, unescaped: only safe as the last component.
  Key& append_bytes(std::string_view s);

  void clear() {
    size_ = 0;
    overflow_ = false;
  }
  // False once an append would have exceeded kMaxKeyBytes. An overflowed key never converts
  // to a truncated one (two keys that differ past the limit would be the same record): its
  // view is kMaxKeyBytes + 1 bytes long, which every operation answers with InvalidArgument.
  bool valid() const { return !overflow_ && size_ > 0; }
  bool overflowed() const { return overflow_; }
  std::size_t size() const { return size_; }
  std::string_view view() const { return {buf_, size_}; }
  operator std::string_view() const { return view(); }  // NOLINT: keys pass where views do

 private:
  Key& append_be(std::uint64_t v, std::size_t n);
  Key& overflow();

  char buf_[kMaxKeyBytes + 1];
  std::uint16_t size_ = 0;
  bool overflow_ = false;
};

// Decoding, for applications that read keys back from scans. Each reader consumes its component
// from the front of `in` and answers false (leaving `in` unspecified) on malformed input.
namespace keycodec {
bool read_u8(std::string_view& in, std::uint8_t* out);
bool read_u16(std::string_view& in, std::uint16_t* out);
bool read_u32(std::string_view& in, std::uint32_t* out);
bool read_u64(std::string_view& in, std::uint64_t* out);
bool read_i32(std::string_view& in, std::int32_t* out);
bool read_i64(std::string_view& in, std::int64_t* out);
bool read_str(std::string_view& in, std::string* out);
}  // namespace keycodec

}  // namespace braid
