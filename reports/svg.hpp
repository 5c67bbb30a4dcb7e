#pragma once
// The charts' SVG text (QSvgGenerator's output): made smaller and portable for charts/*.svg,
// and made fit to sit inline in report.html. Internal to reports/.
#include <string>

namespace modsim::reports::detail {

// Empty groups removed, Qt's generic "Sans Serif" family given real fallbacks.
std::string tidy_svg(std::string s);

// No XML prolog or DOCTYPE, no namespace or size attributes (CSS scales it by its viewBox),
// role="img" with `alt` as its label, every id prefixed with `id_prefix`. Empty when `svg`
// has no <svg element.
std::string inline_svg(const std::string& svg, const std::string& id_prefix, const std::string& alt);

}  // namespace modsim::reports::detail
