// The style sheet of report.html (reports/html.hpp), inlined into the page.
#include "reports/html.hpp"

namespace modsim::reports::detail {

const char* report_css() {
  static const char* const css = R"css(
:root { --ink:#1d2330; --muted:#5b6475; --line:#e3e6ec; --bg:#ffffff; --soft:#f6f7f9; --accent:#0b63b6; --bad:#b8460b; }
* { box-sizing: border-box; }
html { -webkit-text-size-adjust: 100%; }
body { margin: 0; background: var(--bg); color: var(--ink);
  font: 15px/1.55 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, "DejaVu Sans", sans-serif; }
main { max-width: 1080px; margin: 0 auto; padding: 28px 28px 64px; }
header.top { border-bottom: 1px solid var(--line); padding-bottom: 14px; margin-bottom: 8px; }
h1 { font-size: 26px; line-height: 1.25; margin: 0 0 4px; letter-spacing: -0.01em; }
.subtitle { color: var(--muted); margin: 0; }
nav.toc { margin: 12px 0 0; font-size: 13.5px; }
nav.toc a { color: var(--accent); text-decoration: none; margin-right: 14px; white-space: nowrap; }
nav.toc a:hover { text-decoration: underline; }
h2 { font-size: 19px; margin: 38px 0 10px; padding-top: 6px; border-top: 1px solid var(--line); }
section#verdict h2 { border-top: 0; }
p { margin: 8px 0 12px; max-width: 78ch; }
code { font: 13px/1.4 ui-monospace, "SFMono-Regular", Menlo, Consolas, "DejaVu Sans Mono", monospace;
  background: var(--soft); padding: 1px 4px; border-radius: 3px; }
ul { padding-left: 20px; max-width: 90ch; }
li { margin: 5px 0; }
.cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(170px, 1fr)); gap: 12px; margin: 14px 0 16px; }
.card { background: var(--soft); border: 1px solid var(--line); border-radius: 8px; padding: 12px 14px; }
.card .value { font-size: 28px; font-weight: 650; font-variant-numeric: tabular-nums; letter-spacing: -0.02em; }
.card .label { color: var(--muted); font-size: 13px; }
.table-wrap { overflow-x: auto; margin: 10px 0 16px; }
table { border-collapse: collapse; font-size: 13.5px; font-variant-numeric: tabular-nums; }
caption { caption-side: top; text-align: left; color: var(--muted); font-size: 13px; padding: 0 0 6px; }
th, td { padding: 5px 12px; border-bottom: 1px solid var(--line); text-align: left; vertical-align: top; }
th { font-weight: 600; border-bottom: 2px solid #c9ced8; white-space: nowrap; }
td.num, th.num { text-align: right; white-space: nowrap; }
tbody tr:nth-child(even) { background: #fafbfc; }
tr.em td { font-weight: 650; border-top: 1.5px solid #c9ced8; }
figure { margin: 14px 0 20px; }
figure svg { width: 100%; max-width: 900px; height: auto; display: block; border: 1px solid var(--line); border-radius: 6px; }
figcaption { color: var(--muted); font-size: 13px; margin-top: 4px; }
.note { border-left: 3px solid #d0a200; background: #fffaeb; padding: 8px 12px; margin: 10px 0; max-width: 90ch; font-size: 14px; }
.warn { border-left-color: var(--bad); background: #fff3ec; }
footer { color: var(--muted); font-size: 12.5px; margin-top: 40px; border-top: 1px solid var(--line); padding-top: 10px; }
@media print { main { max-width: none; } h2 { break-after: avoid; } figure, table { break-inside: avoid; } }
)css";
  return css;
}

}  // namespace modsim::reports::detail
