// Fits collectives to nccl-tests' output (sim/comm_calibrate.hpp).
#include "sim/comm_calibrate.hpp"

#include <algorithm>
#include <boost/json.hpp>
#include <cmath>
#include <filesystem>
#include <set>
#include <system_error>

#include "core/error.hpp"
#include "sim/config.hpp"
#include "sim/io.hpp"

namespace modsim::sim {

namespace json = boost::json;

line_fit fit_relative_line(const std::vector<double>& x, const std::vector<double>& t) {
  // Weighted normal equations with weights w_i = 1 / t_i^2.
  double sw = 0, sx = 0, sxx = 0, st = 0, sxt = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double w = 1.0 / (t[i] * t[i]);
    sw += w;
    sx += w * x[i];
    sxx += w * x[i] * x[i];
    st += w * t[i];
    sxt += w * x[i] * t[i];
  }
  line_fit f;
  const double det = sw * sxx - sx * sx;
  if (det > 0) {
    f.alpha = (sxx * st - sx * sxt) / det;
    f.beta = (sw * sxt - sx * st) / det;
  }
  if (det <= 0 || f.alpha < 0) {  // through the origin
    f.alpha = 0;
    f.beta = sxx > 0 ? sxt / sxx : 0;
  }
  return f;
}

link_class table_link(const nccl_table& t, const interconnect_spec& ic) {
  if (t.nodes > 1) return link_class::inter_node;
  if (t.nodes == 1) return link_class::intra_node;
  return link_for(t.gpus, ic);
}

namespace {

// Every `every`-th row of the file (counting all its rows from 0) from `offset`, then those in
// the size range.
std::vector<const nccl_row*> rows_in_range(const nccl_table& t, const comm_fit_options& o) {
  const std::size_t every = static_cast<std::size_t>(std::max(1, o.every));
  const std::size_t offset = static_cast<std::size_t>(std::max(0, o.offset)) % every;
  std::vector<const nccl_row*> out;
  for (std::size_t i = 0; i < t.rows.size(); ++i) {
    const nccl_row& r = t.rows[i];
    if (i % every == offset && r.bytes >= o.min_bytes && r.bytes <= o.max_bytes && r.bytes > 0) out.push_back(&r);
  }
  return out;
}

collective op_of(const nccl_table& t, const comm_fit_options& o) {
  if (o.op) return *o.op;
  if (t.op) return *t.op;
  throw input_error(t.file, "",
                    "cannot tell which collective this is (no '# Collective test starting' line, and the file name "
                    "names none); name the file after it (e.g. all_reduce_perf.txt) or give --collective");
}

int gpus_of(const nccl_table& t, const comm_fit_options& o) {
  const int g = o.gpus > 0 ? o.gpus : t.gpus;
  if (g < 2)
    throw input_error(
        t.file, "",
        g == 0 ? "cannot tell the GPU count (no '# nThread .. nGpus ..' header or '# Rank' lines); give --gpus"
               : "ran on one GPU; a collective needs at least 2");
  return g;
}

}  // namespace

collective_fit fit_nccl_table(const nccl_table& t, const interconnect_spec& ic, const comm_fit_options& o) {
  const collective op = op_of(t, o);
  const int gpus = gpus_of(t, o);
  const std::vector<const nccl_row*> rows = rows_in_range(t, o);
  std::set<std::int64_t> sizes;
  for (const nccl_row* r : rows) sizes.insert(r->bytes);
  if (sizes.size() < 2)
    throw input_error(t.file, "",
                      "fewer than two distinct sizes to fit (" + std::to_string(rows.size()) + " rows in range)");
  const double factor = busbw_factor(op, gpus);
  std::vector<double> x, y;
  for (const nccl_row* r : rows) {
    x.push_back(static_cast<double>(r->bytes) * factor);
    y.push_back(r->time_s);
  }
  const line_fit f = fit_relative_line(x, y);
  if (!(f.beta > 0)) throw input_error(t.file, "", "the times do not grow with the size: no bandwidth to fit");
  collective_fit out;
  out.collective = to_string(op);
  out.gpus = gpus;
  out.link = to_string(t.nodes > 1    ? link_class::inter_node
                       : t.nodes == 1 ? link_class::intra_node
                                      : link_for(gpus, ic));
  out.alpha_s = f.alpha;
  out.bus_bytes_s = 1.0 / f.beta;
  out.points = static_cast<int>(rows.size());
  out.min_bytes = *sizes.begin();
  out.max_bytes = *sizes.rbegin();
  out.file = t.file;
  std::vector<double> errs;
  for (std::size_t i = 0; i < x.size(); ++i) errs.push_back(std::abs((f.alpha + x[i] * f.beta - y[i]) / y[i]) * 100);
  std::sort(errs.begin(), errs.end());
  const std::size_t n = errs.size();
  out.median_abs_pct_error = n % 2 ? errs[n / 2] : (errs[n / 2 - 1] + errs[n / 2]) / 2;
  return out;
}

