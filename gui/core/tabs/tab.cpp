#include "gui/core/tabs/tab.hpp"

#include <QAbstractItemModel>
#include <QHeaderView>
#include <QLabel>
#include <QTableView>
#include <QtCharts/QChart>
#include <QtCharts/QChartView>

#include "gui/core/result_models.hpp"

namespace modsim::gui {

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
