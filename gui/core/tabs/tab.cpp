#include "gui/core/tabs/tab.hpp"

#include <QAbstractItemModel>
#include <QEvent>
#include <QHeaderView>
#include <QLabel>
#include <QScrollBar>
#include <QTableView>
#include <QtCharts/QChart>
#include <QtCharts/QChartView>

#include "gui/core/result_models.hpp"

namespace modsim::gui {

namespace {
class RebuildWhenShown : public QObject {
 public:
  RebuildWhenShown(QWidget* page, std::function<void()> rebuild)
      : QObject(page), m_page(page), m_rebuild(std::move(rebuild)) {
    page->installEventFilter(this);
  }
  void request() {
    m_dirty = true;
    if (m_page->isVisible() || !m_page->window()->isVisible()) run();
  }

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override {
    if (watched == m_page && event->type() == QEvent::Show && m_dirty) run();
    return false;
  }

 private:
  void run() {
    m_dirty = false;
    m_rebuild();
  }
  QWidget* m_page;
  std::function<void()> m_rebuild;
  bool m_dirty = false;
};
}  // namespace

void rebuildOnReset(QWidget* page, QAbstractItemModel* model, std::function<void()> rebuild) {
  auto* r = new RebuildWhenShown(page, std::move(rebuild));
  QObject::connect(model, &QAbstractItemModel::modelReset, r, [r] { r->request(); });
}

void wrapToWidth(QLabel* label) {
  label->setWordWrap(true);
  QSizePolicy policy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  policy.setHeightForWidth(true);
  label->setSizePolicy(policy);
}

QTableView* makeTable(QAbstractItemModel* model, QWidget* parent) {
  auto* t = new QTableView(parent);
  t->setModel(model);
  t->setAlternatingRowColors(true);
  t->setSelectionBehavior(QAbstractItemView::SelectRows);
  t->setEditTriggers(QAbstractItemView::NoEditTriggers);
  t->verticalHeader()->setVisible(false);
  t->verticalHeader()->setDefaultSectionSize(22);
  t->horizontalHeader()->setStretchLastSection(true);
  t->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  // At least kMinTableRows rows in view beside the header and a horizontal scroll bar: a small
  // window scrolls the page (MainWindow) rather than squeezing the table to a row or two.
  const int frame = 2 * t->frameWidth();
  t->setMinimumHeight(frame + t->horizontalHeader()->sizeHint().height() +
                      (kMinTableRows + 1) * t->verticalHeader()->defaultSectionSize() +
                      t->horizontalScrollBar()->sizeHint().height());
  return t;
}

QChartView* makeChartView(QWidget* parent) {
  auto* v = new QChartView(parent);
  v->setRenderHint(QPainter::Antialiasing);
  v->setMinimumHeight(260);
  return v;
}

AvailabilityStack::AvailabilityStack(QWidget* content, ResultModel* model, QWidget* parent)
    : QStackedWidget(parent), m_message(new QLabel(this)) {
  m_message->setAlignment(Qt::AlignCenter);
  m_message->setWordWrap(true);
  m_message->setMargin(40);
  m_message->setStyleSheet(QStringLiteral("QLabel { color: #555; font-size: 13pt; }"));
  addWidget(content);
  addWidget(m_message);
  connect(model, &ResultModel::availabilityChanged, this, &AvailabilityStack::update);
  update(model->available(), model->unavailableReason());
}

QString AvailabilityStack::message() const { return currentIndex() == 1 ? m_message->text() : QString(); }

void AvailabilityStack::update(bool available, const QString& reason) {
  m_message->setText(reason.isEmpty() ? tr("Computing…") : reason);
  setCurrentIndex(available ? 0 : 1);
}

void replaceChart(QChartView* view, QChart* chart) {
  QChart* old = view->chart();
  view->setChart(chart);
  delete old;
}

}  // namespace modsim::gui
