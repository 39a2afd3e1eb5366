#include "src/cli/simulate_report.h"

#include <cstdio>

#include "spillway/duration.h"
#include "src/core/json_writer.h"
#include "src/pages/html.h"
#include "src/pages/report_page.h"
#include "src/pages/series_style.h"
#include "src/pages/svg_chart.h"

namespace spillway::cli {
namespace {

std::string fixed(double value, int digits) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", digits, value);
  return text;
}

double seconds(Micros micros) { return static_cast<double>(micros) / 1e6; }

// Requests per second in each bucket, the next value of `json`: an array.
void write_rates(JsonWriter& json, const std::vector<std::int64_t>& counts, Micros bucket) {
  json.begin_array();
  for (const std::int64_t count : counts)
    json.fixed(static_cast<double>(count) / seconds(bucket), 3);
  json.end_array();
}

std::string limit_text(const Limit& limit) {
  std::string text = std::to_string(limit.limit()) + " per " + format_duration(limit.period());
  if (takes_burst(limit.algorithm())) text += ", burst " + std::to_string(limit.burst());
  if (limit.max_delay() > 0) text += ", max_delay " + format_duration(limit.max_delay());
  return text;
}

// What a delayed request waits on average, in ms (0 when none waited).
double mean_delay_ms(const AlgorithmOutcome& o) {
  return o.delayed > 0 ? static_cast<double>(o.delay_sum) / static_cast<double>(o.delayed) / 1e3
                       : 0;
}

}  // namespace

std::string summary_csv(const Simulation& simulation) {
  const bool shaped = simulation.max_delay > 0;
  std::string out = "algorithm,offered,admitted,denied,max_admitted_in_any_period";
  out += shaped ? ",delayed,mean_delay_ms,max_delay_ms\n" : "\n";
  for (const AlgorithmOutcome& o : simulation.outcomes) {
    out.append(algorithm_name(o.algorithm)).append(",");
    out += std::to_string(o.offered) + "," + std::to_string(o.admitted) + "," +
           std::to_string(o.denied) + "," + std::to_string(o.max_admitted_in_any_period);
    if (shaped) {
      out += "," + std::to_string(o.delayed) + "," + fixed(mean_delay_ms(o), 3) + "," +
             fixed(static_cast<double>(o.delay_max) / 1e3, 3);
    }
    out += "\n";
  }
  return out;
}

std::string series_csv(const Simulation& simulation) {
  const bool shaped = simulation.max_delay > 0;
  std::string out = "bucket_start_s,bucket_s,algorithm,offered,admitted,denied";
  out += shaped ? ",delayed\n" : "\n";
  for (const AlgorithmOutcome& o : simulation.outcomes) {
    for (std::size_t i = 0; i < simulation.offered_series.size(); ++i) {
      out += fixed(seconds(static_cast<Micros>(i) * simulation.bucket), 3) + "," +
             fixed(seconds(simulation.bucket), 3) + ",";
      out.append(algorithm_name(o.algorithm)).append(",");
      out += std::to_string(simulation.offered_series[i]) + "," +
             std::to_string(o.admitted_series[i]) + "," + std::to_string(o.denied_series[i]);
      if (shaped) out += "," + std::to_string(o.delayed_series[i]);
      out += "\n";
    }
  }
  return out;
}

