// RlsWatcher: reload() on demand, the poll on a change (an edit, a Kubernetes ConfigMap's symlink
// swap), and a bad set of files keeping the rules in force and counted as an error. The polls run
// on a ManualRuntime moved by the test; one test runs on the process's runtime and waits for the
// change with a generous deadline. Nothing asserts timing.
#include "src/rls/rls_watcher.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "spillway/memory_store.h"
#include "spillway/runtime.h"
#include "tests/support/poll.h"

namespace spillway::rls {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

std::string watcher_temp_dir(const std::string& name) {
  std::string pattern = ::testing::TempDir() + "/" + name + "_XXXXXX";
  EXPECT_NE(mkdtemp(pattern.data()), nullptr);
  return pattern;
}

void watcher_write_file(const std::string& path, std::string_view text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  ASSERT_TRUE(out.good()) << path;
}

// Replaces the file in one step (a hidden temporary renamed over it), so that a polling watcher
// never reads it half written.
void replace_file(const std::string& path, std::string_view text) {
  const fs::path target(path);
  const std::string temporary = (target.parent_path() / ".writing.tmp").string();
  watcher_write_file(temporary, text);
  fs::rename(temporary, target);
}

std::string rules_yaml(std::string_view domain, int limit) {
  return "domain: " + std::string(domain) +
         "\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: minute\n"
         "      requests_per_unit: " +
         std::to_string(limit) + "\n";
}

// The limit the rules in force give (domain, k): 0 when the domain is not there.
std::uint32_t limit_in_force(const RlsEngine& engine, const std::string& domain) {
  auto rules = engine.rules();
  auto it = rules->domains.find(domain);
  if (it == rules->domains.end() || it->second.descriptors.empty()) return 0;
  return it->second.descriptors[0].rate_limit->requests_per_unit;
}

// Waits up to a minute for `done` (the watcher polls every few ms; tests/support/poll.h).
bool eventually(const std::function<bool()>& done) { return testing::wait_until(done, 60s); }

std::string rendered(const RlsWatcher& watcher) {
  std::string out;
  watcher.render(out);
  return out;
}

struct Log {
  std::mutex mutex;
  std::vector<std::string> lines;
  std::function<void(const std::string&)> sink() {
    return [this](const std::string& line) {
      std::lock_guard lock(mutex);
      lines.push_back(line);
    };
  }
  std::size_t size() {
    std::lock_guard lock(mutex);
    return lines.size();
  }
  std::string last() {
    std::lock_guard lock(mutex);
    return lines.empty() ? "" : lines.back();
  }
};

TEST(RlsWatcher, ReloadLoadsNewRulesAndABadFileKeepsTheOldOnes) {
  const std::string dir = watcher_temp_dir("rls_watch_reload");
  watcher_write_file(dir + "/rules.yaml", rules_yaml("w_reload", 5));
  Result<RlsRules> initial = load_rls_rules(dir);
  ASSERT_TRUE(initial.has_value()) << initial.error().message;
  MemoryStore store;
  RlsEngine engine(store, std::make_shared<const RlsRules>(std::move(*initial)));
  Log log;
  int reloaded = 0;
  RlsWatcher watcher(engine, dir, rls_rules_fingerprint(dir), 0ms, log.sink(), [&] { ++reloaded; });
  EXPECT_EQ(limit_in_force(engine, "w_reload"), 5u);

  watcher_write_file(dir + "/rules.yaml", rules_yaml("w_reload", 7));
  ASSERT_TRUE(watcher.reload().has_value());
  EXPECT_EQ(limit_in_force(engine, "w_reload"), 7u);
  EXPECT_EQ(reloaded, 1);
  EXPECT_NE(log.last().find("reloaded"), std::string::npos) << log.last();

  watcher_write_file(dir + "/rules.yaml",
                     "domain: w_reload\ndescriptors:\n  - key: k\n"
                     "    rate_limit: {unit: lightyear, requests_per_unit: 1}\n");
  Result<void> bad = watcher.reload();
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message.find("rules.yaml: line 4"), std::string::npos)
      << bad.error().message;
  EXPECT_EQ(limit_in_force(engine, "w_reload"), 7u) << "the previous rules stay in force";
  EXPECT_EQ(reloaded, 1) << "no reload callback for rejected rules";
  EXPECT_NE(log.last().find("rejected"), std::string::npos) << log.last();

