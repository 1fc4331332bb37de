// Every golden vector (../shared/vectors) through `hcq-dump decode --json`, the CLI's own code path: the .bin file
// is decoded by run_decode, each output line is parsed back as JSON, and the packets, offsets, lengths, fields and
// names must be those the vector's JSON lists. (tests/amd and tests/nv check the decoder libraries; this checks what
// a user of the tool sees.)
#include <gtest/gtest.h>

#include <map>

#include "../amd/vectors.hpp"
#include "../nv/nv_vectors.hpp"
#include "cli.hpp"
#include "nv/facts/arch.hpp"

namespace hcq::dump {
namespace {

using testing::Json;

std::string without(const std::string& s, std::string_view prefix) {
  return s.starts_with(prefix) ? s.substr(prefix.size()) : s;
}

// One packet of the tool's output, with the checks a vector entry asks of it.
struct Out {
  const Json& j;
  std::string ctx;

  void value(const std::string& field, uint64_t want) const {
    const Json* f = j["fields"].find(field);
    ASSERT_NE(f, nullptr) << ctx << ": no field " << field;
    EXPECT_EQ(f->u64(), want) << ctx << ": " << field;
  }
  void name(const std::string& field, const std::string& want) const {
    const Json* n = j["names"].find(field);
    ASSERT_NE(n, nullptr) << ctx << ": no name for " << field;
    EXPECT_EQ(n->str(), want) << ctx << ": name of " << field;
  }
};

// The vectors' PM4 field entries, as the tool names them. Entries that only describe (note, the address space) or
// restate another field in other units are skipped; the few spelled differently are renamed.
void check_pm4_fields(const Json& fields, const Out& o) {
  static const std::map<std::string, std::string> kRenamed = {{"ib_size_dw", "ib_size"},
                                                              {"dw1_reserved", "coher_cntl"}};
  for (const auto& [k, v] : fields.members()) {
    if (k == "note" || k == "space" || k == "start_addr_dw" || k == "dw1_upper_bits" || k == "dw3" || k == "coher_size")
      continue;
    if (k.ends_with("_name") && k.size() > 5) {
      o.name(k.substr(0, k.size() - 5), v.str());
    } else if (k == "gcr_flags") {  // the flags listed are set, every other GCR_ flag is clear
      for (const auto& [f, fv] : o.j["fields"].members()) {
        if (!f.starts_with("GCR_")) continue;
        bool listed = false;
        for (const Json& s : v.items()) listed = listed || s.str() == f;
        EXPECT_EQ(fv.u64() != 0, listed) << o.ctx << ": " << f;
      }
      for (const Json& s : v.items()) o.value(s.str(), 1);
    } else if (k == "gcr_cntl_fields" || k == "dispatch_initiator_fields") {
      const std::string prefix = k == "gcr_cntl_fields" ? "" : "dispatch_initiator.";
      for (const auto& [fk, fv] : v.members()) o.value(prefix + fk, fv.u64());
    } else if (k == "poll_reg" || k == "write_reg2") {
      o.value(k, v["addr_dw"].u64());
      o.name(k, without(v["name"].str(), "reg"));
    } else if (k == "registers") {
      for (const Json& r : v.items()) {
        const std::string reg = without(r["name"].str(), "reg");
        o.value(reg, r["value"].u64());
        if (const Json* rf = r.find("fields"))
          for (const auto& [fk, fv] : rf->members()) o.value(reg + "." + fk, fv.u64());
      }
    } else if (k == "coher_size_hi") {
      o.value(k, v.u64() & 0xff);  // the vector's known doubt: 0xffffffff written into an 8-bit field
    } else {
      o.value(kRenamed.contains(k) ? kRenamed.at(k) : k, v.u64());
    }
  }
}

// SDMA entries are "DWORD.field"; the tool names the field alone. Address halves are checked as the whole address.
void check_sdma_fields(const Json& fields, const Out& o) {
  for (const auto& [k, v] : fields.members()) {
    const std::string f = k.substr(k.find('.') == std::string::npos ? 0 : k.find('.') + 1);
    if (f == "note" || f == "op" || f.ends_with("_31_0") || f.ends_with("_63_32") || f.ends_with("_31_3")) continue;
    if (f == "func_name") o.name("func", v.str());
    else o.value(f, v.u64());
  }
}

// `file` decoded by the tool is the packets listed.
void check_amd_stream(const std::string& target, bool sdma, const std::string& file, const Json& packets,
                      const std::string& ctx) {
  const std::vector<Json> got = testing::decode_json(sdma ? "sdma" : "pm4", target, file);
  ASSERT_EQ(got.size(), packets.items().size()) << ctx;
  for (size_t i = 0; i < got.size(); ++i) {
    const Json& want = packets.items()[i];
    const Out o{got[i], ctx + " packet " + std::to_string(i)};
    const std::string op = want.has("opcode_name") ? without(want["opcode_name"].str(), "PACKET3_")
                                                   : without(want["packet"].str(), "SDMA_PKT_");
    EXPECT_EQ(got[i]["op"].str(), op.starts_with("TIMESTAMP") ? "TIMESTAMP" : op) << o.ctx;
    EXPECT_EQ(got[i]["offset"].u64(), want["dword_offset"].u64() * 4) << o.ctx;
    EXPECT_EQ(got[i]["words"].u64(), want["dword_count"].u64()) << o.ctx;
    EXPECT_FALSE(got[i].has("error")) << o.ctx << ": " << got[i]["error"].str();
    if (const Json* f = want.find("fields")) {
      if (sdma) check_sdma_fields(*f, o);
      else check_pm4_fields(*f, o);
    }
  }
}

TEST(DumpGoldenCli, AmdVectorsDecodeToTheirPacketsAndFields) {
  const auto dir = hcq::amd::testing::vectors_dir();
  if (!dir) GTEST_SKIP() << "golden vectors not found: set HCQ_VECTORS_DIR to shared/vectors";
  const auto cases = hcq::amd::testing::load_amd_cases(*dir);
  ASSERT_FALSE(cases.empty());
  for (const auto& c : cases) {
    const std::string ctx = c.target + "/" + c.name;
    const bool sdma = c.name.starts_with("sdma");
    // The vector's own .bin file, as a user would pass it; a bound queue's IB (listed as words only) from a file
    // of its own.
    check_amd_stream(c.target, sdma, *dir + "/amd/" + c.target + "/" + c.name + ".bin", c.json["packets"], ctx);
    if (const Json* ib = c.json.find("indirect_buffer")) {
      const std::string ib_file =
          testing::write_words(c.target + "-" + c.name + "-ib.bin", hcq::amd::testing::dwords_of((*ib)["dwords"]));
      check_amd_stream(c.target, false, ib_file, (*ib)["packets"], ctx + " IB");
    }
  }
}

TEST(DumpGoldenCli, NvVectorsDecodeToTheirMethodsEntriesAndQmds) {
  const auto dir = hcq::nv::testing::nv_vectors_dir();
  if (!dir) GTEST_SKIP() << "NV golden vectors not found: set HCQ_VECTORS_DIR to shared/vectors";
  const auto cases = hcq::nv::testing::load_nv_cases(*dir);
  ASSERT_FALSE(cases.empty());
  int qmds = 0;
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const auto* arch = nv::find_arch_by_compute_class(static_cast<uint32_t>(c.json["device"]["compute_class"].u64()));
    ASSERT_NE(arch, nullptr);
    const std::string arch_name(arch->arch_name);

    // Pushbuffer methods: one output object per method, the first of a header spanning header + data.
    const std::vector<Json> got = testing::decode_json("nv-push", arch_name, *dir + "/" + c.name + ".bin");
    size_t k = 0;
    for (const Json& header : c.json["pushbuffer_methods"].items()) {
      for (size_t m = 0; m < header["methods"].items().size(); ++m, ++k) {
        const Json& want = header["methods"].items()[m];
        ASSERT_LT(k, got.size());
        const Out o{got[k], want["method_name"].str()};
        // The vectors name compute and copy methods with the older class headers' prefixes (NVC6C0_, NVC6B5_), the
        // tool with the bound class's own; the method name after the prefix is the same.
        const std::string& wanted = want["method_name"].str();
        EXPECT_EQ(got[k]["op"].str(), wanted.substr(wanted.find('_') + 1)) << o.ctx;
        EXPECT_TRUE(got[k]["class"].str().starts_with("NV")) << o.ctx;
        EXPECT_EQ(got[k]["method"].u64(), want["method_offset"].u64()) << o.ctx;
        EXPECT_EQ(got[k]["data"].u64(), want["data"].u64()) << o.ctx;
        EXPECT_EQ(got[k]["subchannel"].u64(), header["subchannel"].u64()) << o.ctx;
        EXPECT_EQ(got[k]["sec_op"].str(), header["sec_op_name"].str()) << o.ctx;
        EXPECT_EQ(got[k]["words"].u64(), m == 0 ? 2u : 1u) << o.ctx;
        if (m == 0) {
          EXPECT_EQ(got[k]["offset"].u64(), header["dword_offset"].u64() * 4) << o.ctx;
        }
        for (const auto& [name, f] : want["fields"].members()) {
          o.value(name, f["value"].u64());
          if (f.has("enum")) o.name(name, f["enum"].str());
        }
      }
    }
    EXPECT_EQ(k, got.size()) << "the tool printed more methods than the vector lists";

    // The GPFIFO entry that submitted it.
    const Json& submit = c.json["capture"]["submit"];
    const uint64_t entry = submit["gpfifo_entry"].u64();
    const std::vector<Json> gp = testing::decode_json(
        "nv-gpfifo", arch_name,
        testing::write_words(c.name + ".gpfifo", {static_cast<uint32_t>(entry), static_cast<uint32_t>(entry >> 32)}));
    ASSERT_EQ(gp.size(), 1u);
    EXPECT_EQ(gp[0]["op"].str(), "GP_ENTRY");
    const Out o{gp[0], "gpfifo entry"};
    for (const auto& [name, v] : submit["gpfifo_entry_decoded"]["fields"].members()) {
      const std::string field = without(without(name, "ENTRY0_"), "ENTRY1_");
      if (field == "OPCODE" || field == "OPERAND") continue;  // control-entry fields; this is a fetch entry
      o.value(field, v.u64());
    }
    o.value("ADDRESS", submit["pushbuffer_va"].u64());

    // The QMD the launch points at: exactly the nonzero fields listed.
    if (const Json* q = c.json.find("qmd")) {
      ++qmds;
      const std::vector<Json> qd = testing::decode_json(
          "nv-qmd", arch_name, testing::write_words(c.name + ".qmd", hcq::nv::testing::hex_dwords((*q)["raw_dwords"])));
      ASSERT_EQ(qd.size(), 1u);
      EXPECT_EQ(qd[0]["op"].str(), "QMD_V03_00");
      EXPECT_EQ(qd[0]["words"].u64() * 4, (*q)["size_bytes"].u64());
      std::map<std::string, uint64_t> want, have;
      for (const auto& [name, v] : (*q)["nonzero_fields"].members()) want[name] = v.u64();
      for (const auto& [name, v] : qd[0]["fields"].members()) have[name] = v.u64();
      EXPECT_EQ(have, want);
    }
  }
  EXPECT_GT(qmds, 0);
}

}  // namespace
}  // namespace hcq::dump