std::string report_html(const Simulation& simulation, const SimulationSettings& settings,
                        std::string_view source) {
  using pages::html_escape;
  const std::string limit = std::to_string(settings.limit) + " per " +
                            format_duration(settings.period) +
                            (settings.burst ? ", burst " + std::to_string(*settings.burst) : "");
  std::string body = "<h1>What each algorithm admits</h1>\n<p class=\"lead\">" +
                     html_escape(source) + ". Limit " + html_escape(limit) +
                     " per key, on spillway's in-process store with the traffic's own time "
                     "(the decisions of <code>spillway replay</code>).</p>\n";
  body +=
      "<h2>Summary</h2>\n<table id=\"summary\">\n<thead><tr><th>algorithm</th><th>limit</th>"
      "<th>offered</th><th>admitted</th><th>denied</th><th>admitted %</th>"
      "<th title=\"the most one key got in any window of one period\">max in any period"
      "</th><th title=\"the most one key got within one period of its first request\">"
      "burst at start</th><th title=\"Jain's index of the keys' admission ratios\">"
      "fairness</th>" +
      std::string(simulation.max_delay > 0
                      ? "<th title=\"admitted after a wait (max_delay)\">delayed</th><th>mean "
                        "delay</th><th>longest delay</th>"
                      : "") +
      "</tr></thead>\n<tbody>\n";
  std::string notes;
  for (const AlgorithmOutcome& o : simulation.outcomes) {
    const std::string name(algorithm_name(o.algorithm));
    const double share =
        o.offered > 0 ? 100.0 * static_cast<double>(o.admitted) / static_cast<double>(o.offered)
                      : 0;
    body += "<tr data-algorithm=\"" + name + "\"><td>" + name + "</td><td>" +
            html_escape(limit_text(o.limit)) + "</td><td data-field=\"offered\">" +
            std::to_string(o.offered) + "</td><td data-field=\"admitted\">" +
            std::to_string(o.admitted) + "</td><td data-field=\"denied\">" +
            std::to_string(o.denied) + "</td><td data-field=\"admitted_percent\">" +
            fixed(share, 1) + "</td><td data-field=\"max_admitted_in_any_period\">" +
            std::to_string(o.max_admitted_in_any_period) +
            "</td><td data-field=\"burst_at_start\">" + std::to_string(o.burst_at_start) +
            "</td><td data-field=\"fairness\">" + fixed(o.fairness, 3) + "</td>" +
            (simulation.max_delay > 0
                 ? "<td data-field=\"delayed\">" + std::to_string(o.delayed) +
                       "</td><td data-field=\"mean_delay_ms\">" + fixed(mean_delay_ms(o), 1) +
                       " ms</td><td data-field=\"max_delay_ms\">" +
                       fixed(static_cast<double>(o.delay_max) / 1e3, 1) + " ms</td>"
                 : "") +
            "</tr>\n";
    if (o.max_admitted_in_any_period > o.limit.limit()) {
      notes += "<li class=\"warn\" data-exceeds=\"" + name + "\">" + name + " let one key have " +
               std::to_string(o.max_admitted_in_any_period) + " within one period of " +
               format_duration(settings.period) + " (limit " + std::to_string(o.limit.limit()) +
               ")" +
               (o.algorithm == Algorithm::kFixedWindow
                    ? ": the window edge doubling, the end of one window and the start of the "
                      "next back to back."
                : takes_burst(o.algorithm)
                    ? ": a full bucket (the burst) plus what refills within the period."
                    : ": its estimate of the previous window's share is below what it admitted "
                      "there.") +
               "</li>\n";
    }
  }
  body += "</tbody>\n</table>\n";
  for (const AlgorithmOutcome& o : simulation.outcomes) {
    if (o.most_denied_key.empty()) continue;
    // Who the limit stopped: the key denied most, and its share of this algorithm's denials.
    const std::string name(algorithm_name(o.algorithm));
    const double of_key = 100.0 * static_cast<double>(o.most_denied_key_denied) /
                          static_cast<double>(o.most_denied_key_offered);
    const double of_all =
        100.0 * static_cast<double>(o.most_denied_key_denied) / static_cast<double>(o.denied);
    notes += "<li data-most-denied=\"" + name + "\">" + name + " denied key <code>" +
             html_escape(o.most_denied_key) +
             "</code> most: " + std::to_string(o.most_denied_key_denied) + " of its " +
             std::to_string(o.most_denied_key_offered) + " requests (" + fixed(of_key, 1) + "%), " +
             fixed(of_all, 1) + "% of the " + std::to_string(o.denied) + " denials.</li>\n";
  }
  if (!notes.empty()) body += "<ul>\n" + notes + "</ul>\n";
  body +=
      "<h2>Over time</h2>\n<p class=\"note\" id=\"chart-key\">In every chart <span "
      "class=\"admitted\">admitted is blue or green</span>, <span class=\"denied\">denied is red "
      "or orange</span> and the offered traffic is the wide grey band. Each algorithm keeps its "
      "own colours, dash and width throughout, so a line over an equal one (token_bucket and "
      "gcra decide alike for an equal burst) leaves it showing.</p>\n"
      "<div class=\"chart\" data-chart=\"overview\"></div>\n";
  body += "<div class=\"charts\">\n";
  for (const AlgorithmOutcome& o : simulation.outcomes) {
    body += "<div class=\"chart\" data-chart=\"algorithm-";
    body.append(algorithm_name(o.algorithm)).append("\"></div>\n");
  }
  body +=
      "</div>\n<h2>How long denied requests are told to wait</h2>\n"
      "<div class=\"chart\" data-chart=\"retry-after\"></div>\n";
  body += "<p class=\"note\">Rates are requests per second in buckets of " +
          format_duration(simulation.bucket) +
          ". Made by <code>spillway simulate</code>; this file needs no network.</p>\n";

  // The data the page's script draws.
  std::string data;
  JsonWriter json(data);
  json.begin_object().key("bucket_s").fixed(seconds(simulation.bucket), 6).key("t").begin_array();
  for (std::size_t i = 0; i < simulation.offered_series.size(); ++i) {
    json.fixed(seconds(static_cast<Micros>(i) * simulation.bucket), 3);
  }
  json.end_array().key("offered");
  write_rates(json, simulation.offered_series, simulation.bucket);
  json.key("offered_style")
      .begin_object()
      .member("color", pages::kOfferedColor)
      .key("width")
      .fixed(pages::kOfferedWidth, 1)
      .end_object()
      .key("retry_buckets")
      .begin_array();
  for (const char* retry_bucket : kRetryBuckets) json.value(retry_bucket);
  json.end_array().key("algorithms").begin_array();
  for (std::size_t a = 0; a < simulation.outcomes.size(); ++a) {
    const AlgorithmOutcome& o = simulation.outcomes[a];
    json.begin_object().member("name", algorithm_name(o.algorithm)).key("admitted_rate");
    write_rates(json, o.admitted_series, simulation.bucket);
    json.key("denied_rate");
    write_rates(json, o.denied_series, simulation.bucket);
    if (simulation.max_delay > 0) {
      json.key("delayed_rate");  // drawn as its own series (src/pages/web/report.js)
      write_rates(json, o.delayed_series, simulation.bucket);
    }
    json.key("style").raw(pages::series_style_json(pages::series_style(a)));
    json.key("retry_histogram").begin_array();
    for (const std::int64_t count : o.retry_histogram) json.value(count);
    json.end_array().end_object();
  }
  json.end_array().end_object();
  return pages::report_html("spillway simulate: " + std::string(source), body, data);
}