  const std::string metrics = rendered(watcher);
  EXPECT_NE(metrics.find("spillway_rls_config_reloads_total{result=\"ok\"} 1\n"), std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("spillway_rls_config_reloads_total{result=\"error\"} 1\n"),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("spillway_rls_config_domains 1\n"), std::string::npos) << metrics;

  // A second domain in a new file.
  watcher_write_file(dir + "/rules.yaml", rules_yaml("w_reload", 8));
  watcher_write_file(dir + "/more.yml", rules_yaml("w_more", 2));
  ASSERT_TRUE(watcher.reload().has_value());
  EXPECT_EQ(limit_in_force(engine, "w_more"), 2u);
  EXPECT_NE(rendered(watcher).find("spillway_rls_config_domains 2\n"), std::string::npos);
  fs::remove_all(dir);
}

// A rules directory with one domain, its engine on a memory store, and what a watcher of it
// reports (log lines, reloads). The directory goes with it; a watcher must go first.
struct WatchedRules {
  WatchedRules(const std::string& name, std::string_view domain, int limit)
      : dir(watcher_temp_dir(name)) {
    watcher_write_file(dir + "/rules.yaml", rules_yaml(domain, limit));
    engine = std::make_unique<RlsEngine>(
        store, std::make_shared<const RlsRules>(load_rls_rules(dir).value()));
  }
  ~WatchedRules() { fs::remove_all(dir); }
  std::unique_ptr<RlsWatcher> watch(std::chrono::milliseconds interval,
                                    std::shared_ptr<Runtime> runtime = nullptr) {
    return std::make_unique<RlsWatcher>(
        *engine, dir, rls_rules_fingerprint(dir), interval, log.sink(), [this] { ++reloaded; },
        std::move(runtime));
  }

  std::string dir;
  MemoryStore store;
  std::unique_ptr<RlsEngine> engine;
  Log log;
  std::atomic<int> reloaded{0};
};

