// `hcq-dump show CAPTURE|BUNDLE`: prints a capture file or a hang bundle, packets decoded (stream_decode), every
// address operand annotated with the allocation it falls in (buf#N+0xOFF), a freed one, or none.
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "hcq/backend/capture.hpp"
#include "hcq/bundle.hpp"
#include "hcq/error.hpp"
#include "live_commands.hpp"
#include "packet_print.hpp"

namespace hcq::dump {
namespace {

struct Buf {
  uint64_t id, size;
  std::string device, kind;
};

// Allocations as the events went: live ones by start address, freed ones kept to name stale pointers.
class AllocMap {
 public:
  void apply(const capture::AllocEvent& a) {
    if (!a.freed) {
      live_[a.va] = Buf{++next_, a.size, a.device, a.kind};
      return;
    }
    auto it = live_.find(a.va);
    if (it == live_.end()) return;
    freed_[a.va] = it->second;
    live_.erase(it);
  }
  std::string describe(uint64_t addr) const {
    if (auto s = find(live_, addr)) return *s;
    if (auto s = find(freed_, addr)) return "freed " + *s;
    return "unmapped (no allocation recorded)";
  }

 private:
  static std::optional<std::string> find(const std::map<uint64_t, Buf>& m, uint64_t addr) {
    auto it = m.upper_bound(addr);
    if (it == m.begin()) return std::nullopt;
    --it;
    if (addr - it->first >= it->second.size) return std::nullopt;
    const std::string& kind = it->second.kind;
    const char* prefix = kind == "side" ? "side#" : kind == "signals" ? "signals#" : "buf#";
    return cat(prefix, it->second.id, "+", hex(addr - it->first));
  }
  std::map<uint64_t, Buf> live_, freed_;
  uint64_t next_ = 0;
};

std::string lower(std::string_view s) {
  std::string o(s);
  for (char& c : o) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return o;
}

bool is_address_name(const std::string& n) {
  const std::string l = lower(n);
  // NV copy class: OFFSET_IN_UPPER / OFFSET_OUT_LOWER are the source and destination addresses.
  return l.find("addr") != std::string::npos || l.starts_with("offset_in_") || l.starts_with("offset_out_");
}

// NV methods carry a 64-bit address as two methods (..._UPPER / _HI then ..._LOWER / _LO): pair them up.
bool ends_with(const std::string& s, std::string_view t) { return s.size() >= t.size() && s.ends_with(t); }

// Words in a decode format (or raw, for hcq's CPU queue words and formats this build does not decode), with every
// address annotated by the allocation it falls in.
void show_words(const std::string& format, const std::string& arch, std::span<const uint32_t> words,
                const AllocMap& allocs, std::ostream& out) {
  const std::optional<Format> f = parse_format(format);
  if (!f) {
    // hcq's CPU queue words (or a format this build does not decode): raw.
    for (size_t i = 0; i < words.size(); ++i)
      out << (i % 8 == 0 ? "    " + hex(i * 4) + ":" : std::string()) << " " << hex(words[i])
          << (i % 8 == 7 || i + 1 == words.size() ? "\n" : "");
    return;
  }
  std::vector<Packet> packets;
  try {
    packets = decode_stream(*f, Arch{arch}, words);
  } catch (const Error&) {
    packets = decode_stream(*f, Arch{}, words);  // an arch this build does not know: the default tables
    out << "    (arch " << arch << " unknown here; decoded with " << default_arch(*f) << ")\n";
  }
  std::map<std::string, uint64_t> upper, lower;  // address name prefix -> a half still waiting for its pair
  for (const Packet& p : packets) {
    std::string text = packet_text(p);
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) out << "    " << line << "\n";
    // An NV method that carries half an address carries it in place in its data (SEM_ADDR_LO's OFFSET field is
    // bits 31:2, shifted): annotate by the method's name and data; every other packet by its fields.
    std::vector<std::pair<std::string, uint64_t>> named;
    if (!p.cls.empty()) {
      named.emplace_back(p.op, p.data);
    } else {
      for (const Field& fl : p.fields) named.emplace_back(fl.name, fl.value);
    }
    for (const auto& [n, value] : named) {
      if (!is_address_name(n)) continue;
      uint64_t addr = value;
      // The halves come in either order (NV writes SEM_ADDR_LO first, OFFSET_IN_UPPER first): pair each with the
      // other half's latest value.
      const bool hi = ends_with(n, "_UPPER") || ends_with(n, "_HI");
      const bool lo = ends_with(n, "_LOWER") || ends_with(n, "_LO");
      if (hi || lo) {
        const std::string key = n.substr(0, n.rfind('_'));
        auto& mine = hi ? upper : lower;
        auto& other = hi ? lower : upper;
        auto it = other.find(key);
        if (it == other.end()) {
          mine[key] = value;
          continue;
        }
        addr = hi ? value << 32 | (it->second & 0xffffffffu) : it->second << 32 | (value & 0xffffffffu);
        other.erase(it);
      }
      if (addr == 0) continue;
      out << "            " << n << " " << hex(addr) << " -> " << allocs.describe(addr) << "\n";
    }
  }
}

void show_submission(const capture::Submission& s, const AllocMap& allocs, std::ostream& out) {
  out << "submit #" << s.n << "  " << s.device << " " << s.queue << " queue " << s.qid << "  " << s.format
      << "  ring_end " << s.ring_end << "  " << s.words.size() << " dwords";
  if (s.dropped) out << " (" << s.dropped << " more not kept)";
  out << "\n";
  show_words(s.format, s.arch, s.words, allocs, out);
}

void show_ring(const capture::RingDump& r, const AllocMap& allocs, std::ostream& out) {
  if (r.va != 0) {
    out << "  segment at " << hex(r.va) << " (entry " << r.read << ")  " << r.format << "  " << r.words.size()
        << " dwords";
    if (r.dropped)
      out << (r.words.empty() ? " (not readable from the host: " : " (") << r.dropped << " dwords not kept)";
  } else {
    out << "ring " << r.device << " " << r.queue << "  " << r.format << "  read " << r.read << " write " << r.write
        << "  " << r.words.size() << " dwords pending";
    if (r.dropped) out << " (" << r.dropped << " more not kept)";
  }
  out << "\n";
  show_words(r.format, r.arch, r.words, allocs, out);
}

}  // namespace

