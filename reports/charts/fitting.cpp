// The chart kit's text fitting: a fitted_chart wraps its title, axis titles, legend entries
// and category labels into lines and steps their fonts down until they fit the size it is
// drawn at, where Qt would elide them ("mem-b…").
#include <QFont>
#include <QFontMetricsF>
#include <QVariant>
#include <QtCharts/QBarCategoryAxis>
#include <QtCharts/QCategoryAxis>
#include <QtCharts/QLegend>
#include <QtCharts/QLegendMarker>
#include <QtCharts/QLogValueAxis>
#include <algorithm>
#include <string>
#include <vector>

#include "reports/charts/kit.hpp"

namespace modsim::reports::chart_kit {
namespace {

const char* const k_full_text = "modsim_full_text";      // an axis's title as given
const char* const k_full_labels = "modsim_full_labels";  // a bar category axis's labels ('\n' = line break)
const char* const k_fitted_text = "modsim_fitted_text";  // what fit() last set (to see a caller's change)

constexpr double k_title_pt = 13.0;

QFont sized(QFont f, double pt) {
  f.setPointSizeF(pt);
  return f;
}

// `word` cut into pieces no wider than `width`, each but the last ending in a hyphen ("atten-",
// "tion"); a piece keeps at least three characters.
QStringList hyphenated(const QString& word, const QFontMetricsF& fm, double width) {
  QStringList out;
  QString rest = word;
  while (fm.horizontalAdvance(rest) > width && rest.size() > 5) {
    int n = static_cast<int>(rest.size()) - 3;
    while (n > 3 && fm.horizontalAdvance(rest.left(n) + '-') > width) --n;
    out << rest.left(n) + '-';
    rest = rest.mid(n);
  }
  out << rest;
  return out;
}

// `text` broken at spaces (and after hyphens) into lines no wider than `width`; a word wider
// than `width` stays whole on its line, or with `hyphenate` is cut with hyphens.
QStringList wrap_words(const QString& text, const QFontMetricsF& fm, double width, bool hyphenate = false) {
  QStringList words;
  QString word;
  for (QChar c : text) {
    if (c == ' ') {
      if (!word.isEmpty()) words << word;
      word.clear();
      continue;
    }
    word += c;
    if (c == '-' && word.size() > 1) {
      words << word + QChar(0x1);  // 0x1: joined to the next word without a space
      word.clear();
    }
  }
  if (!word.isEmpty()) words << word;
  if (hyphenate) {
    QStringList cut;
    for (const QString& w : words) {
      const bool glued = w.endsWith(QChar(0x1));
      const QString bare = glued ? w.chopped(1) : w;
      const QStringList pieces = fm.horizontalAdvance(bare) <= width ? QStringList{bare} : hyphenated(bare, fm, width);
      for (int i = 0; i < pieces.size(); ++i)
        cut << pieces[i] + (i + 1 < pieces.size() || glued ? QString(QChar(0x1)) : QString());
    }
    words = cut;
  }
  QStringList lines;
  QString line;
  for (const QString& w : words) {
    const bool glued = !line.isEmpty() && line.endsWith(QChar(0x1));
    const QString base = glued ? line.chopped(1) : line;
    const QString candidate = line.isEmpty() ? w : base + (glued ? "" : " ") + w;
    if (line.isEmpty() || fm.horizontalAdvance(QString(candidate).remove(QChar(0x1))) <= width) {
      line = candidate;
    } else {
      lines << line.remove(QChar(0x1));
      line = w;
    }
  }
  if (!line.isEmpty()) lines << line.remove(QChar(0x1));
  return lines;
}

double widest(const QStringList& lines, const QFontMetricsF& fm) {
  double w = 0;
  for (const QString& l : lines) w = std::max(w, fm.horizontalAdvance(l));
  return w;
}

// Lines as the rich text Qt Charts draws: escaped, joined by <br>; one line stays plain text.
QString as_lines(const QStringList& lines) {
  if (lines.size() == 1) return lines.front();
  QStringList escaped;
  for (const QString& l : lines) escaped << l.toHtmlEscaped();
  return escaped.join(QStringLiteral("<br>"));
}

struct fitted_text {
  QString text;
  double pt = 0;
  int lines = 1;
  bool fits = false;
};

// The largest of `sizes` at which `text` (its own line breaks kept) wraps into at most
// `max_lines` lines no wider than `width`; the smallest size when none does.
fitted_text fit_text(const QString& text, const QFont& font, const std::vector<double>& sizes, double width,
                     int max_lines, bool hyphenate = false) {
  fitted_text out;
  for (double pt : sizes) {
    const QFontMetricsF fm(sized(font, pt));
    QStringList lines;
    for (const QString& part : text.split('\n')) lines << wrap_words(part, fm, width, hyphenate);
    out = {as_lines(lines), pt, static_cast<int>(lines.size()),
           static_cast<int>(lines.size()) <= max_lines && widest(lines, fm) <= width};
    if (out.fits) break;
  }
  return out;
}

}  // namespace

// What is left of the chart for the plot area, estimated before Qt lays it out (the tests lay
// charts out at the report's and the explorer's sizes and check that nothing is elided).
void fitted_chart::fit(const QSizeF& size) {
  const double w = size.width(), h = size.height();
  if (w < 120 || h < 120) return;
  const QMargins m = margins();
  const double inner_w = w - m.left() - m.right() - 16;

  // Title: up to two lines, then smaller; in a narrow chart three, then four lines at the
  // smallest sizes rather than a cut title.
  if (title() != m_fitted_title) m_title = title();  // set by the caller since
  int title_lines = 0;
  double title_pt = k_title_pt;
  if (!m_title.isEmpty()) {
    // Qt draws the title a little narrower than the chart's inner width: 12 px to spare.
    const double title_w = inner_w - 12;
    fitted_text t = fit_text(m_title, titleFont(), {13, 12, 11, 10, 9, 8}, title_w, 2);
    if (!t.fits) t = fit_text(m_title, titleFont(), {9, 8}, title_w, 3);
    if (!t.fits) t = fit_text(m_title, titleFont(), {8}, title_w, 4);
    title_lines = t.lines;
    title_pt = t.pt;
    setTitleFont(sized(titleFont(), t.pt));
    m_fitted_title = t.text;
    setTitle(t.text);
  }

  // Legend (bottom): one row; smaller, then its entries in two lines, then to the right.
  double legend_h = 0, legend_w = 0;
  QLegend* legend = this->legend();
  std::vector<QLegendMarker*> shown;
  QStringList names;
  for (QLegendMarker* marker : legend->markers()) {
    if (!marker->isVisible()) continue;
    if (!marker->property(k_full_text).isValid() || marker->label() != marker->property(k_fitted_text).toString())
      marker->setProperty(k_full_text, marker->label());
    shown.push_back(marker);
    names << marker->property(k_full_text).toString();
  }
  if (legend->isVisible() && !shown.empty()) {
    // Qt gives an entry its text, 8 px of text margins and about 20 px for the marker and spacing.
    auto row = [&](double pt, double wrap_at, QStringList* texts, int* lines) {
      const QFontMetricsF fm(sized(legend->font(), pt));
      double total = 24;
      *lines = 1;
      texts->clear();
      for (const QString& n : names) {
        const QStringList l = wrap_at > 0 ? wrap_words(n, fm, wrap_at) : QStringList{n};
        *lines = std::max(*lines, static_cast<int>(l.size()));
        total += widest(l, fm) + fm.height() + 16;
        *texts << as_lines(l);
      }
      return total;
    };
    QStringList texts;
    int lines = 1;
    double pt = 0;
    for (double p : {9.5, 8.5, 7.5})
      if (row(p, 0, &texts, &lines) <= inner_w) {
        pt = p;
        break;
      }
    for (double p : {8.5, 7.5})
      for (double wrap_at = 160; pt == 0 && wrap_at >= 50; wrap_at -= 10)
        if (row(p, wrap_at, &texts, &lines) <= inner_w && lines <= 2) pt = p;
    if (pt > 0) {
      legend->setAlignment(Qt::AlignBottom);
      legend_h = lines * QFontMetricsF(sized(legend->font(), pt)).lineSpacing() + 14;
    } else {  // a column on the right
      pt = 8.0;
      const QFontMetricsF fm(sized(legend->font(), pt));
      texts.clear();
      for (const QString& n : names) {
        const QStringList l = wrap_words(n, fm, std::max(60.0, w * 0.22));
        legend_w = std::max(legend_w, widest(l, fm) + fm.height() + 30);
        texts << as_lines(l);
      }
      legend->setAlignment(Qt::AlignRight);
    }
    legend->setFont(sized(legend->font(), pt));
    for (std::size_t i = 0; i < shown.size(); ++i) {
      shown[i]->setProperty(k_fitted_text, texts[static_cast<int>(i)]);
      if (shown[i]->label() != texts[static_cast<int>(i)]) shown[i]->setLabel(texts[static_cast<int>(i)]);
    }
  }

  // The plot area, roughly: the y axis's labels and title on the left, the x axis's below.
  const double title_h = title_lines * QFontMetricsF(sized(titleFont(), title_pt)).lineSpacing() + 12;
  double x_labels_h = 24;
  for (QAbstractAxis* a : axes(Qt::Horizontal))
    if (a->property(k_full_labels).isValid()) x_labels_h = 3 * QFontMetricsF(a->labelsFont()).lineSpacing() + 8;
  const double plot_w = w - m.left() - m.right() - 100 - legend_w;
  const double plot_h = h - m.top() - m.bottom() - title_h - legend_h - x_labels_h - 40;

  for (QAbstractAxis* a : axes()) {
    const bool horizontal = a->orientation() == Qt::Horizontal;
    // The estimate's error (about 5%) and the text item's 2 × 4 px of document margin.
    const double room = std::max(40.0, 0.95 * (horizontal ? plot_w : plot_h) - 12);
    QVariant full = a->property(k_full_text);
    if (a->titleText() != a->property(k_fitted_text).toString()) full = a->titleText();
    const QString text = full.toString();
    if (!text.isEmpty()) {
      // One line: Qt cuts an axis title of two lines back to one (its axis gets no more room).
      const fitted_text t = fit_text(text, a->titleFont(), {10.5, 9.5, 8.5, 7.5, 7.0}, room, 1);
      a->setTitleFont(sized(a->titleFont(), t.pt));
      a->setProperty(k_full_text, text);
      a->setProperty(k_fitted_text, t.text);
      a->setTitleText(t.text);
    }
    if (auto* values = qobject_cast<QCategoryAxis*>(a)) {
      relabel(values, horizontal ? plot_w : plot_h, horizontal);
      relabel_layers(values, horizontal ? plot_w : plot_h);
    }
    if (auto* log = qobject_cast<QLogValueAxis*>(a); log && horizontal) thin_log_labels(log, plot_w);
    // Category labels: each within its category's width, wrapped into up to three lines, one
    // font size for all.
    auto* cat = qobject_cast<QBarCategoryAxis*>(a);
    if (cat == nullptr || !cat->property(k_full_labels).isValid()) continue;
    const QStringList labels = cat->property(k_full_labels).toStringList();
    if (labels.isEmpty()) continue;
    // Qt gives each label the axis length / (categories + 1), less 2 × 5 px of padding; the text
    // item adds 4 px of document margin on each side.
    const double cell = (horizontal ? plot_w : plot_h) / double(labels.size() + 1) - 20;
    // Whole words first; when no size fits them, long words cut with a hyphen ("atten-" "tion").
    QStringList fitted;
    double chosen = 6.0;
    bool ok = false;
    for (bool hyphenate : {false, true}) {
      for (double pt : {9.5, 8.5, 7.5, 6.5, 6.0}) {
        fitted.clear();
        ok = true;
        const QFont f = sized(cat->labelsFont(), pt);
        for (const QString& l : labels) {
          const fitted_text t = fit_text(l, f, {pt}, cell, hyphenate ? 4 : 3, hyphenate);
          ok = ok && t.fits;
          fitted << t.text;
        }
        chosen = pt;
        if (ok) break;
      }
      if (ok) break;
    }
    cat->setLabelsFont(sized(cat->labelsFont(), chosen));
    if (cat->categories() != fitted) cat->setCategories(fitted);
  }
}

QBarCategoryAxis* category_axis(const std::vector<std::string>& labels) {
  auto* axis = new QBarCategoryAxis();
  QStringList full;
  for (const auto& l : labels) full << qs(l);
  axis->setProperty(k_full_labels, full);
  QStringList shown;
  for (const QString& l : full) shown << as_lines(l.split('\n'));
  axis->append(shown);
  return axis;
}

}  // namespace modsim::reports::chart_kit
