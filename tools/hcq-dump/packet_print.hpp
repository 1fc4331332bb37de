// How hcq-dump prints a decoded packet: a human-readable block, or one JSON object per packet
// {"offset", "op", "words", "fields": {name: value}, "names": {name: enum or register name}, "error"}, plus "class",
// "subchannel", "method", "data", "sec_op" for NV pushbuffer methods. Shared by every subcommand that shows packets.
#pragma once

#include <string>

#include "stream_decode.hpp"

namespace hcq::dump {

// "0x0000  RELEASE_MEM  8 dwords" then one indented line per field; an error line when malformed. Ends in '\n'.
std::string packet_text(const Packet& p);
// One line of JSON, no trailing newline. A field name met twice in a packet gets "#2", "#3" appended, so every key
// is unique.
std::string packet_json(const Packet& p);

}  // namespace hcq::dump
