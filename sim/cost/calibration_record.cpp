// The calibration record (sim/cost/calibration_record.hpp): its look-ups, the axes' names, and its
// JSON file format (parse_calibration, calibration_to_json).
#include "sim/cost/calibration_record.hpp"

#include <algorithm>
#include <boost/json.hpp>
#include <cmath>
#include <limits>
#include <optional>
#include <set>
#include <sstream>

#include "core/error.hpp"
#include "sim/model/config.hpp"
#include "sim/common/json_reader.hpp"
#include "sim/common/least_squares.hpp"

namespace modsim::sim {

namespace json = boost::json;

namespace {

constexpr std::pair<cv_axis, std::string_view> k_axes[] = {
    {cv_axis::d_model, "d_model"}, {cv_axis::d_ff, "d_ff"},   {cv_axis::n_heads, "n_heads"},
    {cv_axis::seq_len, "seq_len"}, {cv_axis::batch, "batch"}, {cv_axis::capacity, "capacity"},
    {cv_axis::tokens, "tokens"},
};

}  // namespace

std::string_view to_string(cv_axis a) {
  for (const auto& [axis, name] : k_axes)
    if (axis == a) return name;
  return "?";
}

std::optional<cv_axis> find_cv_axis(std::string_view name) {
  for (const auto& [axis, n] : k_axes)
    if (n == name) return axis;
  return std::nullopt;
}

std::string_view to_string(backward_class c) {
  switch (c) {
    case backward_class::gemm:
      return "gemm";
    case backward_class::attention:
      return "attention";
    case backward_class::memory:
      return "memory";
  }
  return "?";
}

std::string cv_axis_names() {
  std::string out;
  for (const auto& [axis, name] : k_axes) out += (out.empty() ? "" : ", ") + std::string(name);
  return out;
}

bool calibration::kernel_model_fitted_on(dtype t) const {
  return kernels && std::find(kernel_dtypes.begin(), kernel_dtypes.end(), t) != kernel_dtypes.end();
}

double cross_validation_summary::p90_at(double predicted_s, bool decode) const {
  const auto& by = decode && !decode_p90_by_time.empty() ? decode_p90_by_time : p90_by_time;
  for (const auto& [upper, p90] : by)
    if (predicted_s <= upper) return p90;
  return by.empty() ? p90_abs_pct_error : by.back().second;
}

namespace {
// The p90 of the tercile `predicted_s` falls in (the first below it, the last above it), or
// `all` without terciles or time.
double tercile_p90(const std::vector<std::pair<double, double>>& by, double predicted_s, double all) {
  if (predicted_s <= 0 || by.empty()) return all;
  for (const auto& [upper, p90] : by)
    if (predicted_s <= upper) return p90;
  return by.back().second;
}
}  // namespace

double holdout_summary::p90_at(double predicted_s, bool decode) const {
  return decode ? tercile_p90(decode_p90_by_time, predicted_s, decode_p90_abs_pct_error)
                : tercile_p90(p90_by_time, predicted_s, p90_abs_pct_error);
}

double axis_coverage::ends_p90_at(double predicted_s) const {
  return tercile_p90(p90_by_time, predicted_s, p90_abs_pct_error);
}

double axis_coverage::inner_p90_at(double predicted_s) const {
  return tercile_p90(inner_p90_by_time, predicted_s, inner_p90_abs_pct_error);
}

double holdout_summary::reach_along(std::string_view axis, bool decode) const {
  for (const auto& [a, d] : decode ? decode_reach : reach)
    if (a == axis) return d;
  return 0.0;
}

const efficiency_curve* calibration::curve(modsim::op op, dtype t) const {
  for (const auto& c : curves)
    if (c.op == op && c.type == t) return &c;
  return nullptr;
}

const stand_in_check* calibration::stand_in_check_for(modsim::op op, modsim::op as) const {
  const stand_in_check* widest = nullptr;
  for (const stand_in_check& x : stand_in_checks) {
    if (x.as != as) continue;
    if (x.op == op) return &x;
    if (!widest || x.p90_abs_pct_error > widest->p90_abs_pct_error) widest = &x;
  }
  return widest;
}

double calibration::weight_rate(const decode_fit& d, double rows) {
  if (d.weight_log2_rows.empty()) return 0.0;
  const std::vector<double> h = hats(d.weight_log2_rows, std::log2(std::max(1.0, rows)));
  double w = 0;
  for (std::size_t k = 0; k < h.size(); ++k) w += h[k] * d.weight_s_per_byte[k];
  return w;
}

const decode_fit* calibration::decode_for(dtype t) const {
  for (const auto& d : decode)
    if (d.type == t) return &d;
  return nullptr;
}

namespace {

using reader = json_reader;

// A curve's op: a kernel or model op of the op table (not a block, a decode step or a training block).
modsim::op curve_op(const std::string& name, const std::string& file, const std::string& key) {
  const std::optional<modsim::op> o = find_op(name);
  if (!o || is_block(*o) || is_decode(*o) || is_train(*o) || is_optimizer(*o))
    throw input_error(file, key, "unknown op '" + name + "'");
  return *o;
}

// An array `key` of {x_key: x, y_key: y >= 0} objects in ascending order of x, appended to xs
// and ys; `unordered` is the reason given for an x not above the one before.
void parse_points(reader& r, std::string_view key, const char* x_key, const char* y_key, const char* unordered,
                  std::vector<double>& xs, std::vector<double>& ys) {
  const json::array& points = r.get_array(key);
  for (std::size_t i = 0; i < points.size(); ++i) {
    reader k(points[i], r.file(), r.key_path(key) + "[" + std::to_string(i) + "]");
    const double x = k.get_number(x_key);
    const double y = k.get_number(y_key, 0.0);
    k.finish();
    if (!xs.empty() && x <= xs.back()) throw input_error(r.file(), k.key_path(x_key), unordered);
    xs.push_back(x);
    ys.push_back(y);
  }
}

// The same written: [{x_key: x, y_key: y}, ...].
json::array points_json(const std::vector<double>& xs, const std::vector<double>& ys, const char* x_key,
                        const char* y_key) {
  json::array a;
  for (std::size_t i = 0; i < xs.size(); ++i) a.push_back(json::object{{x_key, xs[i]}, {y_key, ys[i]}});
  return a;
}

efficiency_curve parse_curve(const json::value& v, const std::string& file, const std::string& path) {
  reader r(v, file, path);
  efficiency_curve c;
  c.op = curve_op(r.get_string("op"), file, r.key_path("op"));
  c.type = parse_dtype(r.get_string("dtype"), file, r.key_path("dtype"));
  c.fixed_s = r.get_number("fixed_s", 0.0);
  c.samples = r.get_int("samples", 0, std::numeric_limits<int>::max());
  c.rms_rel_error = r.get_number("rms_rel_error", 0.0);
  if (r.get_array("knots").empty()) throw input_error(file, r.key_path("knots"), "needs at least one knot");
  parse_points(r, "knots", "log10_work", "inv_efficiency", "knots must be in ascending order of log10_work",
               c.log10_work, c.inv_efficiency);
  if (r.find("rows") != nullptr)
    parse_points(r, "rows", "log2_rows", "factor", "must be in ascending order", c.log2_rows, c.rows_factor);
  if (const auto zero = std::find_if(c.rows_factor.begin(), c.rows_factor.end(), [](double f) { return !(f > 0); });
      zero != c.rows_factor.end())
    throw input_error(file, r.key_path("rows") + "[" + std::to_string(zero - c.rows_factor.begin()) + "].factor",
                      "must be > 0");
  if (r.find("leftover_rows") != nullptr) {
    const json::array& left = r.get_array("leftover_rows");
    if (left.size() != k_row_group - 1)
      throw input_error(file, r.key_path("leftover_rows"),
                        "expected " + std::to_string(k_row_group - 1) + " numbers (1, 2 and 3 rows left over)");
    for (std::size_t i = 0; i < left.size(); ++i) {
      if (!left[i].is_number())
        throw input_error(file, r.key_path("leftover_rows") + "[" + std::to_string(i) + "]", "expected a number");
      c.leftover_rows.push_back(left[i].to_number<double>());
      if (!(c.leftover_rows.back() > -1.0 - double(i)))  // the row group never costs less than no rows
        throw input_error(file, r.key_path("leftover_rows") + "[" + std::to_string(i) + "]",
                          "must be above -" + std::to_string(i + 1) + " (the rows left over)");
    }
  }
  r.finish();
  return c;
}

// A number in [lo, 1].
double get_fraction(reader& r, std::string_view key, double lo) {
  const double v = r.get_number(key, lo);
  if (v > 1) throw input_error(r.file(), r.key_path(key), "must be <= 1, got " + fmt_num(v));
  return v;
}

kernel_params parse_kernels(const json::value& v, const std::string& file, const std::string& path,
                            std::vector<dtype>& dtypes) {
  reader r(v, file, path);
  kernel_params p;
  p.event_s = r.get_number("event_s", 0.0);
  p.host_s = r.get_number("host_s", 0.0);
  p.gap_s = r.get_number("gap_s", 0.0);
  p.warm_fraction = get_fraction(r, "warm_fraction", 0.0);
  p.max_wave_factor = r.get_non_negative("max_wave_factor", 0.0);
  const json::array& types = r.get_array("dtypes");
  if (types.empty()) throw input_error(file, r.key_path("dtypes"), "needs at least one dtype");
  for (std::size_t i = 0; i < types.size(); ++i) {
    const std::string key = r.key_path("dtypes") + "[" + std::to_string(i) + "]";
    if (!types[i].is_string()) throw input_error(file, key, "expected a string");
    dtypes.push_back(parse_dtype(std::string(types[i].as_string()), file, key));
  }
  const json::array& classes = r.get_array("classes");
  for (std::size_t i = 0; i < classes.size(); ++i) {
    reader c(classes[i], file, r.key_path("classes") + "[" + std::to_string(i) + "]");
    kernel_kind k;
    try {
      k = kernel_kind_of(c.get_string("kind"));
    } catch (const error& e) {
      throw input_error(file, c.key_path("kind"), e.what());
    }
    kernel_class_params& cp = p.of(k);
    cp.floor_s = c.get_number("floor_s", 0.0);
    cp.compute_efficiency = get_fraction(c, "compute_efficiency", 1e-9);
    cp.bandwidth_efficiency = get_fraction(c, "bandwidth_efficiency", 1e-9);
    cp.per_item_s = c.get_number("per_item_s", 0.0);
    c.finish();
  }
  r.finish();
  return p;
}

json::object kernels_json(const kernel_params& p, const std::vector<dtype>& dtypes) {
  json::object o;
  o["event_s"] = p.event_s;
  o["host_s"] = p.host_s;
  o["gap_s"] = p.gap_s;
  o["warm_fraction"] = p.warm_fraction;
  if (p.max_wave_factor > 0) o["max_wave_factor"] = p.max_wave_factor;
  json::array types;
  for (dtype t : dtypes) types.emplace_back(to_string(t));
  o["dtypes"] = std::move(types);
  json::array classes;
  for (int i = 0; i < kernel_kind_count; ++i) {
    const kernel_class_params& c = p.kinds[static_cast<std::size_t>(i)];
    json::object co;
    co["kind"] = to_string(static_cast<kernel_kind>(i));
    co["floor_s"] = c.floor_s;
    co["compute_efficiency"] = c.compute_efficiency;
    co["bandwidth_efficiency"] = c.bandwidth_efficiency;
    co["per_item_s"] = c.per_item_s;
    classes.push_back(std::move(co));
  }
  o["classes"] = std::move(classes);
  return o;
}

// An array of [upper_s, p90] under `key` (absent: left empty).
void parse_terciles(reader& r, const char* key, std::vector<std::pair<double, double>>& into) {
  const json::value* by = r.find(key);
  if (!by) return;
  const std::string at = r.key_path(key);
  if (!by->is_array()) throw input_error(r.file(), at, "expected an array of [upper_s, p90]");
  for (const json::value& e : by->as_array()) {
    if (!e.is_array() || e.as_array().size() != 2 || !e.as_array()[0].is_number() || !e.as_array()[1].is_number())
      throw input_error(r.file(), at, "expected an array of [upper_s, p90]");
    into.emplace_back(e.as_array()[0].to_number<double>(), e.as_array()[1].to_number<double>());
  }
}

// The same written under `key` (nothing where there are no terciles).
void terciles_json(json::object& o, const char* key, const std::vector<std::pair<double, double>>& from) {
  if (from.empty()) return;
  json::array by;
  for (const auto& [upper, p90] : from) by.push_back(json::array{upper, p90});
  o[key] = std::move(by);
}

// The "by_time" and "decode_by_time" arrays of [upper_s, p90] (either may be absent).
void parse_by_time(reader& r, std::vector<std::pair<double, double>>& by_time,
                   std::vector<std::pair<double, double>>& decode_by_time) {
  parse_terciles(r, "by_time", by_time);
  parse_terciles(r, "decode_by_time", decode_by_time);
}

void by_time_json(json::object& o, const std::vector<std::pair<double, double>>& by_time,
                  const std::vector<std::pair<double, double>>& decode_by_time) {
  terciles_json(o, "by_time", by_time);
  terciles_json(o, "decode_by_time", decode_by_time);
}

template <class S, std::size_t N>
void read_errors(reader& r, S& s, const error_field<S> (&fields)[N]) {
  for (const error_field<S>& f : fields) s.*f.value = r.get_number(f.key, 0.0);
}

template <class S, std::size_t N>
void write_errors(json::object& o, const S& s, const error_field<S> (&fields)[N]) {
  for (const error_field<S>& f : fields) o[f.key] = s.*f.value;
}

cross_validation_summary parse_cv(const json::value& v, const std::string& file, const std::string& path) {
  reader r(v, file, path);
  cross_validation_summary c;
  c.folds = r.get_int("folds", 2, 1000);
  c.blocks = r.get_int("blocks", 0, std::numeric_limits<int>::max());
  read_errors(r, c, k_cv_block_errors);
  c.ops = r.get_int("ops", 0, std::numeric_limits<int>::max());
  read_errors(r, c, k_cv_op_errors);
  parse_by_time(r, c.p90_by_time, c.decode_p90_by_time);
  r.finish();
  return c;
}

holdout_summary parse_holdout(const json::value& v, const std::string& file, const std::string& path) {
  reader r(v, file, path);
  holdout_summary h;
  for (const json::value& f : r.get_array("files")) h.files.push_back(r.string(f, "files"));
  const int most = std::numeric_limits<int>::max();
  h.blocks = r.get_int("blocks", 0, most);
  read_errors(r, h, k_holdout_block_errors);
  h.decode_rows = r.get_int("decode_blocks", 0, most);
  read_errors(r, h, k_holdout_decode_errors);
  parse_by_time(r, h.p90_by_time, h.decode_p90_by_time);
  for (const auto& [key, into] : {std::pair{"reach", &h.reach}, std::pair{"decode_reach", &h.decode_reach}}) {
    const json::value* m = r.find(key);
    if (!m) continue;
    if (!m->is_object()) throw input_error(file, r.key_path(key), "expected an object {axis: log2 distance}");
    for (const auto& kv : m->as_object()) {
      const std::string at = r.key_path(key) + "." + std::string(kv.key());
      if (!find_cv_axis(kv.key())) throw input_error(file, at, "unknown axis");
      if (!kv.value().is_number() || kv.value().to_number<double>() < 0)
        throw input_error(file, at, "expected a number >= 0");
      into->emplace_back(std::string(kv.key()), kv.value().to_number<double>());
    }
  }
  r.finish();
  return h;
}

json::object cv_json(const cross_validation_summary& c) {
  json::object o;
  o["folds"] = c.folds;
  o["blocks"] = c.blocks;
  write_errors(o, c, k_cv_block_errors);
  o["ops"] = c.ops;
  write_errors(o, c, k_cv_op_errors);
  by_time_json(o, c.p90_by_time, c.decode_p90_by_time);
  return o;
}

json::object holdout_json(const holdout_summary& h) {
  json::object o;
  json::array files;
  for (const auto& f : h.files) files.emplace_back(f);
  o["files"] = std::move(files);
  o["blocks"] = h.blocks;
  write_errors(o, h, k_holdout_block_errors);
  o["decode_blocks"] = h.decode_rows;
  write_errors(o, h, k_holdout_decode_errors);
  by_time_json(o, h.p90_by_time, h.decode_p90_by_time);
  for (const auto& [key, from] : {std::pair{"reach", &h.reach}, std::pair{"decode_reach", &h.decode_reach}}) {
    json::object m;
    for (const auto& [axis, d] : *from) m[axis] = d;
    o[key] = std::move(m);
  }
  return o;
}

axis_coverage parse_coverage(const json::value& v, const std::string& file, const std::string& path) {
  reader r(v, file, path);
  axis_coverage c;
  c.axis = r.get_string("axis");
  c.min = r.get_number("min", 0.0);
  c.max = r.get_number("max", 0.0);
  c.blocks = r.get_int("blocks", 0, std::numeric_limits<int>::max());
  c.p90_abs_pct_error = r.get_number("p90_abs_pct_error", 0.0);
  c.max_distance = r.get_number("max_distance", 0.0);
  const auto held_out = [&](const char* blocks_key, const char* p90_key, int& blocks, double& p90) {
    if (r.find(blocks_key) == nullptr) return;
    blocks = r.get_int(blocks_key, 0, std::numeric_limits<int>::max());
    p90 = r.get_number(p90_key, 0.0);
  };
  held_out("decode_blocks", "decode_p90_abs_pct_error", c.decode_rows, c.decode_p90_abs_pct_error);
  held_out("inner_blocks", "inner_p90_abs_pct_error", c.inner_blocks, c.inner_p90_abs_pct_error);
  held_out("decode_inner_blocks", "decode_inner_p90_abs_pct_error", c.decode_inner_blocks,
           c.decode_inner_p90_abs_pct_error);
  const auto ascending = [&](const char* key, std::vector<double>& into) {
    if (r.find(key) == nullptr) return false;
    const json::array& values = r.get_array(key);
    for (std::size_t i = 0; i < values.size(); ++i) {
      const std::string at = path + "." + key + "[" + std::to_string(i) + "]";
      if (!values[i].is_number()) throw input_error(file, at, "expected a number");
      into.push_back(values[i].to_number<double>());
      if (i > 0 && !(into[i] > into[i - 1])) throw input_error(file, at, "values must ascend");
    }
    return true;
  };
  ascending("values", c.values);
  c.decode_values_recorded = ascending("decode_values", c.decode_values);
  parse_terciles(r, "by_time", c.p90_by_time);
  parse_terciles(r, "inner_by_time", c.inner_p90_by_time);
  r.finish();
  if (c.max < c.min) throw input_error(file, path + ".max", "is below min");
  return c;
}

json::object coverage_json(const axis_coverage& c) {
  json::object o;
  o["axis"] = c.axis;
  o["min"] = c.min;
  o["max"] = c.max;
  o["blocks"] = c.blocks;
  o["p90_abs_pct_error"] = c.p90_abs_pct_error;
  o["max_distance"] = c.max_distance;
  o["decode_blocks"] = c.decode_rows;
  o["decode_p90_abs_pct_error"] = c.decode_p90_abs_pct_error;
  o["inner_blocks"] = c.inner_blocks;
  o["inner_p90_abs_pct_error"] = c.inner_p90_abs_pct_error;
  o["decode_inner_blocks"] = c.decode_inner_blocks;
  o["decode_inner_p90_abs_pct_error"] = c.decode_inner_p90_abs_pct_error;
  o["values"] = json::array(c.values.begin(), c.values.end());
  if (c.decode_values_recorded) o["decode_values"] = json::array(c.decode_values.begin(), c.decode_values.end());
  terciles_json(o, "by_time", c.p90_by_time);
  terciles_json(o, "inner_by_time", c.inner_p90_by_time);
  return o;
}

json::object curve_json(const efficiency_curve& c) {
  json::object o;
  o["op"] = to_string(c.op);
  o["dtype"] = to_string(c.type);
  o["fixed_s"] = c.fixed_s;
  o["samples"] = c.samples;
  o["rms_rel_error"] = c.rms_rel_error;
  o["knots"] = points_json(c.log10_work, c.inv_efficiency, "log10_work", "inv_efficiency");
  if (!c.rows_factor.empty()) o["rows"] = points_json(c.log2_rows, c.rows_factor, "log2_rows", "factor");
  if (!c.leftover_rows.empty()) o["leftover_rows"] = json::array(c.leftover_rows.begin(), c.leftover_rows.end());
  return o;
}

// One decode fit of the record's "decode" array.
decode_fit parse_decode_fit(const json::value& v, const std::string& file, const std::string& path) {
  reader f(v, file, path);
  decode_fit x;
  x.type = parse_dtype(f.get_string("dtype"), file, f.key_path("dtype"));
  const json::array& knots = f.get_array("weight_knots");
  if (knots.empty()) throw input_error(file, f.key_path("weight_knots"), "needs at least one knot");
  for (std::size_t k = 0; k < knots.size(); ++k) {
    reader kr(knots[k], file, f.key_path("weight_knots") + "[" + std::to_string(k) + "]");
    x.weight_log2_rows.push_back(kr.get_number("log2_rows", 0.0));
    x.weight_s_per_byte.push_back(kr.get_number("s_per_byte", 0.0));
    kr.finish();
    if (k > 0 && !(x.weight_log2_rows[k] > x.weight_log2_rows[k - 1]))
      throw input_error(file, f.key_path("weight_knots"), "knots must ascend in log2_rows");
  }
  x.kv_s_per_byte = f.get_number("kv_s_per_byte", 0.0);
  x.s_per_matmul_flop = f.get_number("s_per_matmul_flop", 0.0);
  x.s_per_other_flop = f.get_number("s_per_other_flop", 0.0);
  x.kernel_s = f.get_number("kernel_s", 0.0);
  x.sync_s = f.get_number("sync_s", 0.0);
  if (f.find("model_s_per_byte") != nullptr) {
    x.model_s_per_byte = f.get_number("model_s_per_byte");
    const double slowest_free =
        -*std::min_element(x.weight_s_per_byte.begin(), x.weight_s_per_byte.end());  // the knots are non-empty
    if (x.model_s_per_byte <= slowest_free) {
      throw input_error(file, f.key_path("model_s_per_byte"),
                        "must be above minus the smallest weight_knots s_per_byte (" + std::to_string(slowest_free) +
                            "): a whole step's weight reads cannot be free");
    }
  }
  x.rows = f.get_int("rows", 0, std::numeric_limits<int>::max());
  x.rms_rel_error = f.get_number("rms_rel_error", 0.0);
  f.finish();
  return x;
}

// One element of the record's "stand_in_checks" array.
stand_in_check parse_stand_in_check(const json::value& v, const std::string& file, const std::string& path) {
  reader f(v, file, path);
  stand_in_check x;
  for (const auto& [key, into] : {std::pair{"op", &x.op}, std::pair{"as", &x.as}}) {
    const std::string name = f.get_string(key);
    const std::optional<modsim::op> o = find_op(name);
    if (!o) throw input_error(file, f.key_path(key), "unknown op '" + name + "'");
    *into = *o;
  }
  x.type = parse_dtype(f.get_string("dtype"), file, f.key_path("dtype"));
  x.rows = f.get_int("rows", 1, std::numeric_limits<int>::max());
  x.median_abs_pct_error = f.get_number("median_abs_pct_error", 0.0);
  x.p90_abs_pct_error = f.get_number("p90_abs_pct_error", 0.0);
  f.finish();
  return x;
}

// A fit's checks and keys (backward_fit, optimizer_fit): "cv" and "holdout", both optional,
// and "keys" (sorted here).
template <class Fit>
void parse_fit_checks(reader& f, Fit& x, const std::string& file) {
  if (f.find("cv") != nullptr) {
    reader cv(f.require("cv"), file, f.key_path("cv"));
    x.cv_folds = cv.get_int("folds", 0, std::numeric_limits<int>::max());
    x.cv_rows = cv.get_int("rows", 0, std::numeric_limits<int>::max());
    x.cv_median_abs_pct_error = cv.get_non_negative("median_abs_pct_error", 0.0);
    x.cv_p90_abs_pct_error = cv.get_non_negative("p90_abs_pct_error", 0.0);
    cv.finish();
  }
  if (f.find("holdout") != nullptr) {
    reader h(f.require("holdout"), file, f.key_path("holdout"));
    x.holdout_rows = h.get_int("rows", 0, std::numeric_limits<int>::max());
    x.holdout_median_abs_pct_error = h.get_non_negative("median_abs_pct_error", 0.0);
    x.holdout_p90_abs_pct_error = h.get_non_negative("p90_abs_pct_error", 0.0);
    h.finish();
  }
  for (const auto& e : f.get_array("keys")) {
    if (!e.is_string()) throw input_error(file, f.key_path("keys"), "expected strings");
    x.keys.emplace_back(e.as_string());
  }
  std::sort(x.keys.begin(), x.keys.end());  // looked up by binary search
}

// The record's "optimizer" object.
optimizer_fit parse_optimizer_fit(const json::value& v, const std::string& file, const std::string& path) {
  reader f(v, file, path);
  optimizer_fit x;
  x.type = parse_dtype(f.get_string("dtype"), file, f.key_path("dtype"));
  f.find("source");  // a description in words; not read back
  const double rate = f.get_number("bytes_per_s", 0.0);
  if (!(rate > 0) || !std::isfinite(rate)) throw input_error(file, f.key_path("bytes_per_s"), "must be > 0");
  x.s_per_byte = 1.0 / rate;
  x.rows = f.get_int("rows", 1, std::numeric_limits<int>::max());
  x.rms_rel_error = f.get_non_negative("rms_rel_error", 0.0);
  parse_fit_checks(f, x, file);
  f.finish();
  return x;
}

// The record's "backward" object.
backward_fit parse_backward_fit(const json::value& v, const std::string& file, const std::string& path) {
  reader f(v, file, path);
  backward_fit x;
  x.type = parse_dtype(f.get_string("dtype"), file, f.key_path("dtype"));
  f.find("source");  // a description in words; not read back
  {
    reader k(f.require("factors"), file, f.key_path("factors"));
    for (const backward_class c : k_backward_classes)
      x.factor[static_cast<int>(c)] = k.get_non_negative(to_string(c), 1.0);
    k.finish();
  }
  x.rows = f.get_int("rows", 1, std::numeric_limits<int>::max());
  x.rms_rel_error = f.get_non_negative("rms_rel_error", 0.0);
  parse_fit_checks(f, x, file);
  f.finish();
  return x;
}

}  // namespace

calibration parse_calibration(std::string_view json_text, const std::string& file) {
  json::value v;
  try {
    v = json::parse(json_text);
  } catch (const std::exception& e) {
    throw input_error(file, "calibration", std::string("malformed JSON: ") + e.what());
  }
  reader r(v, file, "calibration");
  calibration c;
  c.format = r.get_int("format", 1, 2);
  c.date = r.get_string("date");
  c.device = r.get_string("device");
  if (const std::string b = r.get_string("backend"); !b.empty())
    c.backend = parse_backend(b, file, r.key_path("backend"));
  r.find("model");  // a description in words; not read back
  const json::array& sources = r.get_array("measurements");
  for (std::size_t i = 0; i < sources.size(); ++i) {
    reader s(sources[i], file, r.key_path("measurements") + "[" + std::to_string(i) + "]");
    calibration_source src;
    src.file = s.get_string("file");
    src.rows = s.get_int("rows", 0, std::numeric_limits<int>::max());
    src.used_rows = s.get_int("used_rows", 0, std::numeric_limits<int>::max());
    s.finish();
    c.sources.push_back(std::move(src));
  }
  if (const json::value* k = r.find("kernels"))
    c.kernels = parse_kernels(*k, file, r.key_path("kernels"), c.kernel_dtypes);
  if (r.find("attention") != nullptr)
    c.attention = parse_attention_impl(r.get_string("attention"), r.key_path("attention"));
  // The GEMM tiling the kernel model was fitted with; absent (calibrations written before the
  // tile chooser): one 128×128 tile for every shape.
  if (r.find("gemm_tiles") != nullptr) {
    const gemm_tiling m = parse_gemm_tiling(r.get_string("gemm_tiles"), file, r.key_path("gemm_tiles"));
    if (!c.kernels) throw input_error(file, r.key_path("gemm_tiles"), "needs a kernels model");
    c.kernels->gemm_tiles = m;
  }
  if (const json::value* cv = r.find("cross_validation"))
    c.cross_validation = parse_cv(*cv, file, r.key_path("cross_validation"));
  if (const json::value* cov = r.find("coverage")) {
    if (!cov->is_array()) throw input_error(file, r.key_path("coverage"), "expected an array");
    for (std::size_t i = 0; i < cov->as_array().size(); ++i)
      c.coverage.push_back(
          parse_coverage(cov->as_array()[i], file, r.key_path("coverage") + "[" + std::to_string(i) + "]"));
  }
  if (const json::value* h = r.find("holdout")) c.holdout = parse_holdout(*h, file, r.key_path("holdout"));
  if (r.find("anchor") != nullptr) {
    reader a(r.require("anchor"), file, r.key_path("anchor"));
    c.anchor_reference_s = a.get_positive("reference_s");
    c.anchor_rows = a.get_int("rows", 0, std::numeric_limits<int>::max());
    c.anchor_elasticity = a.get_number("elasticity", 0.0);
    if (c.anchor_elasticity > 2) throw input_error(file, a.key_path("elasticity"), "must be from 0 to 2");
    if (a.has("slow_limit")) {
      c.anchor_slow_limit = a.get_number("slow_limit", 1.0);
      c.anchor_slow_left_out = a.get_int("slow_left_out", 0, std::numeric_limits<int>::max());
    }
    a.finish();
  }
  if (const json::value* d = r.find("decode")) {
    if (!d->is_array()) throw input_error(file, r.key_path("decode"), "expected an array");
    for (std::size_t i = 0; i < d->as_array().size(); ++i) {
      c.decode.push_back(
          parse_decode_fit(d->as_array()[i], file, r.key_path("decode") + "[" + std::to_string(i) + "]"));
    }
  }
  if (const json::value* k = r.find("decode_keys")) {
    if (!k->is_array()) throw input_error(file, r.key_path("decode_keys"), "expected an array of strings");
    for (const auto& e : k->as_array()) {
      if (!e.is_string()) throw input_error(file, r.key_path("decode_keys"), "expected strings");
      c.decode_keys.emplace_back(e.as_string());
    }
  }
  if (const json::value* k = r.find("stand_in_checks")) {
    if (!k->is_array()) throw input_error(file, r.key_path("stand_in_checks"), "expected an array");
    for (std::size_t i = 0; i < k->as_array().size(); ++i) {
      c.stand_in_checks.push_back(
          parse_stand_in_check(k->as_array()[i], file, r.key_path("stand_in_checks") + "[" + std::to_string(i) + "]"));
    }
  }
  if (const json::value* b = r.find("backward")) c.backward = parse_backward_fit(*b, file, r.key_path("backward"));
  if (const json::value* o = r.find("optimizer")) c.optimizer = parse_optimizer_fit(*o, file, r.key_path("optimizer"));
  const json::array& curves = r.get_array("curves");
  if (curves.empty() && !c.kernels && c.decode.empty())
    throw input_error(file, r.key_path("curves"), "needs at least one fitted op (or a kernels model, or a decode fit)");
  for (std::size_t i = 0; i < curves.size(); ++i) {
    c.curves.push_back(parse_curve(curves[i], file, r.key_path("curves") + "[" + std::to_string(i) + "]"));
    for (std::size_t j = 0; j < i; ++j)
      if (c.curves[j].op == c.curves[i].op && c.curves[j].type == c.curves[i].type)
        throw input_error(
            file, r.key_path("curves") + "[" + std::to_string(i) + "]",
            "op '" + std::string(to_string(c.curves[i].op)) + "' (" + to_string(c.curves[i].type) + ") appears twice");
  }
  {
    reader l(r.require("launch"), file, r.key_path("launch"));
    c.launch_s = l.get_number("launch_s", 0.0);
    c.in_layer_s_per_byte = l.get_number("in_layer_s_per_byte", 0.0);
    c.launch_source = l.get_string("source");
    c.launch_blocks = l.get_int("blocks", 0, std::numeric_limits<int>::max());
    l.finish();
  }
  for (const auto& k : r.get_array("block_keys")) {
    if (!k.is_string()) throw input_error(file, r.key_path("block_keys"), "expected strings");
    c.block_keys.emplace_back(k.as_string());
  }
  {
    reader p(r.require("roofline"), file, r.key_path("roofline"));
    reader pm(p.require("peak_matmul_flops"), file, p.key_path("peak_matmul_flops"));
    c.peak_matmul_fp32 = pm.get_number("fp32", 0.0);
    c.peak_matmul_bf16 = pm.get_number("bf16", 0.0);
    c.peak_matmul_fp16 = pm.get_number("fp16", 0.0);
    pm.finish();
    reader pv(p.require("peak_vector_flops"), file, p.key_path("peak_vector_flops"));
    c.peak_vector_fp32 = pv.get_number("fp32", 0.0);
    c.peak_vector_bf16 = pv.get_number("bf16", 0.0);
    c.peak_vector_fp16 = pv.get_number("fp16", 0.0);
    pv.finish();
    c.memory_bandwidth_bytes_s = p.get_number("memory_bandwidth_bytes_s", 0.0);
    p.finish();
  }
  r.finish();
  return c;
}

namespace {
// What parse_fit_checks reads: "cv" and "holdout" where there are any, and "keys".
template <class Fit>
void write_fit_checks(json::object& f, const Fit& x) {
  if (x.cv_folds > 0)
    f["cv"] = json::object{{"folds", x.cv_folds},
                           {"rows", x.cv_rows},
                           {"median_abs_pct_error", x.cv_median_abs_pct_error},
                           {"p90_abs_pct_error", x.cv_p90_abs_pct_error}};
  if (x.holdout_rows > 0)
    f["holdout"] = json::object{{"rows", x.holdout_rows},
                                {"median_abs_pct_error", x.holdout_median_abs_pct_error},
                                {"p90_abs_pct_error", x.holdout_p90_abs_pct_error}};
  json::array keys;
  for (const auto& k : x.keys) keys.emplace_back(k);
  f["keys"] = std::move(keys);
}

// The record's "optimizer" object (parse_optimizer_fit reads it back).
json::object optimizer_fit_json(const optimizer_fit& x) {
  json::object f;
  f["dtype"] = to_string(x.type);
  f["source"] =
      "fitted on measured AdamW steps (op adamw: one layer's parameters): time = bytes (28 a parameter) / "
      "bytes_per_s, least squares on the seconds (the largest rows weigh most)";
  f["bytes_per_s"] = x.bytes_per_s();
  f["rows"] = x.rows;
  f["rms_rel_error"] = x.rms_rel_error;
  write_fit_checks(f, x);
  return f;
}
}  // namespace

std::string calibration_to_json(const calibration& c) {
  json::object o;
  o["format"] = c.format;
  o["model"] =
      c.kernels
          ? "GPU kernel-sequence model: each op is the kernels the CUDA backend launches, each kernel floor_s + a "
            "smooth max of compute (wave-quantised, compute_efficiency x peak) and memory (bandwidth_efficiency x "
            "bandwidth) or per_item_s x items; a sequence is a host queue (host_s per kernel) feeding a device queue "
            "(gap_s between kernels), warm_fraction of inputs served from L2, event_s per timed region "
            "(sim/cost/kernel_model.hpp)"
          : "per (op, dtype): time = fixed_s + roofline_s * g(log10(roofline_s)), g = 1/efficiency piecewise "
            "linear between knots, clamped beyond; plus bytes * in_layer_s_per_byte inside a layer; plus launch_s "
            "per kernel (sim/cost/cost.hpp)";
  o["date"] = c.date;
  o["device"] = c.device;
  o["backend"] = to_string(c.backend);
  json::array sources;
  for (const auto& s : c.sources) {
    json::object so;
    so["file"] = s.file;
    so["rows"] = s.rows;
    so["used_rows"] = s.used_rows;
    sources.push_back(std::move(so));
  }
  o["measurements"] = std::move(sources);
  json::array curves;
  for (const auto& cv : c.curves) curves.push_back(curve_json(cv));
  o["curves"] = std::move(curves);
  if (c.kernels) o["kernels"] = kernels_json(*c.kernels, c.kernel_dtypes);
  if (c.kernels || c.attention != attention_impl::unfused) o["attention"] = to_string(c.attention);
  if (c.kernels && c.kernels->gemm_tiles != gemm_tiling::fixed128) o["gemm_tiles"] = to_string(c.kernels->gemm_tiles);
  if (c.cross_validation) o["cross_validation"] = cv_json(*c.cross_validation);
  if (!c.coverage.empty()) {
    json::array cov;
    for (const axis_coverage& a : c.coverage) cov.push_back(coverage_json(a));
    o["coverage"] = std::move(cov);
  }
  if (c.holdout) o["holdout"] = holdout_json(*c.holdout);
  if (c.anchor_reference_s > 0) {
    json::object a = {
        {"reference_s", c.anchor_reference_s}, {"rows", c.anchor_rows}, {"elasticity", c.anchor_elasticity}};
    if (c.anchor_slow_limit > 0) {
      a["slow_limit"] = c.anchor_slow_limit;
      a["slow_left_out"] = c.anchor_slow_left_out;
    }
    o["anchor"] = std::move(a);
  }
  if (!c.decode.empty()) {
    json::array d;
    for (const decode_fit& x : c.decode) {
      json::object f;
      f["dtype"] = to_string(x.type);
      f["weight_knots"] = points_json(x.weight_log2_rows, x.weight_s_per_byte, "log2_rows", "s_per_byte");
      f["kv_s_per_byte"] = x.kv_s_per_byte;
      f["s_per_matmul_flop"] = x.s_per_matmul_flop;
      f["s_per_other_flop"] = x.s_per_other_flop;
      f["kernel_s"] = x.kernel_s;
      f["sync_s"] = x.sync_s;
      f["model_s_per_byte"] = x.model_s_per_byte;
      f["rows"] = x.rows;
      f["rms_rel_error"] = x.rms_rel_error;
      d.push_back(std::move(f));
    }
    o["decode"] = std::move(d);
    json::array keys;
    for (const auto& k : c.decode_keys) keys.emplace_back(k);
    o["decode_keys"] = std::move(keys);
  }
  if (!c.stand_in_checks.empty()) {
    json::array checks;
    for (const stand_in_check& x : c.stand_in_checks)
      checks.push_back(json::object{{"op", to_string(x.op)},
                                    {"as", to_string(x.as)},
                                    {"dtype", to_string(x.type)},
                                    {"rows", x.rows},
                                    {"median_abs_pct_error", x.median_abs_pct_error},
                                    {"p90_abs_pct_error", x.p90_abs_pct_error}});
    o["stand_in_checks"] = std::move(checks);
  }
  if (c.backward) {
    const backward_fit& x = *c.backward;
    json::object f;
    f["dtype"] = to_string(x.type);
    f["source"] =
        "fitted on measured training rows (one layer's forward + backward): measured - calibrated forward, "
        "recomputation and launches = sum over the backward ops of factor(class) x the rule (the forward's "
        "calibrated efficiency applied to the backward's FLOPs and bytes)";
    json::object factors;
    for (const backward_class k : k_backward_classes) factors[to_string(k)] = x.factor_of(k);
    f["factors"] = std::move(factors);
    f["rows"] = x.rows;
    f["rms_rel_error"] = x.rms_rel_error;
    write_fit_checks(f, x);
    o["backward"] = std::move(f);
  }
  if (c.optimizer) o["optimizer"] = optimizer_fit_json(*c.optimizer);
  json::object launch;
  launch["launch_s"] = c.launch_s;
  launch["in_layer_s_per_byte"] = c.in_layer_s_per_byte;
  launch["source"] = c.launch_source;
  launch["blocks"] = c.launch_blocks;
  o["launch"] = std::move(launch);
  json::array keys;
  for (const auto& k : c.block_keys) keys.emplace_back(k);
  o["block_keys"] = std::move(keys);
  json::object roof, pm, pv;
  pm["fp32"] = c.peak_matmul_fp32;
  pm["bf16"] = c.peak_matmul_bf16;
  pm["fp16"] = c.peak_matmul_fp16;
  pv["fp32"] = c.peak_vector_fp32;
  pv["bf16"] = c.peak_vector_bf16;
  pv["fp16"] = c.peak_vector_fp16;
  roof["peak_matmul_flops"] = std::move(pm);
  roof["peak_vector_flops"] = std::move(pv);
  roof["memory_bandwidth_bytes_s"] = c.memory_bandwidth_bytes_s;
  o["roofline"] = std::move(roof);
  return json::serialize(o);
}

}  // namespace modsim::sim
