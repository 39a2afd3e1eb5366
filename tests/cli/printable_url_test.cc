// Backend URLs in log lines: the password is replaced, everything else is kept as given.
#include <gtest/gtest.h>

#include "spillway/open_store.h"
#include "src/cli/backend_watch.h"
#include "src/core/backend_schemes.h"

namespace spillway::cli {
namespace {

TEST(PrintableUrl, HidesPasswordsAndKeepsTheRest) {
  EXPECT_EQ(printable_url("redis://:s3cret@127.0.0.1:6379/2"), "redis://:***@127.0.0.1:6379/2");
  EXPECT_EQ(printable_url("rediss://app:p@ss:w@redis.internal:6380?tls_ca_file=/ca.pem"),
            "rediss://app:***@redis.internal:6380?tls_ca_file=/ca.pem");
  EXPECT_EQ(printable_url("redis+cluster://u:pw@a:1,b:2"), "redis+cluster://u:***@a:1,b:2");
  // A raw '/' or '@' in a password: the URL parser takes the last '@' before the query.
  EXPECT_EQ(printable_url("redis://:pa/ss@127.0.0.1:1"), "redis://:***@127.0.0.1:1");
  EXPECT_EQ(printable_url("redis://:a@b/c@h:1/0"), "redis://:***@h:1/0");
  EXPECT_EQ(printable_url("unix:///run/redis.sock?db=1&password=s3cret&user=u"),
            "unix:///run/redis.sock?db=1&password=***&user=u");
  for (const char* same : {"memory", "redis://127.0.0.1:6379", "redis://host:1/0?x=password=y",
                           "redis+sentinel://s1:26379,s2:26379/mymaster", ""}) {
    EXPECT_EQ(printable_url(same), same);
  }
}

TEST(PrintableUrl, TheNotAnsweringLineSaysWhatOnErrorDoes) {
  const std::string error =
      "redis 10.0.0.1:6379: not connected (connect failed: Connection refused)";
  EXPECT_EQ(not_answering_line("redis://:pw@10.0.0.1:6379", error, policy::OnError::kAllow),
            "backend redis://:***@10.0.0.1:6379 is not answering (connect failed: Connection "
            "refused); on_error allow: failing open, requests are not limited until it answers");
  EXPECT_NE(not_answering_line("redis://h:1", error, policy::OnError::kDeny)
                .find("on_error deny: failing closed, every request is denied"),
            std::string::npos);
  EXPECT_NE(not_answering_line("redis://h:1", "timed out", policy::OnError::kLocal)
                .find("(timed out); on_error local: each instance limits on its own"),
            std::string::npos);
  EXPECT_EQ(answers_again_line("redis://:pw@h:1"), "backend redis://:***@h:1 answers again");
}

// A mistyped scheme is refused before any parser reads the user info: the error still hides it.
TEST(PrintableUrl, AnUnknownSchemeKeepsItsPasswordOutOfTheError) {
  for (const char* url : {"redsi://:s3cret@127.0.0.1:6379", "s3cret@host"}) {
    Result<void> checked = check_store(url, {});
    ASSERT_FALSE(checked.has_value()) << url;
    EXPECT_EQ(checked.error().message.find("s3cret"), std::string::npos) << checked.error().message;
    EXPECT_NE(checked.error().message.find("is not a backend URL"), std::string::npos);
  }
}

// One masking for logs and errors (src/core/backend_schemes.h): what is not user:password@ is
// hidden whole.
TEST(PrintableUrl, UserInfoWithoutAColonAndTextThatIsNoUrlAreHiddenWhole) {
  EXPECT_EQ(printable_url("redis://s3cret@127.0.0.1:6379"), "redis://***@127.0.0.1:6379");
  EXPECT_EQ(printable_url("s3cret@host"), "***@host");
  EXPECT_EQ(printable_url("pass:word@host:1"), "***@host:1");
  EXPECT_EQ(printable_url("s3cret@redis://h:1"), "***@redis://h:1");
  EXPECT_EQ(printable_url("redis://@h:1"), "redis://@h:1");
}

// A unix socket's path keeps its '@' (no user info there); a mistyped scheme's password is
// masked even when it holds a '?'.
TEST(PrintableUrl, AUnixPathKeepsItsAtAndAMistypedSchemeMasksPastAQuestionMark) {
  EXPECT_EQ(printable_url("unix:///run/redis/redis-server@main.sock?db=2"),
            "unix:///run/redis/redis-server@main.sock?db=2");
  EXPECT_EQ(printable_url("unix:///run/r@a.sock?password=s3cret"),
            "unix:///run/r@a.sock?password=***");
  EXPECT_EQ(printable_url("redsi://u:p?w@h:1"), "redsi://u:***@h:1");
  EXPECT_EQ(printable_url("redis://u:s3cret@h:1/0?x=1"), "redis://u:***@h:1/0?x=1");
}

// The config's check and open_store name the same forms, every scheme's.
TEST(PrintableUrl, AnUnknownSchemeNamesEveryBackendForm) {
  const Result<void> checked = check_store("redsi://h:1", {});
  ASSERT_FALSE(checked.has_value());
  EXPECT_NE(checked.error().message.find("(use " + backend_url_forms() + ")"), std::string::npos)
      << checked.error().message;
  for (const BackendScheme& scheme : kBackendSchemes) {
    EXPECT_NE(backend_url_forms().find(scheme.form), std::string::npos) << scheme.name;
    EXPECT_TRUE(scheme.form.starts_with(scheme.name)) << scheme.form;
  }
}

}  // namespace
}  // namespace spillway::cli