std::vector<comm_check_row> check_nccl_table(const nccl_table& t, const hardware_spec& hw, const comm_fit_options& o) {
  comm_request req;
  req.op = op_of(t, o);
  req.gpus = gpus_of(t, o);
  std::vector<comm_check_row> out;
  for (const nccl_row* r : rows_in_range(t, o)) {
    req.bytes = r->bytes;
    const comm_prediction p = predict_collective(hw, req);
    comm_check_row c;
    c.bytes = r->bytes;
    c.measured_s = r->time_s;
    c.predicted_s = p.time_s;
    c.pct_error = 100.0 * (p.time_s - r->time_s) / r->time_s;
    out.push_back(c);
  }
  return out;
}

double median_abs_pct_error(const std::vector<comm_check_row>& rows) {
  if (rows.empty()) return 0;
  std::vector<double> e;
  for (const comm_check_row& r : rows) e.push_back(std::abs(r.pct_error));
  std::sort(e.begin(), e.end());
  const std::size_t n = e.size();
  return n % 2 ? e[n / 2] : (e[n / 2 - 1] + e[n / 2]) / 2;
}

void write_comm_calibrated_hardware(const std::string& hardware_path, const std::vector<collective_fit>& fits,
                                    const std::string& source, const std::string& date, const std::string& out_path) {
  // Parse it strictly first: a broken hardware file is reported as such.
  const hardware_spec hw = load_hardware(hardware_path);
  if (!hw.interconnect)
    throw input_error(hardware_path, "interconnect",
                      "absent: the calibration goes into the interconnect object (gpus_per_node, intra_node, ...)");
  json::value v = json::parse(read_text_file(hardware_path));
  json::object& o = v.as_object();
  if (auto* name = o.if_contains("name"); name && name->is_string()) {
    std::string n(name->as_string());
    const std::string suffix = "-calibrated";
    if (n.size() < suffix.size() || n.compare(n.size() - suffix.size(), suffix.size(), suffix) != 0) n += suffix;
    *name = n;
  }
  json::array arr;
  for (const collective_fit& f : fits) {
    json::object j;
    j["collective"] = f.collective;
    j["link"] = f.link;
    j["gpus"] = f.gpus;
    j["alpha_s"] = f.alpha_s;
    j["bus_bytes_s"] = f.bus_bytes_s;
    j["points"] = f.points;
    j["min_bytes"] = f.min_bytes;
    j["max_bytes"] = f.max_bytes;
    j["median_abs_pct_error"] = f.median_abs_pct_error;
    j["file"] = f.file;
    arr.push_back(std::move(j));
  }
  json::object cal;
  cal["source"] = source;
  cal["date"] = date;
  cal["fits"] = std::move(arr);
  o["interconnect"].as_object()["calibration"] = std::move(cal);

  namespace fs = std::filesystem;
  fs::path dir = fs::path(out_path).parent_path();
  if (dir.empty()) dir = ".";
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw input_error(out_path, "", "folder does not exist");
  write_file_atomically(out_path, pretty_json(v) + "\n");
}

}  // namespace modsim::sim