int show_text(std::string_view text, std::ostream& out) {
  const capture::Capture c = capture::parse(text);
  if (c.header) {
    if (c.header->num("hcq_bundle")) {
      out << "hang bundle (" << (c.header->str("reason") ? *c.header->str("reason") : "?") << ")\n";
      for (const char* k : {"device", "arch", "interface", "driver_version", "error", "state", "rings_error"})
        if (const std::string* v = c.header->str(k)) out << "  " << k << ": " << *v << "\n";
    } else if (auto v = c.header->num("hcq_capture")) {
      out << "capture, format version " << *v << "\n";
    }
  } else {
    out << "(no header line)\n";
  }
  AllocMap allocs;
  size_t n_submits = 0;
  for (const capture::Event& e : c.events) {
    if (e.alloc) {
      allocs.apply(*e.alloc);
      out << (e.alloc->freed ? "free  " : "alloc ") << e.alloc->device << " " << e.alloc->kind << " va "
          << hex(e.alloc->va) << " size " << hex(e.alloc->size) << "\n";
    } else if (e.signal) {
      out << "signal " << e.signal->label << " at " << hex(e.signal->addr) << ": value " << e.signal->value
          << ", expected " << e.signal->expected << "\n";
    } else if (e.submit) {
      ++n_submits;
      show_submission(*e.submit, allocs, out);
    } else if (e.ring) {
      show_ring(*e.ring, allocs, out);
    }
  }
  out << n_submits << " submissions\n";
  for (const std::string& p : c.problems) out << "problem: " << p << "\n";
  return c.problems.empty() ? kExitOk : kExitMalformed;
}

int run_show(std::span<const std::string_view> args, std::ostream& out, std::ostream& err) {
  if (args.size() != 1 || args[0] == "--help" || args[0] == "-h") {
    (args.size() == 1 ? out : err) << "usage: hcq-dump show CAPTURE|BUNDLE_DIR\n";
    return args.size() == 1 ? kExitOk : kExitUsage;
  }
  std::filesystem::path path(args[0]);
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) path /= bundle::kFileName;
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    err << "hcq-dump show: cannot read " << path.string() << "\n";
    return kExitInput;
  }
  std::stringstream ss;
  ss << f.rdbuf();
  return show_text(ss.str(), out);
}

}  // namespace hcq::dump
