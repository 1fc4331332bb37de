// hcq-dump decode: a file of raw little-endian dwords, decoded as one command-stream format.
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "commands.hpp"
#include "hcq/error.hpp"
#include "packet_print.hpp"
#include "stream_decode.hpp"

namespace hcq::dump {

const char* const kDecodeHelp =
    "usage: hcq-dump decode --format pm4|sdma|aql|nv-gpfifo|nv-push|nv-qmd [--arch ARCH] [--json] FILE\n"
    "\n"
    "Decodes FILE, raw little-endian dwords, one packet after another. ARCH is a gfx target for pm4, sdma and aql\n"
    "(default gfx1100) or an NVIDIA architecture for the nv formats: ampere, ada, hopper, blackwell or sm_NN\n"
    "(default ada). --json prints one JSON object per packet:\n"
    "  {\"offset\": BYTES, \"op\": NAME, \"words\": N, \"fields\": {...}, \"names\": {...}[, \"error\": WHY]}\n"
    "A malformed or unknown packet is printed as such and decoding goes on after it.\n"
    "\n"
    "exit status: 0 every packet decoded, 1 a packet was malformed or unknown (or bytes were left over after the\n"
    "last whole dword), 2 bad command line, 3 FILE unreadable, empty or shorter than one dword.\n";

namespace {

int usage(std::ostream& err, const std::string& message) {
  err << "hcq-dump decode: " << message << "\nrun 'hcq-dump help decode' for usage\n";
  return kExitUsage;
}

}  // namespace

int run_decode(std::span<const std::string_view> args, std::ostream& out, std::ostream& err) {
  std::optional<Format> format;
  Arch arch;
  bool json = false;
  std::string path;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string_view a = args[i];
    if (a == "--help" || a == "-h") {
      out << kDecodeHelp;
      return kExitOk;
    }
    if (a == "--json") {
      json = true;
    } else if (a == "--format" || a == "--arch") {
      if (i + 1 >= args.size()) return usage(err, std::string(a) + " needs a value");
      const std::string_view v = args[++i];
      if (a == "--arch") {
        arch.name = std::string(v);
      } else if (!(format = parse_format(v))) {
        return usage(err, "unknown format '" + std::string(v) + "' (one of " + std::string(format_names()) + ")");
      }
    } else if (a.starts_with("-") && a != "-") {
      return usage(err, "unknown option '" + std::string(a) + "'");
    } else if (!path.empty()) {
      return usage(err, "one FILE only ('" + path + "' and '" + std::string(a) + "')");
    } else {
      path = std::string(a);
    }
  }
  if (!format) return usage(err, "--format is required");
  if (path.empty()) return usage(err, "no FILE given");

  std::string bytes;
  if (path == "-") {
    std::ostringstream s;
    s << std::cin.rdbuf();
    bytes = s.str();
  } else {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      err << "hcq-dump decode: cannot read " << path << ": " << std::strerror(errno) << "\n";
      return kExitInput;
    }
    std::ostringstream s;
    s << in.rdbuf();
    bytes = s.str();
  }
  if (bytes.empty()) {
    err << "hcq-dump decode: " << path << " is empty: nothing to decode\n";
    return kExitInput;
  }
  if (bytes.size() < 4) {
    err << "hcq-dump decode: " << path << " is " << bytes.size()
        << " bytes, shorter than one dword: nothing to decode\n";
    return kExitInput;
  }

  std::vector<Packet> packets;
  try {
    packets = decode_stream(*format, arch, dwords_of_bytes(bytes));
  } catch (const InvalidArgument& e) {  // an unknown --arch; the message lists the known ones
    return usage(err, e.what());
  }
  int status = kExitOk;
  size_t malformed = 0;
  for (const Packet& p : packets) {
    out << (json ? packet_json(p) + "\n" : packet_text(p));
    if (!p.ok()) ++malformed;
  }
  if (malformed) {
    err << "hcq-dump decode: " << malformed << " of " << packets.size() << " packets malformed or unknown\n";
    status = kExitMalformed;
  }
  if (const size_t tail = bytes.size() % 4) {
    err << "hcq-dump decode: " << path << " is " << bytes.size() << " bytes, not a whole number of dwords: the last "
        << tail << (tail == 1 ? " byte was" : " bytes were") << " not decoded\n";
    status = kExitMalformed;
  }
  return status;
}

}  // namespace hcq::dump
