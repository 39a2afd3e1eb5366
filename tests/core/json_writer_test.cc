// The one JSON writer (src/core/json_writer.h): string escaping, the punctuation between members
// and values, members spliced into an object another writer opened, and numbers.
#include "src/core/json_writer.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

#include "src/core/text.h"

namespace spillway {
namespace {

TEST(JsonWriter, EscapesQuotesBackslashesAndControlCharactersOnly) {
  std::string out;
  append_json_string(out, std::string("a\"b\\c\n\t\x01\x1f/\x7f\xc3\xa9", 13));
  EXPECT_EQ(out, std::string("\"a\\\"b\\\\c\\u000a\\u0009\\u0001\\u001f/\x7f\xc3\xa9\""));
  std::string nul;
  append_json_string(nul, std::string(1, '\0'));
  EXPECT_EQ(nul, "\"\\u0000\"");
  std::string empty;
  append_json_string(empty, "");
  EXPECT_EQ(empty, "\"\"");
}

TEST(JsonWriter, PutsCommasAndColonsBetweenMembersAndValues) {
  std::string out;
  JsonWriter json(out);
  json.begin_object()
      .member("s", "x")
      .member("t", true)
      .member("n", std::int64_t{-3})
      .member("u", std::numeric_limits<std::uint64_t>::max())
      .null_member("z")
      .key("a")
      .begin_array()
      .value(1)
      .begin_object()
      .end_object()
      .begin_array()
      .end_array()
      .value("y")
      .end_array()
      .key("o")
      .begin_object()
      .member("k", false)
      .end_object()
      .end_object();
  EXPECT_EQ(out, R"({"s":"x","t":true,"n":-3,"u":18446744073709551615,"z":null,)"
                 R"("a":[1,{},[],"y"],"o":{"k":false}})");
}

// The string grows many times on the way (keys and short values are written in one step each).
TEST(JsonWriter, ManyMembersIntoAStringThatGrows) {
  std::string out;
  std::string expected = "{";
  JsonWriter json(out);
  json.begin_object();
  for (int i = 0; i < 200; ++i) {
    json.member("a_longer_member_name", i % 2 == 0).member("n", i).null_member("z");
    expected += std::string(i > 0 ? "," : "") +
                "\"a_longer_member_name\":" + (i % 2 == 0 ? "true" : "false") +
                ",\"n\":" + std::to_string(i) + ",\"z\":null";
  }
  json.end_object();
  EXPECT_EQ(out, expected + "}");
}

TEST(JsonWriter, GoesOnInsideAnObjectOpenedElsewhere) {
  std::string fields;
  JsonWriter::in_object(fields, false).member("a", 1).member("b", "c");
  EXPECT_EQ(fields, R"("a":1,"b":"c")");

  std::string line = "{\"ts\":1";
  JsonWriter::in_object(line, true).members(fields).members("").end_object();
  EXPECT_EQ(line, R"({"ts":1,"a":1,"b":"c"})");

  std::string empty = "{";
  JsonWriter::in_object(empty, false).members("").end_object();
  EXPECT_EQ(empty, "{}");
}

TEST(JsonWriter, WritesDoublesInPlainDecimalsAndNotFiniteOnesAsNull) {
  std::string out;
  JsonWriter json(out);
  json.begin_array()
      .plain(12.2)
      .plain(0.0005)
      .plain(1e21)
      .plain(5)
      .fixed(2.0 / 3, 3)
      .fixed(1234.6, 0)
      .fixed(6, 1)
      .plain(std::numeric_limits<double>::infinity())
      .fixed(std::numeric_limits<double>::quiet_NaN(), 2)
      .raw("[4,2]")
      .end_array();
  EXPECT_EQ(out, "[12.2,0.0005,1000000000000000000000,5,0.667,1235,6.0,null,null,[4,2]]");
}

TEST(JsonWriter, TextThatIsNotUtf8IsWrittenAsHexBeforeEscaping) {
  std::string out;
  JsonWriter(out).value(utf8_or_escaped("ok\xff\xc3\xa9"));
  EXPECT_EQ(out, "\"ok\\\\xff\xc3\xa9\"");
}

}  // namespace
}  // namespace spillway
