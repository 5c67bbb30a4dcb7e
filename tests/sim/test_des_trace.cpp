// Tests of the Chrome trace-event output (sim/des/trace.cpp): valid JSON with the
// traceEvents array, named tracks, and spans in microseconds placed as worked out by hand.
#include "sim/des/trace.hpp"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <map>
#include <string>
#include <vector>

namespace modsim::sim::des {
namespace {

namespace json = boost::json;

constexpr double us = 1e-6;

std::vector<json::object> events_of(const std::string& text) {
  const json::value v = json::parse(text);
  std::vector<json::object> out;
  for (const json::value& e : v.as_object().at("traceEvents").as_array()) out.push_back(e.as_object());
  return out;
}

TEST(DesTrace, AForwardTimelineHasNamedHostAndStreamTracksInMicroseconds) {
  // The slow-host timeline of test_des_execution: host 30 us per kernel, launch 1 us,
  // kernels 10, 20, 5 us -> stream runs 30-41, 60-81, 90-96 with idle gaps before each.
  std::vector<kernel> ks(3);
  const modsim::op names[] = {modsim::op::qkv_proj, modsim::op::attn_scores, modsim::op::mlp_up};
  const double dur[] = {10, 20, 5};
  for (int i = 0; i < 3; ++i) {
    ks[static_cast<std::size_t>(i)].op = names[i];
    ks[static_cast<std::size_t>(i)].layer = 0;
    ks[static_cast<std::size_t>(i)].device_s = dur[i] * us;
  }
  device_model d;
  d.launch_s = 1 * us;
  d.host_enqueue_s = 30 * us;
  const timeline t = simulate_execution(ks, d, {});
  const std::vector<json::object> ev = events_of(chrome_trace(t, "test"));

  std::map<std::int64_t, std::string> tracks;
  int complete = 0;
  std::vector<std::pair<double, double>> runs, idles;
  for (const json::object& e : ev) {
    const std::string ph(e.at("ph").as_string());
    if (ph == "M" && e.at("name").as_string() == "thread_name") {
      tracks[e.at("tid").as_int64()] = std::string(e.at("args").as_object().at("name").as_string());
    }
    if (ph != "X") continue;
    ++complete;
    const std::string cat(e.at("cat").as_string());
    const double ts = e.at("ts").to_number<double>();
    const double du = e.at("dur").to_number<double>();
    if (cat == "idle") idles.emplace_back(ts, du);
    if (cat == "attn_proj" || cat == "attn_core" || cat == "mlp") runs.emplace_back(ts, du);
  }
  EXPECT_EQ(tracks[1], "host");
  EXPECT_EQ(tracks[2], "stream 0");
  EXPECT_EQ(complete, 9);  // 3 enqueues, 3 kernels, 3 idle gaps
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_NEAR(runs[0].first, 30, 1e-9);
  EXPECT_NEAR(runs[0].second, 11, 1e-9);
  EXPECT_NEAR(runs[1].first, 60, 1e-9);
  EXPECT_NEAR(runs[2].first, 90, 1e-9);
  EXPECT_NEAR(runs[2].second, 6, 1e-9);
  ASSERT_EQ(idles.size(), 3u);
  EXPECT_NEAR(idles[1].first, 41, 1e-9);
  EXPECT_NEAR(idles[1].second, 19, 1e-9);
}

TEST(DesTrace, AServeTraceHasOneTrackPerRequestWithItsPhases) {
  serve_trace tr("serve");
  tr.on_arrival({0, 1.0, 10, 3});
  tr.on_arrival({1, 1.5, 10, 1});
  tr.on_admit(0, 1.0, false);
  step_record s;
  s.start_s = 1.0;
  s.dur_s = 0.5;
  s.prefill_seqs = 1;
  tr.on_step(s);
  tr.on_first_token(0, 1.5);
  tr.on_admit(1, 1.5, false);
  tr.on_first_token(1, 2.0);
  request_record r1;
  r1.id = 1;
  r1.finish_s = 2.0;
  tr.on_finish(r1);
  tr.on_preempt(0, 2.0);
  tr.on_admit(0, 2.5, true);
  tr.on_resume(0, 3.0);  // the recompute prefill samples the next token; decoding resumes
  request_record r0;
  r0.id = 0;
  r0.finish_s = 4.0;
  tr.on_finish(r0);

  std::map<std::int64_t, std::vector<std::string>> phases;
  std::map<std::int64_t, std::string> names;
  int steps = 0, counters = 0;
  for (const json::object& e : events_of(tr.json())) {
    const std::string ph(e.at("ph").as_string());
    if (ph == "C") ++counters;
    if (ph == "M" && e.at("name").as_string() == "thread_name" && e.at("pid").as_int64() == 2) {
      names[e.at("tid").as_int64()] = std::string(e.at("args").as_object().at("name").as_string());
    }
    if (ph != "X") continue;
    if (e.at("pid").as_int64() == 1) ++steps;
    if (e.at("pid").as_int64() == 2) phases[e.at("tid").as_int64()].push_back(std::string(e.at("name").as_string()));
  }
  EXPECT_EQ(steps, 1);
  EXPECT_EQ(counters, 1);
  EXPECT_EQ(names[1], "request 0");
  EXPECT_EQ(names[2], "request 1");
  EXPECT_EQ(phases[1], (std::vector<std::string>{"queued", "prefill", "decode", "queued (preempted)",
                                                 "prefill (recompute)", "decode"}));
  EXPECT_EQ(phases[2], (std::vector<std::string>{"queued", "prefill", "decode"}));
}

TEST(DesTrace, NamesAreEscaped) {
  EXPECT_EQ(json_escape("a\"b\\c\n"), "a\\\"b\\\\c\\n");
  // A control character other than the named ones is \u00XX; UTF-8 passes through.
  EXPECT_EQ(json_escape(std::string("x\x01y")), "x\\u0001y");
  EXPECT_EQ(json_escape("µs"), "µs");
}

}  // namespace
}  // namespace modsim::sim::des
