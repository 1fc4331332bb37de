// Host cost of encoding one complete NVIDIA kernel launch, the GPU encoders' budget being 200 ns: wait for the
// timeline (SEM_EXECUTE acquire), memory barrier (INVALIDATE_SHADER_CACHES_NO_WFI), the QMD (the program's prebuilt QMD
// copied into kernarg memory, then constant bank 0, grid and block), the launch (SEND_PCAS_A +
// SEND_SIGNALING_PCAS2_B) and the signal folded into the QMD's release semaphore. Per architecture (QMD V3 and V5),
// with constant operands and with symbolic ones reported to a patch sink (what a graph-recorded queue does).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "nv/encode.hpp"
#include "nv/facts/arch.hpp"

namespace {

using namespace hcq;
using namespace hcq::nv;

// A sink that only counts: recording the patch is the queue's cost, not the encoder's.
class CountingSink final : public PatchSink {
 public:
  void on_symbol(size_t, const Sym&, PatchList::Kind, uint8_t, uint8_t, uint8_t) override { ++count; }
  size_t count = 0;
};

void launch_bench(benchmark::State& state, NvArch which, bool symbolic) {
  const NvArchInfo& arch = arch_info(which);
  QmdBuilder builder(arch);
  const uint32_t qmd_words = builder.layout().size_words;
  QmdProgram prog;
  prog.code_address = 0x7f'1234'5600ull;
  prog.code_size = 0x1000;
  prog.registers = 32;
  prog.shared_bytes = 0x1000;
  std::vector<uint32_t> program_qmd(qmd_words);
  builder.program(program_qmd, prog);

  std::vector<uint32_t> words;
  words.reserve(1024);
  std::vector<uint32_t> qmd(qmd_words);
  CountingSink sink;
  const uint64_t timeline = 0x10'0850'0fa0ull, kernargs = 0x10'0860'0000ull, qmd_addr = 0x10'0860'0200ull;
  uint64_t value = 1;
  for (auto _ : state) {
    words.clear();
    PushbufferEncoder enc(arch, words, &sink);
    const Sym wait_value = symbolic ? Sym(Var{0}) : Sym(value);
    const Sym signal_value = symbolic ? Sym(Var{1}) : Sym(value + 1);
    enc.wait(timeline, wait_value);
    enc.memory_barrier();
    std::memcpy(qmd.data(), program_qmd.data(), qmd_words * 4);
    const Dims grid = symbolic ? Dims{Sym(Var{2}), Sym(1u), Sym(1u)} : Dims{Sym(256u), Sym(1u), Sym(1u)};
    builder.launch(qmd, kernargs, 0x400, grid, {Sym(128u), Sym(1u), Sym(1u)}, &sink);
    builder.release(qmd, 0, timeline, signal_value, &sink);
    enc.launch(qmd_addr);
    benchmark::DoNotOptimize(words.data());
    benchmark::DoNotOptimize(qmd.data());
    ++value;
  }
  state.SetLabel(symbolic ? "symbolic wait/signal/grid" : "constant operands");
}

void BM_NvEncodeLaunch_Ampere(benchmark::State& s) { launch_bench(s, NvArch::ampere, false); }
void BM_NvEncodeLaunch_Hopper(benchmark::State& s) { launch_bench(s, NvArch::hopper, false); }
void BM_NvEncodeLaunch_Blackwell(benchmark::State& s) { launch_bench(s, NvArch::blackwell, false); }
void BM_NvEncodeLaunchSymbolic_Hopper(benchmark::State& s) { launch_bench(s, NvArch::hopper, true); }
void BM_NvEncodeLaunchSymbolic_Blackwell(benchmark::State& s) { launch_bench(s, NvArch::blackwell, true); }
BENCHMARK(BM_NvEncodeLaunch_Ampere);
BENCHMARK(BM_NvEncodeLaunch_Hopper);
BENCHMARK(BM_NvEncodeLaunch_Blackwell);
BENCHMARK(BM_NvEncodeLaunchSymbolic_Hopper);
BENCHMARK(BM_NvEncodeLaunchSymbolic_Blackwell);

// A 6 GiB copy (four LAUNCH_DMAs) and its semaphore.
void BM_NvEncodeCopy(benchmark::State& state) {
  const NvArchInfo& arch = arch_info(NvArch::hopper);
  std::vector<uint32_t> words;
  words.reserve(256);
  for (auto _ : state) {
    words.clear();
    PushbufferEncoder enc(arch, words);
    enc.copy(0x30'0000'0000ull, 0x20'0000'0000ull, 6ull << 30);
    enc.copy_signal(0x10'0850'0fa0ull, 7);
    benchmark::DoNotOptimize(words.data());
  }
}
BENCHMARK(BM_NvEncodeCopy);

}  // namespace
