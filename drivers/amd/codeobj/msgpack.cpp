#include "amd/codeobj/msgpack.hpp"

#include "hcq/error.hpp"

namespace hcq::amd::msgpack {
namespace {

constexpr int kMaxDepth = 32;

[[noreturn]] void bad(std::string_view what, size_t pos) {
  throw CompileError(cat("bad code object: metadata ", what, " at byte ", pos, " of the msgpack note"));
}

}  // namespace

uint8_t Reader::byte_at(size_t pos) const {
  if (pos >= p_.size()) bad("ends early", pos);
  return p_[pos];
}

void Reader::need(uint64_t nbytes) const {
  if (nbytes > p_.size() - pos_) bad(cat("claims ", nbytes, " bytes with ", p_.size() - pos_, " left"), pos_);
}

uint64_t Reader::be(size_t nbytes) {
  need(nbytes);
  uint64_t v = 0;
  for (size_t i = 0; i < nbytes; ++i) v = (v << 8) | p_[pos_ + i];
  pos_ += nbytes;
  return v;
}

Reader::Type Reader::peek() const {
  const uint8_t b = byte_at(pos_);
  if (b <= 0x7f || b == 0xcc || b == 0xcd || b == 0xce || b == 0xcf) return Type::uint;
  if (b >= 0xe0 || (b >= 0xd0 && b <= 0xd3)) return Type::sint;
  if ((b & 0xf0) == 0x80 || b == 0xde || b == 0xdf) return Type::map;
  if ((b & 0xf0) == 0x90 || b == 0xdc || b == 0xdd) return Type::array;
  if ((b & 0xe0) == 0xa0 || (b >= 0xd9 && b <= 0xdb)) return Type::str;
  switch (b) {
    case 0xc0: return Type::nil;
    case 0xc2:
    case 0xc3: return Type::boolean;
    case 0xc4:
    case 0xc5:
    case 0xc6: return Type::bin;
    case 0xca: return Type::f32;
    case 0xcb: return Type::f64;
    case 0xc7:
    case 0xc8:
    case 0xc9:
    case 0xd4:
    case 0xd5:
    case 0xd6:
    case 0xd7:
    case 0xd8: return Type::ext;
    default: bad(cat("has the unused type byte ", hex(b)), pos_);
  }
}

uint32_t Reader::map_header() {
  const size_t at = pos_;
  const uint8_t b = byte_at(pos_++);
  uint64_t n;
  if ((b & 0xf0) == 0x80) n = b & 0x0f;
  else if (b == 0xde) n = be(2);
  else if (b == 0xdf) n = be(4);
  else bad(cat("expected a map, found type byte ", hex(b)), at);
  // Each pair takes at least two bytes: a count beyond that cannot be real.
  if (n > remaining() / 2) bad(cat("map of ", n, " pairs with ", remaining(), " bytes left"), at);
  return static_cast<uint32_t>(n);
}

uint32_t Reader::array_header() {
  const size_t at = pos_;
  const uint8_t b = byte_at(pos_++);
  uint64_t n;
  if ((b & 0xf0) == 0x90) n = b & 0x0f;
  else if (b == 0xdc) n = be(2);
  else if (b == 0xdd) n = be(4);
  else bad(cat("expected an array, found type byte ", hex(b)), at);
  if (n > remaining()) bad(cat("array of ", n, " elements with ", remaining(), " bytes left"), at);
  return static_cast<uint32_t>(n);
}

std::string_view Reader::str() {
  const size_t at = pos_;
  const uint8_t b = byte_at(pos_++);
  uint64_t n;
  if ((b & 0xe0) == 0xa0) n = b & 0x1f;
  else if (b == 0xd9) n = be(1);
  else if (b == 0xda) n = be(2);
  else if (b == 0xdb) n = be(4);
  else bad(cat("expected a string, found type byte ", hex(b)), at);
  need(n);
  std::string_view s(reinterpret_cast<const char*>(p_.data() + pos_), static_cast<size_t>(n));
  pos_ += static_cast<size_t>(n);
  return s;
}

uint64_t Reader::uint() {
  const size_t at = pos_;
  const uint8_t b = byte_at(pos_++);
  if (b <= 0x7f) return b;
  int64_t s;
  switch (b) {
    case 0xcc: return be(1);
    case 0xcd: return be(2);
    case 0xce: return be(4);
    case 0xcf: return be(8);
    case 0xd0: s = static_cast<int8_t>(be(1)); break;
    case 0xd1: s = static_cast<int16_t>(be(2)); break;
    case 0xd2: s = static_cast<int32_t>(be(4)); break;
    case 0xd3: s = static_cast<int64_t>(be(8)); break;
    default: bad(cat("expected an unsigned integer, found type byte ", hex(b)), at);
  }
  if (s < 0) bad(cat("expected an unsigned integer, found ", s), at);
  return static_cast<uint64_t>(s);
}

void Reader::skip() { skip_depth(0); }

void Reader::skip_depth(int depth) {
  if (depth > kMaxDepth) bad(cat("nests deeper than ", kMaxDepth), pos_);
  const size_t at = pos_;
  switch (peek()) {
    case Type::nil:
    case Type::boolean: ++pos_; return;
    case Type::uint: uint(); return;
    case Type::sint: {
      const uint8_t b = p_[pos_++];
      if (b >= 0xe0) return;
      need(size_t{1} << (b - 0xd0));
      pos_ += size_t{1} << (b - 0xd0);
      return;
    }
    case Type::f32:
      ++pos_;
      need(4);
      pos_ += 4;
      return;
    case Type::f64:
      ++pos_;
      need(8);
      pos_ += 8;
      return;
    case Type::str: str(); return;
    case Type::bin: {
      const uint8_t b = p_[pos_++];
      const uint64_t n = be(b == 0xc4 ? 1 : b == 0xc5 ? 2 : 4);
      need(n);
      pos_ += static_cast<size_t>(n);
      return;
    }
    case Type::ext: {
      const uint8_t b = p_[pos_++];
      uint64_t n;
      if (b >= 0xd4) n = size_t{1} << (b - 0xd4);
      else n = be(b == 0xc7 ? 1 : b == 0xc8 ? 2 : 4);
      need(n + 1);  // the type byte, then the data
      pos_ += static_cast<size_t>(n + 1);
      return;
    }
    case Type::array: {
      const uint32_t n = array_header();
      for (uint32_t i = 0; i < n; ++i) skip_depth(depth + 1);
      return;
    }
    case Type::map: {
      const uint32_t n = map_header();
      for (uint32_t i = 0; i < n; ++i) {
        skip_depth(depth + 1);
        skip_depth(depth + 1);
      }
      return;
    }
  }
  bad("has a value of no known type", at);
}

}  // namespace hcq::amd::msgpack
