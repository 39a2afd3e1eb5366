#include "src/pages/dashboard_page.h"

#include <string>

#include "src/pages/assets.h"

namespace spillway::pages {
namespace {

// Replaces the one `marker` in `page` by `text`.
void fill(std::string& page, std::string_view marker, std::string_view text) {
  const std::size_t at = page.find(marker);
  if (at != std::string::npos) page.replace(at, marker.size(), text);
}

}  // namespace

std::string_view dashboard_html() {
  static const std::string page = [] {
    std::string html(assets::k_dashboard_html);
    fill(html, "@uplot_license", assets::kUplotLicense);
    fill(html, "/*@uplot_css*/", assets::kUplotCss);
    fill(html, "/*@pages_css*/", assets::k_pages_css);
    fill(html, "/*@uplot_js*/", assets::kUplotJs);
    fill(html, "/*@axes_js*/", assets::k_axes_js);
    fill(html, "/*@dashboard_js*/", assets::k_dashboard_js);
    return html;
  }();
  return page;
}

}  // namespace spillway::pages
