// render_report: report_data -> report.md, report.html (self-contained: CSS and SVG inline,
// no external reference), summary.json, tables/*.csv and charts/*.svg. The document is built by
// reports/sections.hpp and written by reports/markdown.hpp and reports/html.hpp; the charts are
// drawn here (with Qt) and tidied by reports/svg.hpp.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "reports/document.hpp"
#include "reports/html.hpp"
#include "reports/markdown.hpp"
#include "reports/report.hpp"
#include "reports/sections.hpp"
#include "reports/summary.hpp"
#include "reports/svg.hpp"
#include "core/error.hpp"

#if MODSIM_HAVE_QT
#include "reports/charts.hpp"
#endif

namespace modsim::reports {

bool charts_available() { return MODSIM_HAVE_QT != 0; }

std::vector<report_file> render_report(const report_data& data, const render_options& options,
                                       const progress_fn& progress) {
  using namespace detail;
  if (data.models.empty()) throw input_error("", "", "render_report: the report has no model");
  document doc = build_document(data);
  const bool charts = options.charts && charts_available();
  std::map<std::string, std::string> svgs;
  std::vector<report_file> files;
#if MODSIM_HAVE_QT
  if (charts) {
    if (!ensure_application()) throw runtime_error("report: cannot create a Qt application to draw the charts");
    for (const chart_spec& c : doc.charts) {
      if (progress) progress("report: drawing chart " + c.name);
      std::unique_ptr<QChart> chart(c.build());
      const QByteArray svg = render_svg(chart.get(), QSize(900, 500));
      svgs[c.name] = tidy_svg(std::string(svg.constData(), static_cast<std::size_t>(svg.size())));
      files.push_back({"charts/" + c.name + ".svg", svgs[c.name]});
    }
  }
#else
  (void)progress;
#endif
  files.push_back({"report.md", render_markdown(doc, charts)});
  files.push_back({"report.html", render_html(doc, svgs, charts)});
  files.push_back({"summary.json", summary_text(summary_of(data))});
  for (auto& f : doc.csv) files.push_back(std::move(f));
  return files;
}

}  // namespace modsim::reports
