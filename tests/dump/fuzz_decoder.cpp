// libFuzzer target for one command-stream decoder, chosen at build time (HCQ_FUZZ_PM4, _SDMA, _AQL, _NV_PUSH,
// _GPFIFO, _QMD; tests/dump/meson.build builds one executable per decoder). The first input byte picks the target
// or architecture, the rest are the words. Checks what every decoder promises: it returns, every packet lies inside
// the input, and a packet without an error names its operation.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "amd/decode.hpp"
#include "nv/decode.hpp"
#include "nv/facts/arch.hpp"

namespace {

std::vector<uint32_t> words_of(const uint8_t* data, size_t size) {
  std::vector<uint32_t> w(size / 4);
  if (!w.empty()) std::memcpy(w.data(), data, w.size() * 4);
  return w;
}

template <class Packet>
void check(const std::vector<Packet>& packets, size_t words) {
  for (const Packet& p : packets) {
    if (p.offset / 4 + p.words > words && p.words != 0) std::abort();  // a packet beyond the input
    if (p.ok() && p.op.empty()) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t pick = data[0];
  const std::vector<uint32_t> w = words_of(data + 1, size - 1);
#if defined(HCQ_FUZZ_PM4) || defined(HCQ_FUZZ_SDMA) || defined(HCQ_FUZZ_AQL)
  const auto targets = hcq::amd::Target::known();
  const hcq::amd::Target& t = targets[pick % targets.size()];
#if defined(HCQ_FUZZ_PM4)
  check(hcq::amd::decode_pm4(w, t), w.size());
#elif defined(HCQ_FUZZ_SDMA)
  check(hcq::amd::decode_sdma(w, t), w.size());
#else
  check(hcq::amd::decode_aql(w, t), w.size());
#endif
#else
  const auto arches = hcq::nv::nv_arch_table();
  const hcq::nv::NvArchInfo& arch = arches[pick % arches.size()];
#if defined(HCQ_FUZZ_NV_PUSH)
  check(hcq::nv::decode_pushbuffer(w, arch), w.size());
#elif defined(HCQ_FUZZ_GPFIFO)
  check(hcq::nv::decode_gpfifo(w), w.size());
#elif defined(HCQ_FUZZ_QMD)
  // Either layout on any words; also versions hcq does not know.
  const hcq::nv::DecodedEntry e = hcq::nv::decode_qmd(w, pick & 0x80 ? arch.qmd_version : pick & 7, pick & 0x40);
  if (e.ok() && e.words > w.size()) std::abort();
#else
#error "build with one of HCQ_FUZZ_PM4, _SDMA, _AQL, _NV_PUSH, _GPFIFO, _QMD"
#endif
#endif
  return 0;
}
