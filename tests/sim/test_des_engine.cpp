// Tests of the event engine (sim/des/engine.cpp): ordering by (time, sequence number),
// run_until, observers. Expected orders and times are written out by hand.
#include "sim/des/engine.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.hpp"

namespace modsim::sim::des {
namespace {

TEST(DesEngine, EqualTimeEventsKeepInsertionOrder) {
  engine e;
  std::vector<int> order;
  for (int i = 0; i < 10; ++i) e.schedule_at(1.0, [&order, i] { order.push_back(i); });
  e.run();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_DOUBLE_EQ(e.now(), 1.0);
}

TEST(DesEngine, EventsRunInTimeOrderWhateverTheSchedulingOrder) {
  engine e;
  std::vector<std::string> order;
  e.schedule_at(3.0, [&] { order.push_back("c@3"); });
  e.schedule_at(1.0, [&] { order.push_back("a@1"); });
  e.schedule_at(2.0, [&] { order.push_back("b@2"); });
  e.schedule_at(1.0, [&] { order.push_back("a2@1"); });
  e.run();
  EXPECT_EQ(order, (std::vector<std::string>{"a@1", "a2@1", "b@2", "c@3"}));
}

TEST(DesEngine, AnEventScheduledAtNowRunsAfterThoseAlreadyDueThen) {
  engine e;
  std::vector<std::string> order;
  e.schedule_at(1.0, [&] {
    order.push_back("first");
    e.schedule(0.0, [&] { order.push_back("spawned"); });
  });
  e.schedule_at(1.0, [&] { order.push_back("second"); });
  e.run();
  EXPECT_EQ(order, (std::vector<std::string>{"first", "second", "spawned"}));
}

TEST(DesEngine, RunUntilRunsEventsUpToAndIncludingTheTimeAndStopsThere) {
  engine e;
  std::vector<double> seen;
  for (double t : {0.5, 1.0, 2.0, 2.0, 3.0}) e.schedule_at(t, [&e, &seen] { seen.push_back(e.now()); });
  e.run_until(2.0);
  EXPECT_EQ(seen, (std::vector<double>{0.5, 1.0, 2.0, 2.0}));
  EXPECT_DOUBLE_EQ(e.now(), 2.0);
  EXPECT_EQ(e.pending(), 1u);
  EXPECT_DOUBLE_EQ(e.next_time(), 3.0);
  e.run_until(2.5);  // nothing due: time still advances to 2.5
  EXPECT_EQ(seen.size(), 4u);
  EXPECT_DOUBLE_EQ(e.now(), 2.5);
  e.run();
  EXPECT_EQ(seen.back(), 3.0);
  EXPECT_DOUBLE_EQ(e.now(), 3.0);
  EXPECT_TRUE(e.empty());
}

TEST(DesEngine, ScheduleIsRelativeToNow) {
  engine e;
  double fired = -1;
  e.schedule_at(2.0, [&] { e.schedule(0.25, [&] { fired = e.now(); }); });
  e.run();
  EXPECT_DOUBLE_EQ(fired, 2.25);
}

TEST(DesEngine, StepRunsOneEventAndReportsWhenNoneIsLeft) {
  engine e;
  int n = 0;
  e.schedule(1.0, [&] { ++n; });
  e.schedule(2.0, [&] { ++n; });
  EXPECT_TRUE(e.step());
  EXPECT_EQ(n, 1);
  EXPECT_TRUE(e.step());
  EXPECT_FALSE(e.step());
  EXPECT_EQ(e.events_run(), 2u);
}

TEST(DesEngine, ObserversSeeEveryEventWithItsTimeAndSequenceNumber) {
  engine e;
  std::vector<std::pair<double, std::uint64_t>> seen;
  e.add_observer([&](double t, std::uint64_t seq) { seen.emplace_back(t, seq); });
  e.schedule_at(2.0, [] {});  // seq 0
  e.schedule_at(1.0, [] {});  // seq 1
  e.schedule_at(2.0, [] {});  // seq 2
  e.run();
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0], (std::pair<double, std::uint64_t>{1.0, 1}));
  EXPECT_EQ(seen[1], (std::pair<double, std::uint64_t>{2.0, 0}));
  EXPECT_EQ(seen[2], (std::pair<double, std::uint64_t>{2.0, 2}));
}

TEST(DesEngine, SchedulingInThePastOrWithABadDelayThrows) {
  engine e;
  e.schedule_at(1.0, [] {});
  e.run();
  EXPECT_THROW(e.schedule_at(0.5, [] {}), modsim::error);
  EXPECT_THROW(e.schedule(-1.0, [] {}), modsim::error);
  EXPECT_THROW(e.schedule(std::numeric_limits<double>::quiet_NaN(), [] {}), modsim::error);
}

TEST(DesEngine, ManyInterleavedEventsStayOrdered) {
  // A naive reference: events at times i % 7, run order must be sorted by (time, insertion).
  engine e;
  std::vector<std::pair<int, int>> ran;
  for (int i = 0; i < 200; ++i) {
    const int t = (i * 37) % 7;
    e.schedule_at(t, [&ran, t, i] { ran.emplace_back(t, i); });
  }
  e.run();
  ASSERT_EQ(ran.size(), 200u);
  for (std::size_t k = 1; k < ran.size(); ++k) {
    EXPECT_TRUE(ran[k - 1].first < ran[k].first ||
                (ran[k - 1].first == ran[k].first && ran[k - 1].second < ran[k].second));
  }
}

}  // namespace
}  // namespace modsim::sim::des
