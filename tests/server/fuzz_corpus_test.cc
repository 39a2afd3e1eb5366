// The fuzz targets' seed corpora (fuzz/corpus/, which also holds the inputs that once found a
// bug) run through the targets' own checks in the normal build, so that every test run replays
// them without libFuzzer. A broken invariant aborts, naming it, after the file name below.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fuzz/config_check.h"
#include "fuzz/request_check.h"
#include "fuzz/rls_check.h"
#include "fuzz/tenants_check.h"
#include "fuzz/trace_check.h"
#include "fuzz/url_check.h"

namespace spillway::fuzz {
namespace {

namespace fs = std::filesystem;

// Every file of fuzz/corpus/<name>, sorted by path.
std::vector<fs::path> corpus(const char* name) {
  std::vector<fs::path> files;
  for (const auto& entry :
       fs::directory_iterator(fs::path(SPILLWAY_SOURCE_DIR) / "fuzz/corpus" / name)) {
    if (entry.is_regular_file()) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

template <typename Check>
void replay(const char* name, Check check) {
  const std::vector<fs::path> files = corpus(name);
  ASSERT_GE(files.size(), 10u) << "fuzz/corpus/" << name << " has lost its seeds";
  for (const fs::path& file : files) {
    std::ifstream in(file, std::ios::binary);
    ASSERT_TRUE(in) << file;
    const std::vector<char> bytes{std::istreambuf_iterator<char>(in), {}};
    std::fprintf(stderr, "fuzz corpus: %s\n", file.c_str());  // shown if the check aborts
    check(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
  }
}

TEST(FuzzCorpus, RequestSeedsKeepTheirInvariants) { replay("request", check_request_input); }

TEST(FuzzCorpus, ConfigSeedsKeepTheirInvariants) { replay("config", check_config_input); }

TEST(FuzzCorpus, RlsSeedsKeepTheirInvariants) { replay("rls", check_rls_input); }

TEST(FuzzCorpus, UrlSeedsKeepTheirInvariants) { replay("url", check_url_input); }

TEST(FuzzCorpus, TraceSeedsKeepTheirInvariants) { replay("trace", check_trace_input); }

TEST(FuzzCorpus, TenantsSeedsKeepTheirInvariants) { replay("tenants", check_tenants_input); }

}  // namespace
}  // namespace spillway::fuzz
