// A layer's key both ways (src/policy/keys.h): what the policy writes, /v1/stats reads back.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "src/policy/keys.h"

namespace spillway::policy {
namespace {

TEST(LayerKey, ValuesWrittenAreTheValuesReadBack) {
  const std::vector<std::vector<std::string>> cases = {
      {"1.2.3.4"}, {"k1", "/search"}, {""}, {"a:1:b", "::", "12:"}, {std::string("\0x\n", 3)}};
  for (const auto& values : cases) {
    std::string key = "edge";
    for (const std::string& value : values) append_key_part(key, value);
    const auto parts = parse_layer_key(key);
    ASSERT_TRUE(parts.has_value()) << key;
    EXPECT_EQ(parts->layer, "edge");
    EXPECT_EQ(std::vector<std::string>(parts->values.begin(), parts->values.end()), values) << key;
  }
}

TEST(LayerKey, MalformedKeysAreNotRead) {
  for (const std::string_view key :
       {"edge", "edge:", "edge:3", "edge:3:ab", "edge::abc", "edge:x:abc", "edge:1:ab",
        "edge:99999999999999999999999:a", "/v1/limit:abc"}) {
    EXPECT_FALSE(parse_layer_key(key).has_value()) << key;
  }
}

}  // namespace
}  // namespace spillway::policy
