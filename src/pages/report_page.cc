#include "src/pages/report_page.h"

#include "src/pages/assets.h"
#include "src/pages/html.h"

namespace spillway::pages {

std::string report_html(std::string_view title, std::string_view body_html,
                        std::string_view data_json) {
  std::string page;
  page.reserve(assets::kUplotJs.size() + assets::k_axes_js.size() + body_html.size() +
               data_json.size() + 8192);
  page += "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  page += "<!-- The charts are drawn by uPlot, inlined below under its licence:\n";
  page += assets::kUplotLicense;
  page += "-->\n<title>";
  page += html_escape(title);
  page += "</title>\n<style>";
  page += assets::kUplotCss;
  page += "</style>\n<style>";
  page += assets::k_pages_css;
  page += "</style>\n</head>\n<body>\n";
  page += body_html;
  page += "\n<script type=\"application/json\" id=\"report-data\">";
  page += script_safe_json(data_json);
  page += "</script>\n<script>";
  page += assets::kUplotJs;
  page += "</script>\n<script>";
  page += assets::k_axes_js;
  page += "</script>\n<script>";
  page += assets::k_report_js;
  page += "</script>\n</body>\n</html>\n";
  return page;
}

}  // namespace spillway::pages
