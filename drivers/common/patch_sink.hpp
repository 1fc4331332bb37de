// Where an encoder reports its symbolic operands (hcq::Sym). Every vendor's encoders leave a symbol's bits zero and
// tell a PatchSink which word it lives in and how PatchList would write it, so an HWQueue can record the patch; the
// word index is relative to whatever the encoder writes into (a pushbuffer vector, a packet, a QMD).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "hcq/backend/patch.hpp"
#include "hcq/sym.hpp"

namespace hcq {

// Told about every symbolic operand: it lives in word `word` and is written as PatchList writes (kind, shift, and for
// Kind::field the bit range within that word).
class PatchSink {
 public:
  virtual void on_symbol(size_t word, const Sym& value, PatchList::Kind kind, uint8_t shift, uint8_t lo_bit,
                         uint8_t nbits) = 0;

 protected:
  ~PatchSink() = default;
};

// Keeps what it is told (tests, tools, callers that patch later).
class RecordingSink final : public PatchSink {
 public:
  struct Entry {
    size_t word;
    Sym value;
    PatchList::Kind kind;
    uint8_t shift, lo_bit, nbits;
  };
  void on_symbol(size_t word, const Sym& value, PatchList::Kind kind, uint8_t shift, uint8_t lo_bit,
                 uint8_t nbits) override {
    entries.push_back({word, value, kind, shift, lo_bit, nbits});
  }
  // Writes every recorded symbol into `words` with the variables' values, as PatchList::apply would.
  void apply(std::span<uint32_t> words, std::span<const uint64_t> vars) const {
    for (const Entry& e : entries) {
      const uint64_t v = e.value.eval(vars) >> e.shift;
      switch (e.kind) {
        case PatchList::Kind::u32: words[e.word] = static_cast<uint32_t>(v); break;
        case PatchList::Kind::u64:
          words[e.word] = static_cast<uint32_t>(v);
          words[e.word + 1] = static_cast<uint32_t>(v >> 32);
          break;
        case PatchList::Kind::field: {
          const uint32_t mask = e.nbits >= 32 ? 0xffffffffu : ((1u << e.nbits) - 1u);
          words[e.word] = (words[e.word] & ~(mask << e.lo_bit)) | ((static_cast<uint32_t>(v) & mask) << e.lo_bit);
          break;
        }
      }
    }
  }
  std::vector<Entry> entries;
};

}  // namespace hcq