TEST(RlsWatcher, ThePollReloadsOnAnEditAndCountsABadEditOnce) {
  WatchedRules rules("rls_watch_edit", "w_edit", 3);
  const RlsEngine& engine = *rules.engine;
  auto runtime = std::make_shared<ManualRuntime>();
  std::unique_ptr<RlsWatcher> watcher = rules.watch(5ms, runtime);

  replace_file(rules.dir + "/rules.yaml", rules_yaml("w_edit", 30));
  EXPECT_EQ(runtime->advance(4'999), 0u);
  EXPECT_EQ(limit_in_force(engine, "w_edit"), 3u) << "no poll yet";
  EXPECT_EQ(runtime->advance(1), 1u);
  EXPECT_EQ(limit_in_force(engine, "w_edit"), 30u);
  EXPECT_EQ(rules.reloaded.load(), 1);

  replace_file(rules.dir + "/rules.yaml", "domain: w_edit\ndescriptors: [oops\n");
  EXPECT_EQ(runtime->advance(5'000), 1u);
  EXPECT_NE(rendered(*watcher).find("{result=\"error\"} 1\n"), std::string::npos)
      << rendered(*watcher);
  EXPECT_EQ(runtime->advance(50'000), 10u);  // ten more polls of the same bad file
  EXPECT_NE(rendered(*watcher).find("{result=\"error\"} 1\n"), std::string::npos)
      << "an unchanged bad file is rejected once: " << rendered(*watcher);
  EXPECT_EQ(limit_in_force(engine, "w_edit"), 30u);
  EXPECT_EQ(rules.log.size(), 2u) << "one line per change, none per poll";

  replace_file(rules.dir + "/rules.yaml", rules_yaml("w_edit", 31));
  runtime->advance(5'000);
  EXPECT_EQ(limit_in_force(engine, "w_edit"), 31u);
}

TEST(RlsWatcher, OnTheProcessRuntimeAnEditIsPickedUp) {
  WatchedRules rules("rls_watch_process", "w_process", 3);
  std::unique_ptr<RlsWatcher> watcher = rules.watch(5ms);
  replace_file(rules.dir + "/rules.yaml", rules_yaml("w_process", 30));
  EXPECT_TRUE(eventually([&] { return limit_in_force(*rules.engine, "w_process") == 30u; }));
  EXPECT_TRUE(eventually([&] { return rules.reloaded.load() == 1; }));
}

// A Kubernetes ConfigMap volume: dir/..data -> ..v1, dir/config.yaml -> ..data/config.yaml; an
// update writes ..v2 and renames a new ..data symlink over the old one.
struct ConfigMapDir {
  explicit ConfigMapDir(const std::string& name) : dir(watcher_temp_dir(name)) {}
  ~ConfigMapDir() { fs::remove_all(dir); }

  void version(const std::string& v, std::string_view yaml) {
    fs::create_directory(dir + "/" + v);
    watcher_write_file(dir + "/" + v + "/config.yaml", yaml);
  }
  void point_data_at(const std::string& v) {
    if (!fs::is_symlink(dir + "/..data")) {
      fs::create_directory_symlink(v, dir + "/..data");
      fs::create_symlink("..data/config.yaml", dir + "/config.yaml");
      return;
    }
    fs::create_directory_symlink(v, dir + "/..data_tmp");
    fs::rename(dir + "/..data_tmp", dir + "/..data");  // atomic
  }

  std::string dir;
};

TEST(RlsWatcher, FollowsAConfigMapSymlinkSwapOnReload) {
  ConfigMapDir cm("rls_watch_cm_reload");
  cm.version("..v1", rules_yaml("w_cm", 4));
  cm.point_data_at("..v1");
  Result<RlsRules> initial = load_rls_rules(cm.dir);
  ASSERT_TRUE(initial.has_value()) << initial.error().message;
  EXPECT_EQ(initial->files, std::vector<std::string>{cm.dir + "/config.yaml"})
      << "..data and ..v1 are hidden";
  MemoryStore store;
  RlsEngine engine(store, std::make_shared<const RlsRules>(std::move(*initial)));
  Log log;
  RlsWatcher watcher(engine, cm.dir, rls_rules_fingerprint(cm.dir), 0ms, log.sink(), nullptr);
  EXPECT_EQ(limit_in_force(engine, "w_cm"), 4u);

  const std::string before = rls_rules_fingerprint(cm.dir);
  cm.version("..v2", rules_yaml("w_cm", 40));
  cm.point_data_at("..v2");
  EXPECT_NE(rls_rules_fingerprint(cm.dir), before);
  ASSERT_TRUE(watcher.reload().has_value());
  EXPECT_EQ(limit_in_force(engine, "w_cm"), 40u);
}

TEST(RlsWatcher, TheThreadFollowsAConfigMapSymlinkSwap) {
  ConfigMapDir cm("rls_watch_cm_thread");
  cm.version("..v1", rules_yaml("w_cm2", 4));
  cm.point_data_at("..v1");
  MemoryStore store;
  RlsEngine engine(store, std::make_shared<const RlsRules>(load_rls_rules(cm.dir).value()));
  Log log;
  std::atomic<int> reloaded{0};
  RlsWatcher watcher(engine, cm.dir, rls_rules_fingerprint(cm.dir), 5ms, log.sink(),
                     [&] { ++reloaded; });

  cm.version("..v2", rules_yaml("w_cm2", 44));
  cm.point_data_at("..v2");
  EXPECT_TRUE(eventually([&] { return limit_in_force(engine, "w_cm2") == 44u; }));

  // A bad version keeps 44 and counts an error; a good one after it is taken.
  cm.version("..v3", "domain: w_cm2\ndescriptors:\n  - key: k\n    rate_limit: {unit: second}\n");
  cm.point_data_at("..v3");
  EXPECT_TRUE(eventually([&] {
    return rendered(watcher).find("{result=\"error\"} 1\n") != std::string::npos;
  })) << rendered(watcher);
  EXPECT_EQ(limit_in_force(engine, "w_cm2"), 44u);
  cm.version("..v4", rules_yaml("w_cm2", 45));
  cm.point_data_at("..v4");
  EXPECT_TRUE(eventually([&] { return limit_in_force(engine, "w_cm2") == 45u; }));
  EXPECT_TRUE(eventually([&] { return reloaded.load() == 2; }));
}

TEST(RlsWatcher, NoChangeNoReload) {
  WatchedRules rules("rls_watch_still", "w_still", 3);
  auto runtime = std::make_shared<ManualRuntime>();
  {
    std::unique_ptr<RlsWatcher> watcher = rules.watch(2ms, runtime);
    EXPECT_EQ(runtime->advance(50'000), 25u);
  }
  EXPECT_EQ(runtime->pending(), 0u) << "the destructor ended the poll";
  EXPECT_EQ(rules.reloaded.load(), 0);
  EXPECT_EQ(rules.log.size(), 0u);
}

}  // namespace
}  // namespace spillway::rls
