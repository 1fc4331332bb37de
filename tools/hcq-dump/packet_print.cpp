// Text and JSON renderings of a Packet.
#include "packet_print.hpp"

#include <cstdio>
#include <map>

#include "json_writer.hpp"

namespace hcq::dump {
namespace {

std::string hex(uint64_t v, int digits = 0) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%0*llx", digits, static_cast<unsigned long long>(v));
  return buf;
}

// Field keys, made unique within the packet (a register written twice, say).
std::vector<std::string> unique_keys(const Packet& p) {
  std::map<std::string, int> seen;
  std::vector<std::string> keys;
  keys.reserve(p.fields.size());
  for (const Field& f : p.fields) {
    const int n = ++seen[f.name];
    keys.push_back(n == 1 ? f.name : f.name + "#" + std::to_string(n));
  }
  return keys;
}

}  // namespace

std::string packet_text(const Packet& p) {
  std::string s = hex(p.offset, 4) + "  ";
  if (!p.cls.empty()) s += p.cls + " ";
  s += p.op + "  " + std::to_string(p.words) + (p.words == 1 ? " dword" : " dwords");
  if (!p.sec_op.empty())
    s += "  [" + p.sec_op + " subch " + std::to_string(p.subchannel) + " method " + hex(p.method, 4) + " data " +
         hex(p.data, 8) + "]";
  s += '\n';
  if (!p.ok()) s += "        MALFORMED: " + p.error + '\n';
  for (const Field& f : p.fields) {
    s += "        " + f.name + " = " + hex(f.value);
    if (!f.text.empty()) s += "  " + f.text;
    s += '\n';
  }
  return s;
}

std::string packet_json(const Packet& p) {
  tool::JsonWriter w;
  w.begin_object();
  w.field("offset", uint64_t{p.offset});
  w.field("op", p.op);
  w.field("words", p.words);
  const std::vector<std::string> keys = unique_keys(p);
  w.key("fields").begin_object();
  for (size_t i = 0; i < p.fields.size(); ++i) w.field(keys[i], p.fields[i].value);
  w.end_object();
  w.key("names").begin_object();
  for (size_t i = 0; i < p.fields.size(); ++i)
    if (!p.fields[i].text.empty()) w.field(keys[i], p.fields[i].text);
  w.end_object();
  if (!p.cls.empty() || !p.sec_op.empty()) {
    w.field("class", p.cls);
    w.field("subchannel", p.subchannel);
    w.field("method", p.method);
    w.field("data", p.data);
    w.field("sec_op", p.sec_op);
  }
  if (!p.ok()) w.field("error", p.error);
  w.end_object();
  return w.str();
}

}  // namespace hcq::dump
