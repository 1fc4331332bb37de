// The appending end every vendor's command encoder writes through: 32-bit words into a vector, symbolic operands
// (hcq::Sym) left zero and reported to a PatchSink with their word index. Without a sink a symbolic operand is an
// InvalidArgument naming what was being encoded.
#pragma once

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <exception>
#include <span>
#include <vector>

#include "common/patch_sink.hpp"
#include "hcq/backend/patch.hpp"
#include "hcq/error.hpp"
#include "hcq/sym.hpp"

namespace hcq {

class WordWriter {
 public:
  // `stream` names what is written, for the error ("AMD packet", "NV pushbuffer").
  WordWriter(std::vector<uint32_t>& words, PatchSink* sink, const char* stream)
      : w_(words), sink_(sink), stream_(stream) {}
  void u32(uint32_t v) { w_.push_back(v); }
  void u64(uint64_t v) {
    w_.push_back(static_cast<uint32_t>(v));
    w_.push_back(static_cast<uint32_t>(v >> 32));
  }
  // The low 32 bits of (value >> shift).
  void sym32(const Sym& v, uint8_t shift = 0) {
    if (v.is_const()) return u32(static_cast<uint32_t>(v.add >> shift));
    report(w_.size(), v, PatchList::Kind::u32, shift, 0, 32);
    w_.push_back(0);
  }
  // A 64-bit value in two words, low first.
  void sym64(const Sym& v) {
    if (v.is_const()) return u64(v.add);
    report(w_.size(), v, PatchList::Kind::u64, 0, 0, 64);
    u64(0);
  }
  // One word: `fixed` bits plus (value >> shift) in field f's bits. F is a vendor's bit-field type (lo, width,
  // place(), mask()); its bits lie within one 32-bit word.
  template <class F>
  void sym_field(uint32_t fixed, const F& f, const Sym& v, uint8_t shift = 0) {
    if (v.is_const()) return u32(fixed | static_cast<uint32_t>(f.place(v.add >> shift)));
    report(w_.size(), v, PatchList::Kind::field, shift, static_cast<uint8_t>(f.lo), static_cast<uint8_t>(f.width));
    w_.push_back(fixed & ~static_cast<uint32_t>(f.mask() << f.lo));
  }
  size_t size() const { return w_.size(); }
  std::vector<uint32_t>& words() { return w_; }

  // A packet of exactly n words, written in place: the vector grows once, then each word is one store (a launch
  // writes tens of words, so a capacity check per word shows). Nothing else may append to the vector while a Packet
  // is open.
  class Packet {
   public:
    Packet(const Packet&) = delete;
    Packet& operator=(const Packet&) = delete;
    // An encoder that throws part-way (a symbolic operand without a sink) leaves the packet short; its caller
    // discards the words.
    ~Packet() {
      assert((at_ == end_ || std::uncaught_exceptions() > 0) && "packet: word count differs from its opened size");
    }
    void u32(uint32_t v) { *at_++ = v; }
    // Copies `ws` and returns where they went (for rewriting some of them).
    uint32_t* words(std::span<const uint32_t> ws) {
      uint32_t* first = at_;
      std::copy(ws.begin(), ws.end(), at_);
      at_ += ws.size();
      return first;
    }
    // The index in the word vector of the next word written.
    size_t index() const { return first_ + static_cast<size_t>(at_ - base_); }
    void u64(uint64_t v) {
      u32(static_cast<uint32_t>(v));
      u32(static_cast<uint32_t>(v >> 32));
    }
    void sym32(const Sym& v, uint8_t shift = 0) {
      if (v.is_const()) [[likely]]
        return u32(static_cast<uint32_t>(v.add >> shift));
      w_.report(index(), v, PatchList::Kind::u32, shift, 0, 32);
      u32(0);
    }
    void sym64(const Sym& v) {
      if (v.is_const()) [[likely]]
        return u64(v.add);
      w_.report(index(), v, PatchList::Kind::u64, 0, 0, 64);
      u64(0);
    }
    template <class F>
    void sym_field(uint32_t fixed, const F& f, const Sym& v, uint8_t shift = 0) {
      if (v.is_const()) [[likely]]
        return u32(fixed | static_cast<uint32_t>(f.place(v.add >> shift)));
      w_.report(index(), v, PatchList::Kind::field, shift, static_cast<uint8_t>(f.lo), static_cast<uint8_t>(f.width));
      u32(fixed & ~static_cast<uint32_t>(f.mask() << f.lo));
    }

   private:
    friend class WordWriter;
    Packet(WordWriter& w, size_t first, size_t n)
        : w_(w), first_(first), base_(w.w_.data() + first), at_(base_), end_(base_ + n) {}
    WordWriter& w_;
    size_t first_;
    uint32_t* base_;
    uint32_t* at_;
    uint32_t* end_;
  };
  Packet packet(size_t n) {
    const size_t first = w_.size();
    w_.resize(first + n);
    return Packet(*this, first, n);
  }

 private:
  [[gnu::noinline]] void report(size_t word, const Sym& v, PatchList::Kind kind, uint8_t shift, uint8_t lo,
                                uint8_t nbits) {
    if (!sink_)
      throw InvalidArgument(
          cat("symbolic operand (variable v", v.var, ") in an ", stream_, ", but no patch sink to record it"));
    sink_->on_symbol(word, v, kind, shift, lo, nbits);
  }
  std::vector<uint32_t>& w_;
  PatchSink* sink_;
  const char* stream_;
};

}  // namespace hcq
