// spillway simulate: generated patterns (deterministic, shaped as documented), the simulation's
// figures against hand-made traces, and the real binary against `spillway replay` on the same
// trace for every pattern and algorithm, its files, and bad options (exit 2, naming the option).
#include "src/cli/simulate.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include "src/cli/simulate_report.h"
#include "src/cli/simulation.h"
#include "src/cli/traffic_pattern.h"
#include "src/pages/html.h"
#include "tests/support/process.h"

namespace spillway::cli {
namespace {

std::string simulate_temp_path(const std::string& name) {
  static int calls = 0;
  return "/tmp/spillway_sim_" + std::to_string(getpid()) + "_" + std::to_string(calls++) + "_" +
         name;
}

std::string slurp(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

// algorithm -> {offered, admitted, denied, max} from simulate's stdout.
std::map<std::string, std::vector<long long>> parse_summary(const std::string& out) {
  std::map<std::string, std::vector<long long>> rows;
  std::istringstream lines(out);
  std::string line;
  std::getline(lines, line);
  EXPECT_EQ(line, "algorithm,offered,admitted,denied,max_admitted_in_any_period");
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::string name, value;
    std::getline(fields, name, ',');
    while (std::getline(fields, value, ',')) rows[name].push_back(std::stoll(value));
  }
  return rows;
}

PatternOptions pattern(const std::string& name, double rate = 200, int keys = 5,
                       std::uint64_t seed = 3) {
  return {.name = name,
          .rate = rate,
          .duration = 60 * kMicrosPerSecond,
          .keys = keys,
          .seed = seed,
          .limit_per_second = 1};
}

TEST(TrafficPattern, EachPatternIsTheSameForASeedAndOtherForAnother) {
  for (std::string_view name : pattern_names()) {
    auto a = generate_pattern(pattern(std::string(name)));
    auto b = generate_pattern(pattern(std::string(name)));
    auto c = generate_pattern(pattern(std::string(name), 200, 5, 4));
    ASSERT_TRUE(a && b && c) << name;
    ASSERT_EQ(a->size(), b->size()) << name;
    bool same = true, other = a->size() != c->size();
    for (std::size_t i = 0; i < a->size(); ++i) {
      same = same && (*a)[i].at == (*b)[i].at && (*a)[i].key == (*b)[i].key;
      if (i < c->size()) other = other || (*a)[i].at != (*c)[i].at;
    }
    EXPECT_TRUE(same) << name;
    EXPECT_TRUE(other) << name << ": another seed made the same trace";
    EXPECT_TRUE(std::is_sorted(a->begin(), a->end(), [](const TraceLine& x, const TraceLine& y) {
      return x.at < y.at;
    })) << name;
    EXPECT_GE(a->front().at, 0);
    EXPECT_LT(a->back().at, 60 * kMicrosPerSecond);
  }
}

// A Poisson count of mean m is within 5 standard deviations of m (a false alarm about 1 in 3.5
// million, for a fixed seed never).
void expect_about(double count, double mean, const std::string& what) {
  EXPECT_LT(std::abs(count - mean), 5 * std::sqrt(mean)) << what << ": " << count << " vs " << mean;
}

TEST(TrafficPattern, ShapesAreAsDocumented) {
  auto steady = generate_pattern(pattern("steady"));
  ASSERT_TRUE(steady);
  expect_about(static_cast<double>(steady->size()), 200 * 60, "steady total");
  std::map<std::string, int> per_key;
  for (const TraceLine& r : *steady) ++per_key[r.key];
  EXPECT_EQ(per_key.size(), 5u);
  for (const auto& [key, n] : per_key) expect_about(n, 200 * 60 / 5.0, "steady " + key);

  // burst: 1 s of every 10 at 5 × rate, the rest at rate / 2.
  auto burst = generate_pattern(pattern("burst"));
  ASSERT_TRUE(burst);
  double spikes = 0, calm = 0;
  for (const TraceLine& r : *burst)
    (r.at % (10 * kMicrosPerSecond) < kMicrosPerSecond ? spikes : calm) += 1;
  expect_about(spikes, 5 * 200 * 6, "burst spikes");
  expect_about(calm, 100 * 54, "burst calm");

  // ramp: the second half carries three times the first.
  auto ramp = generate_pattern(pattern("ramp"));
  ASSERT_TRUE(ramp);
  double first = 0, second = 0;
  for (const TraceLine& r : *ramp) (r.at < 30 * kMicrosPerSecond ? first : second) += 1;
  expect_about(first, 200 * 60 / 4.0, "ramp first half");
  expect_about(second, 3 * 200 * 60 / 4.0, "ramp second half");

  // diurnal: the middle third (the day's peak) is far busier than the first sixth (night).
  auto diurnal = generate_pattern(pattern("diurnal"));
  ASSERT_TRUE(diurnal);
  expect_about(static_cast<double>(diurnal->size()), 200 * 60, "diurnal total");
  double night = 0, noon = 0;
  for (const TraceLine& r : *diurnal) {
    if (r.at < 10 * kMicrosPerSecond) night += 1;
    if (r.at >= 20 * kMicrosPerSecond && r.at < 40 * kMicrosPerSecond) noon += 1;
  }
  EXPECT_GT(noon / 2, 4 * night);

  // attack: the attacker at 20 × the limit (1/s here), the others as steady.
  auto attack = generate_pattern(pattern("attack"));
  ASSERT_TRUE(attack);
  double attacker = 0;
  for (const TraceLine& r : *attack) attacker += r.key == "attacker";
  expect_about(attacker, 20 * 60, "attacker");
  expect_about(static_cast<double>(attack->size()) - attacker, 200 * 60, "normal keys");

  // many-tenants: Zipf, so key-0 sends about 2^1.1 times what key-1 sends.
  auto tenants = generate_pattern(pattern("many-tenants", 200, 50));
  ASSERT_TRUE(tenants);
  std::map<std::string, double> tenant;
  for (const TraceLine& r : *tenants) tenant[r.key] += 1;
  double harmonic = 0;
  for (int i = 1; i <= 50; ++i) harmonic += 1 / std::pow(i, 1.1);
  expect_about(tenant["key-0"], 200 * 60 / harmonic, "key-0");
  expect_about(tenant["key-1"], 200 * 60 / harmonic / std::pow(2, 1.1), "key-1");
}

TEST(TrafficPattern, BadPatternsAndTooMuchTrafficAreNamed) {
  auto unknown = generate_pattern(pattern("flood"));
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message.find("--pattern"), std::string::npos);
  EXPECT_NE(unknown.error().message.find("many-tenants"), std::string::npos);
  auto huge = generate_pattern(pattern("steady", 1e6));
  ASSERT_FALSE(huge);
  EXPECT_NE(huge.error().message.find("--rate"), std::string::npos) << huge.error().message;
}

// The window edge: 5 requests at the end of one fixed window and 5 at the start of the next.
TEST(Simulation, FixedWindowEdgeDoublingIsMeasuredAndOthersHoldTheLimit) {
  std::vector<TraceLine> trace;
  for (int i = 0; i < 5; ++i) trace.push_back({.at = 9'000'000 + i, .key = "k", .cost = 1});
  for (int i = 0; i < 5; ++i) trace.push_back({.at = 10'000'000 + i, .key = "k", .cost = 1});
  auto result = simulate(
      trace, {.limit = 5,
              .period = 10 * kMicrosPerSecond,
              .algorithms = {Algorithm::kFixedWindow, Algorithm::kSlidingLog, Algorithm::kGcra}});
  ASSERT_TRUE(result) << result.error().message;
  ASSERT_EQ(result->outcomes.size(), 3u);
  EXPECT_EQ(result->outcomes[0].admitted, 10);
  EXPECT_EQ(result->outcomes[0].max_admitted_in_any_period, 10) << "the edge doubling";
  EXPECT_EQ(result->outcomes[1].admitted, 5);
  EXPECT_EQ(result->outcomes[1].max_admitted_in_any_period, 5);
  EXPECT_EQ(result->outcomes[2].admitted, 5);
  EXPECT_EQ(result->outcomes[2].burst_at_start, 5);
  EXPECT_EQ(result->outcomes[1].retry_histogram[4], 5) << "9 s to wait: the 1-10 s bucket";
  const std::string page =
      report_html(*result, {.limit = 5, .period = 10 * kMicrosPerSecond}, "hand-made");
  EXPECT_NE(page.find("data-exceeds=\"fixed_window\""), std::string::npos);
  EXPECT_EQ(page.find("data-exceeds=\"sliding_log\""), std::string::npos);
}

// A trace out of order is measured on its own time axis, as if sorted: 19 s, 11 s, 21 s, 22 s
// (all admitted by a fixed window of 2 per 10 s) hold at most 3 in one 10 s: 19, 21 and 22.
TEST(Simulation, AnUnorderedTraceIsMeasuredAsIfSorted) {
  std::vector<TraceLine> trace;
  for (Micros at : {19, 11, 21, 22}) {
    trace.push_back({.at = at * kMicrosPerSecond, .key = "k", .cost = 1});
  }
  auto result = simulate(
      trace,
      {.limit = 2, .period = 10 * kMicrosPerSecond, .algorithms = {Algorithm::kFixedWindow}});
  ASSERT_TRUE(result);
  EXPECT_EQ(result->outcomes[0].admitted, 4);
  EXPECT_EQ(result->outcomes[0].max_admitted_in_any_period, 3);
  EXPECT_EQ(result->outcomes[0].burst_at_start, 2) << "11 s and 19 s are within 10 s of 11 s";
}

TEST(Simulation, FairnessIsJainsIndexOfAdmissionRatios) {
  // Key a asks 10 and gets 2; key b asks 2 and gets 2: ratios 0.2 and 1.
  std::vector<TraceLine> trace;
  for (int i = 0; i < 10; ++i) trace.push_back({.at = i, .key = "a", .cost = 1});
  for (int i = 0; i < 2; ++i) trace.push_back({.at = 20 + i, .key = "b", .cost = 1});
  auto result = simulate(
      trace, {.limit = 2, .period = kMicrosPerMinute, .algorithms = {Algorithm::kSlidingLog}});
  ASSERT_TRUE(result);
  const double expected = (0.2 + 1) * (0.2 + 1) / (2 * (0.04 + 1));
  EXPECT_NEAR(result->outcomes[0].fairness, expected, 1e-9);
}

TEST(Simulation, SeriesBucketsAreRoundAndFew) {
  EXPECT_EQ(series_bucket(0), kMicrosPerMilli);
  EXPECT_EQ(series_bucket(60 * kMicrosPerSecond), 500 * kMicrosPerMilli);
  EXPECT_EQ(series_bucket(kMicrosPerDay), 500 * kMicrosPerSecond);
  for (Micros span : {1LL, 999'999LL, 7'777'777LL, 123'456'789'000LL}) {
    EXPECT_LE(span / series_bucket(span), 240) << span;
  }
}

// The binary's counts are replay's (offered, and admitted counted from replay's lines), for
// every pattern and every algorithm.
TEST(SimulateBinary, CountsEqualReplayOnTheSameTraceForEveryPatternAndAlgorithm) {
  for (std::string_view name : pattern_names()) {
    const std::string trace = simulate_temp_path("trace.csv");
    const std::string flags = "--limit 7 --period 2s";
    testing::BinaryRun sim =
        testing::run_binary("simulate --pattern " + std::string(name) +
                            " --rate 40 --duration 20s --keys 4 --seed 11 --burst 9 " + flags +
                            " --trace-out " + trace);
    ASSERT_EQ(sim.status, 0) << name << ": " << sim.err;
    const auto rows = parse_summary(sim.out);
    ASSERT_EQ(rows.size(), 5u) << sim.out;
    for (const auto& [algorithm, row] : rows) {
      const bool bucket = algorithm == "token_bucket" || algorithm == "gcra";
      testing::BinaryRun replay = testing::run_binary(
          "replay --algorithm " + algorithm + " " + flags + (bucket ? " --burst 9 " : " ") + trace);
      ASSERT_EQ(replay.status, 0) << replay.err;
      // Replay's lines are t_us,key,cost,allowed,…: count them, and allowed = 1 by field.
      long long offered = 0, admitted = 0;
      std::istringstream again(replay.out);
      std::string line;
      std::getline(again, line);
      while (std::getline(again, line)) {
        ++offered;
        std::istringstream fields(line);
        std::string field;
        for (int i = 0; i < 4; ++i) std::getline(fields, field, ',');
        admitted += field == "1";
      }
      EXPECT_EQ(row[0], offered) << name << " " << algorithm;
      EXPECT_EQ(row[1], admitted) << name << " " << algorithm;
      EXPECT_EQ(row[0], row[1] + row[2]) << name << " " << algorithm;
      EXPECT_GT(row[1], 0) << name << " " << algorithm;
    }
    std::remove(trace.c_str());
  }
}

TEST(SimulateBinary, WritesTheReportTheSeriesAndTheChart) {
  const std::string html = simulate_temp_path("report.html"),
                    csv = simulate_temp_path("series.csv"), svg = simulate_temp_path("chart.svg");
  testing::BinaryRun run = testing::run_binary(
      "simulate --trace " + std::string(SPILLWAY_SOURCE_DIR) +
      "/examples/traces/login-burst.csv --limit 5 --period 1s --algorithms gcra,fixed_window "
      "--out " +
      html + " --csv " + csv + " --svg " + svg);
  ASSERT_EQ(run.status, 0) << run.err;
  const auto rows = parse_summary(run.out);
  ASSERT_EQ(rows.size(), 2u);
  const std::string page = slurp(html);
  EXPECT_TRUE(page.starts_with("<!doctype html>"));
  EXPECT_NE(page.find("<tr data-algorithm=\"gcra\">"), std::string::npos);
  EXPECT_NE(page.find("<td data-field=\"admitted\">" + std::to_string(rows.at("gcra")[1]) + "<"),
            std::string::npos);
  EXPECT_NE(page.find("login-burst.csv"), std::string::npos);
  // Nothing to load from elsewhere (the browser test watches the requests themselves).
  for (const char* reference : {"src=\"http", "href=\"http", "url(http", "@import", "<link"}) {
    EXPECT_EQ(page.find(reference), std::string::npos) << reference;
  }
  const std::string series = slurp(csv);
  EXPECT_TRUE(series.starts_with("bucket_start_s,bucket_s,algorithm,offered,admitted,denied\n"));
  long long admitted = 0;
  std::istringstream lines(series);
  std::string line;
  std::getline(lines, line);
  while (std::getline(lines, line)) {
    if (line.find(",gcra,") == std::string::npos) continue;
    admitted += std::stoll(line.substr(line.rfind(',', line.rfind(',') - 1) + 1));
  }
  EXPECT_EQ(admitted, rows.at("gcra")[1]) << "the series add up to the summary";
  const std::string chart = slurp(svg);
  EXPECT_TRUE(chart.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
  EXPECT_EQ(std::count(chart.begin(), chart.end(), '\n') > 10, true);
  std::size_t polylines = 0;
  for (std::size_t at = chart.find("<polyline"); at != std::string::npos;
       at = chart.find("<polyline", at + 1)) {
    ++polylines;
  }
  EXPECT_EQ(polylines, 3u) << "offered, gcra, fixed_window";
  for (const std::string& path : {html, csv, svg}) std::remove(path.c_str());
}

// "-" is standard input for --trace and standard output for a file (the summary then goes to
// stderr); files written are announced; a file that cannot be written gives the reason.
TEST(SimulateBinary, DashIsStandardInputOrOutputAndWrittenFilesAreAnnounced) {
  const std::string trace = "t_us,key\n0,a\n10,a\n20,a\n30,b\n1000000,a\n";
  const std::string flags = " --limit 2 --period 1s --algorithms gcra,fixed_window";
  const std::string file = simulate_temp_path("trace.csv");
  std::ofstream(file) << trace;
  const testing::BinaryRun from_file = testing::run_binary("simulate --trace " + file + flags);
  ASSERT_EQ(from_file.status, 0) << from_file.err;
  const testing::BinaryRun from_stdin = testing::run_binary("simulate --trace -" + flags, trace);
  ASSERT_EQ(from_stdin.status, 0) << from_stdin.err;
  EXPECT_EQ(from_stdin.out, from_file.out);
  // gcra 2/s: a at 0 and 10, b, and a again a second later; a at 20 is denied.
  EXPECT_EQ(parse_summary(from_stdin.out).at("gcra")[1], 4) << from_stdin.out;

  // --csv -: the series on stdout, the summary on stderr; the SVG file is announced.
  const std::string svg = simulate_temp_path("chart.svg");
  const testing::BinaryRun csv =
      testing::run_binary("simulate --trace -" + flags + " --csv - --svg " + svg, trace);
  ASSERT_EQ(csv.status, 0) << csv.err;
  EXPECT_TRUE(csv.out.starts_with("bucket_start_s,bucket_s,algorithm,offered,admitted,denied\n"))
      << csv.out;
  EXPECT_NE(csv.err.find(from_file.out), std::string::npos) << csv.err;
  EXPECT_NE(csv.err.find("spillway simulate: wrote " + svg + "\n"), std::string::npos) << csv.err;
  EXPECT_EQ(csv.err.find("wrote -"), std::string::npos) << csv.err;
  EXPECT_TRUE(slurp(svg).starts_with("<svg")) << "the chart was written";
  for (const char* option : {"--out", "--svg", "--trace-out"}) {
    const std::string extra = std::string(option) == "--trace-out" ? "--pattern steady" : "";
    const testing::BinaryRun run = testing::run_binary(
        "simulate " + (extra.empty() ? "--trace " + file : extra) + flags + " " + option + " -");
    ASSERT_EQ(run.status, 0) << option << ": " << run.err;
    EXPECT_FALSE(run.out.empty()) << option;
    EXPECT_NE(run.err.find("algorithm,offered,"), std::string::npos) << option << ": " << run.err;
  }
  // Two files on stdout would mix: refused, naming both.
  const testing::BinaryRun both =
      testing::run_binary("simulate --trace " + file + flags + " --csv - --svg -");
  EXPECT_EQ(both.status, 2);
  EXPECT_NE(both.err.find("--csv and --svg both write to standard output"), std::string::npos)
      << both.err;

  // A file that cannot be written: exit 1 and the system's reason.
  const testing::BinaryRun unwritable =
      testing::run_binary("simulate --trace " + file + flags + " --out /nonexistent/r.html");
  EXPECT_EQ(unwritable.status, 1);
  EXPECT_NE(
      unwritable.err.find("--out: cannot write /nonexistent/r.html: No such file or directory\n"),
      std::string::npos)
      << unwritable.err;
  EXPECT_EQ(unwritable.err.find("wrote"), std::string::npos) << unwritable.err;
  for (const std::string& path : {file, svg}) std::remove(path.c_str());
}

TEST(SimulateBinary, BadOptionsExitTwoNamingTheOption) {
  struct Case {
    std::string args;
    std::string mentions;
  };
  const std::string trace = std::string(SPILLWAY_SOURCE_DIR) + "/examples/traces/login-burst.csv";
  for (const Case& c : {
           Case{"--pattern steady --period 1s", "--limit"},
           Case{"--pattern steady --limit 5", "--period"},
           Case{"--limit 5 --period 1s", "--trace FILE or --pattern"},
           Case{"--trace " + trace + " --pattern steady --limit 5 --period 1s", "one of"},
           Case{"--pattern tsunami --limit 5 --period 1s", "--pattern"},
           Case{"--pattern steady --rate 0 --limit 5 --period 1s", "--rate"},
           Case{"--pattern steady --rate lots --limit 5 --period 1s", "--rate"},
           Case{"--pattern steady --duration forever --limit 5 --period 1s", "--duration"},
           Case{"--pattern steady --rate 1/1d --duration 60000d --limit 5 --period 1s",
                "--duration"},
           Case{"--pattern steady --keys 0 --limit 5 --period 1s", "--keys"},
           Case{"--pattern steady --seed -1 --limit 5 --period 1s", "--seed"},
           Case{"--pattern steady --limit 0 --period 1s", "--limit"},
           Case{"--pattern steady --limit 5 --period 0s", "--period"},
           Case{"--pattern steady --limit 5 --period 1s --burst 0", "--burst"},
           Case{"--pattern steady --limit 5 --period 1s --algorithms gcra,leaky", "--algorithms"},
           Case{"--pattern steady --limit 5 --period 1s --algorithms gcra,gcra", "twice"},
           Case{"--pattern steady --limit 5 --period 1s --colour red", "--colour"},
           Case{"--trace " + trace + " --rate 5 --limit 5 --period 1s", "--rate"},
           Case{"--trace /nonexistent/t.csv --limit 5 --period 1s", "--trace"},
           Case{"--pattern steady --rate 100000/s --duration 1h --limit 5 --period 1s", "--rate"},
       }) {
    testing::BinaryRun run = testing::run_binary("simulate " + c.args);
    EXPECT_EQ(run.status, 2) << c.args << ": " << run.err;
    EXPECT_NE(run.err.find(c.mentions), std::string::npos) << c.args << ": " << run.err;
    EXPECT_TRUE(run.out.empty()) << c.args;
  }
  // A line the store would refuse (a key over 1024 bytes) is a bad trace too (exit 1).
  const std::string long_key = simulate_temp_path("long.csv");
  std::ofstream(long_key) << "0,a\n1," << std::string(1100, 'k') << "\n";
  testing::BinaryRun refused =
      testing::run_binary("simulate --trace " + long_key + " --limit 1 --period 1s");
  EXPECT_EQ(refused.status, 1);
  EXPECT_NE(refused.err.find("trace line 2"), std::string::npos) << refused.err;
  std::remove(long_key.c_str());
  // A bad line in a trace file is a bad trace (exit 1), named by its line.
  const std::string bad = simulate_temp_path("bad.csv");
  std::ofstream(bad) << "0,a\n5,\n";
  testing::BinaryRun run =
      testing::run_binary("simulate --trace " + bad + " --limit 1 --period 1s");
  EXPECT_EQ(run.status, 1);
  EXPECT_NE(run.err.find("trace line 2"), std::string::npos) << run.err;
  std::remove(bad.c_str());
}

}  // namespace
}  // namespace spillway::cli

namespace spillway::pages {
namespace {

TEST(XmlText, EscapesMarkupAndDropsWhatXmlRefuses) {
  EXPECT_EQ(xml_text("a\x01<b>&\"c'\t\n"), "a&lt;b&gt;&amp;&quot;c&#39;\t\n");
  EXPECT_EQ(xml_text("bad \xff byte"), "bad \xEF\xBF\xBD byte");
  EXPECT_EQ(xml_text("\xe2\x82\xac ok"), "\xe2\x82\xac ok");                    // €, valid UTF-8
  EXPECT_EQ(xml_text("\xe0\x80\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // overlong
}

}  // namespace
}  // namespace spillway::pages
