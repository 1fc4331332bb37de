// libFuzzer targets for the live-capture file readers, chosen at build time (tests/dump_live/meson.build):
//   HCQ_FUZZ_CAPTURE  capture::parse on any text. Checks it returns, and that every event it accepted, written
//                     back with to_line, reads back as the same event (the writer and reader agree).
//   HCQ_FUZZ_BUNDLE   hcq-dump show's reader (dump::show_text) on any text: parse, decode every submission and
//                     ring in whatever format and arch it names, annotate addresses. Checks it returns a defined
//                     exit status.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string_view>

#include "../../tools/hcq-dump/live_commands.hpp"
#include "hcq/backend/capture.hpp"

namespace {

[[maybe_unused]] void roundtrip(const hcq::capture::Event& e) {
  using namespace hcq::capture;
  std::string line;
  if (e.submit) line = to_line(*e.submit);
  else if (e.ring) line = to_line(*e.ring);
  else if (e.alloc) line = to_line(*e.alloc);
  else return;  // signal events are written by the bundle writer, not by to_line
  const Capture back = parse(line);
  if (back.events.size() != 1 || !back.problems.empty()) std::abort();
  const Event& b = back.events[0];
  if (e.submit) {
    const Submission &x = *e.submit, &y = *b.submit;
    if (!b.submit || x.n != y.n || x.ns != y.ns || x.device != y.device || x.arch != y.arch || x.queue != y.queue ||
        x.format != y.format || x.qid != y.qid || x.ring_end != y.ring_end || x.words != y.words ||
        x.dropped != y.dropped)
      std::abort();
  } else if (e.ring) {
    const RingDump &x = *e.ring, &y = *b.ring;
    if (!b.ring || x.device != y.device || x.arch != y.arch || x.queue != y.queue || x.format != y.format ||
        x.read != y.read || x.write != y.write || x.va != y.va || x.words != y.words || x.dropped != y.dropped)
      std::abort();
  } else {
    const AllocEvent &x = *e.alloc, &y = *b.alloc;
    if (!b.alloc || x.freed != y.freed || x.device != y.device || x.kind != y.kind || x.va != y.va || x.size != y.size)
      std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
#if defined(HCQ_FUZZ_CAPTURE)
  const hcq::capture::Capture c = hcq::capture::parse(text);
  for (const hcq::capture::Event& e : c.events) roundtrip(e);
#elif defined(HCQ_FUZZ_BUNDLE)
  std::ostringstream out;
  const int rc = hcq::dump::show_text(text, out);
  if (rc != hcq::dump::kExitOk && rc != hcq::dump::kExitMalformed) std::abort();
#else
#error "build with HCQ_FUZZ_CAPTURE or HCQ_FUZZ_BUNDLE"
#endif
  return 0;
}