std::string overview_svg(const Simulation& simulation, std::string_view source) {
  pages::SvgChart chart{.title = "Admitted per second — " + std::string(source),
                        .x_label = "seconds",
                        .y_label = "requests / s"};
  const double width = seconds(simulation.bucket);
  for (std::size_t i = 0; i < simulation.offered_series.size(); ++i) {
    chart.x.push_back(static_cast<double>(i) * width);
  }
  const auto rates = [&](const std::vector<std::int64_t>& counts) {
    std::vector<double> y;
    for (std::int64_t c : counts) y.push_back(static_cast<double>(c) / width);
    return y;
  };
  chart.series.push_back({.label = "offered",
                          .color = std::string(pages::kOfferedColor),
                          .y = rates(simulation.offered_series),
                          .width = pages::kOfferedWidth});
  for (std::size_t a = 0; a < simulation.outcomes.size(); ++a) {
    const AlgorithmOutcome& o = simulation.outcomes[a];
    const pages::SeriesStyle& style = pages::series_style(a);
    chart.series.push_back({.label = std::string(algorithm_name(o.algorithm)),
                            .color = std::string(style.admitted),
                            .y = rates(o.admitted_series),
                            .dash = std::string(style.dash),
                            .width = style.width});
  }
  return pages::line_chart_svg(chart);
}

}  // namespace spillway::cli
