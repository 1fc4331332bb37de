// The strict JSON parser of the safetensors header against RFC 8259's grammar: what it accepts (with the values it
// must produce, written from the RFC), and what it refuses with the byte where the text goes wrong.
#include <string>

#include <gtest/gtest.h>

#include "framework/nn/safetensors_json.hpp"

namespace hcq::fw::json {
namespace {

std::string syntax_error(const std::string& text) {
  try {
    parse(text);
  } catch (const SyntaxError& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(FrameworkSafetensorsJson, Accepts) {
  const Value v = parse(" {\"a\": [1, -0.5e+3, true, false, null], \"b\": {}, \"c\": [], \"\": \"x\"} \n");
  ASSERT_EQ(v.kind, Value::Kind::object);
  ASSERT_EQ(v.members.size(), 4u);
  const Value* a = v.find("a");
  ASSERT_NE(a, nullptr);
  ASSERT_EQ(a->items.size(), 5u);
  EXPECT_EQ(a->items[0].text, "1");
  EXPECT_EQ(a->items[1].text, "-0.5e+3");
  EXPECT_TRUE(a->items[2].boolean);
  EXPECT_EQ(a->items[3].kind, Value::Kind::boolean);
  EXPECT_FALSE(a->items[3].boolean);
  EXPECT_EQ(a->items[4].kind, Value::Kind::null);
  EXPECT_EQ(v.find("")->text, "x");
  EXPECT_EQ(v.members[1].first, "b");  // document order kept
}

TEST(FrameworkSafetensorsJson, StringEscapesAndUtf8) {
  // \u00e9 is é (C3 A9 in UTF-8); \ud83d\ude00 is the surrogate pair of U+1F600 (F0 9F 98 80); raw UTF-8 passes.
  EXPECT_EQ(parse(R"("q\" s\\ /\/ \b\f\n\r\t \u00e9 \ud83d\ude00")").text,
            "q\" s\\ // \b\f\n\r\t \xc3\xa9 \xf0\x9f\x98\x80");
  EXPECT_EQ(parse("\"\xe2\x82\xac\"").text, "\xe2\x82\xac");  // U+20AC as raw UTF-8
}

TEST(FrameworkSafetensorsJson, Refuses) {
  EXPECT_EQ(syntax_error(""), "expected a value, found the end at byte 0");
  EXPECT_EQ(syntax_error("{} x"), "text after the JSON value at byte 3");
  EXPECT_EQ(syntax_error("[1,]"), "unexpected character ']' at byte 3");
  EXPECT_EQ(syntax_error("{\"a\":1,}"), "expected a string key at byte 7");
  EXPECT_EQ(syntax_error("{\"a\" 1}"), "expected ':' after a key at byte 5");
  EXPECT_EQ(syntax_error("{\"a\":1 \"b\":2}"), "expected ',' or '}' in an object at byte 7");
  EXPECT_EQ(syntax_error("{\"a\":1,\"a\":2}"), "duplicate key \"a\" at byte 7");
  EXPECT_EQ(syntax_error("01"), "text after the JSON value at byte 1");  // no leading zeros
  EXPECT_EQ(syntax_error("1."), "expected a digit after '.' at byte 2");
  EXPECT_EQ(syntax_error("-"), "expected a digit at byte 1");
  EXPECT_EQ(syntax_error("1e"), "expected a digit in the exponent at byte 2");
  EXPECT_EQ(syntax_error("NaN"), "unexpected character 'N' at byte 0");
  EXPECT_EQ(syntax_error("tru"), "unknown literal at byte 0");
  EXPECT_EQ(syntax_error("\"abc"), "unterminated string at byte 4");
  EXPECT_EQ(syntax_error("\"a\tb\""), "a control character in a string at byte 2");
  EXPECT_EQ(syntax_error("\"\\x\""), "an unknown escape in a string at byte 2");
  EXPECT_EQ(syntax_error("\"\\u12g4\""), "expected 4 hex digits after \\u at byte 5");
  EXPECT_EQ(syntax_error("\"\\udc00\""), "a lone low surrogate in \\u escapes at byte 7");
  EXPECT_EQ(syntax_error("\"\\ud800x\""), "a high surrogate without its low half at byte 7");
  EXPECT_EQ(syntax_error("\"\xc0\xaf\""), "invalid UTF-8 in a string at byte 1");      // overlong '/'
  EXPECT_EQ(syntax_error("\"\xed\xa0\x80\""), "invalid UTF-8 in a string at byte 1");  // a surrogate
  EXPECT_EQ(syntax_error("\"\xe2\x82\""), "invalid UTF-8 in a string at byte 1");      // cut short
  EXPECT_EQ(syntax_error(std::string(65, '[') + std::string(65, ']')), "nesting deeper than 64 at byte 64");
  EXPECT_EQ(syntax_error(std::string(64, '[') + std::string(64, ']')), "(accepted)");
}

}  // namespace
}  // namespace hcq::fw::json
