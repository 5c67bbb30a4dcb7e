// Collectives over G GPUs (sim/parallel/comm.hpp): the formulas of the header, one function each.
#include "sim/parallel/comm.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <limits>

#include <fmt/format.h>

#include "core/error.hpp"
#include "sim/common/json_reader.hpp"

namespace modsim::sim {

const char* to_string(collective c) {
  switch (c) {
    case collective::all_reduce:
      return "all_reduce";
    case collective::all_gather:
      return "all_gather";
    case collective::reduce_scatter:
      return "reduce_scatter";
    case collective::all_to_all:
      return "all_to_all";
    case collective::send_recv:
      return "send_recv";
  }
  return "?";
}

const char* to_string(comm_algorithm a) {
  switch (a) {
    case comm_algorithm::ring:
      return "ring";
    case comm_algorithm::tree:
      return "tree";
    case comm_algorithm::direct:
      return "direct";
    case comm_algorithm::fitted:
      return "fitted";
  }
  return "?";
}

const char* to_string(link_class l) { return l == link_class::intra_node ? "intra_node" : "inter_node"; }

const char* collective_names() { return "all_reduce, all_gather, reduce_scatter, all_to_all, send_recv"; }

std::optional<collective> find_collective(std::string_view t) {
  if (t == "all_reduce") return collective::all_reduce;
  if (t == "all_gather") return collective::all_gather;
  if (t == "reduce_scatter") return collective::reduce_scatter;
  if (t == "all_to_all" || t == "alltoall") return collective::all_to_all;
  if (t == "send_recv" || t == "sendrecv") return collective::send_recv;
  return std::nullopt;
}

std::optional<comm_algorithm> find_comm_algorithm(std::string_view t) {
  if (t == "ring") return comm_algorithm::ring;
  if (t == "tree") return comm_algorithm::tree;
  if (t == "direct") return comm_algorithm::direct;
  if (t == "fitted") return comm_algorithm::fitted;
  return std::nullopt;
}

std::optional<link_class> find_link_class(std::string_view t) {
  if (t == "intra_node") return link_class::intra_node;
  if (t == "inter_node") return link_class::inter_node;
  return std::nullopt;
}

double busbw_factor(collective c, int gpus) {
  const double p = gpus;
  switch (c) {
    case collective::all_reduce:
      return 2.0 * (p - 1) / p;
    case collective::all_gather:
    case collective::reduce_scatter:
    case collective::all_to_all:
      return (p - 1) / p;
    case collective::send_recv:
      return 1.0;
  }
  return 1.0;
}

std::int64_t parse_bytes(std::string_view text, const std::string& key) {
  const std::string t(text);
  std::size_t i = 0;
  while (i < t.size() && std::isdigit(static_cast<unsigned char>(t[i]))) ++i;
  auto bad = [&](const std::string& why) {
    return input_error(
        "", key,
        "'" + t + "' " + why + " (a byte count: digits, optionally K, M, G or T = 1024, 1024^2, 1024^3, 1024^4)");
  };
  if (i == 0) throw bad("is not a byte count");
  std::int64_t unit = 1;
  if (i < t.size()) {
    if (i + 1 != t.size()) throw bad("has an unknown suffix");
    switch (std::toupper(static_cast<unsigned char>(t[i]))) {
      case 'K':
        unit = std::int64_t{1} << 10;
        break;
      case 'M':
        unit = std::int64_t{1} << 20;
        break;
      case 'G':
        unit = std::int64_t{1} << 30;
        break;
      case 'T':
        unit = std::int64_t{1} << 40;
        break;
      default:
        throw bad("has an unknown suffix");
    }
  }
  const std::string digits = t.substr(0, i);
  if (digits.size() > 18) throw bad("is too large");
  const std::int64_t v = std::strtoll(digits.c_str(), nullptr, 10);
  if (v > std::numeric_limits<std::int64_t>::max() / unit) throw bad("is too large");
  return v * unit;
}

interconnect_spec effective_interconnect(const hardware_spec& hw) {
  if (hw.interconnect) return *hw.interconnect;
  if (hw.interconnect_bytes_s > 0) {
    interconnect_spec ic;
    ic.gpus_per_node = 0;
    ic.intra_node.name = "interconnect_bytes_s";
    ic.intra_node.bytes_s = hw.interconnect_bytes_s;
    ic.intra_node.latency_s = 0;
    ic.source = "interconnect_bytes_s of " + hw.name;
    return ic;
  }
  throw input_error(hw.source_file.empty() ? hw.name : hw.source_file, "interconnect",
                    "this hardware has no interconnect (neither an interconnect object nor interconnect_bytes_s > 0)");
}

std::vector<comm_algorithm> algorithms_for(collective c) {
  switch (c) {
    case collective::all_reduce:
      return {comm_algorithm::ring, comm_algorithm::tree};
    case collective::all_gather:
    case collective::reduce_scatter:
      return {comm_algorithm::ring};
    case collective::all_to_all:
    case collective::send_recv:
      return {comm_algorithm::direct};
  }
  return {};
}

link_class link_for(int gpus, const interconnect_spec& ic) {
  return ic.gpus_per_node > 0 && gpus > ic.gpus_per_node ? link_class::inter_node : link_class::intra_node;
}

namespace {

double ceil_log2(int n) {
  int k = 0;
  while ((1 << k) < n) ++k;
  return k;
}

// Checks G against the interconnect; returns the inter-node link when G crosses nodes.
const link_spec* check_gpus(int gpus, const interconnect_spec& ic, const std::string& file) {
  if (gpus < 2) throw input_error("", "--gpus", "a collective needs at least 2 GPUs, got " + std::to_string(gpus));
  if (link_for(gpus, ic) == link_class::intra_node) return nullptr;
  const int g = ic.gpus_per_node;
  if (!ic.inter_node)
    throw input_error(file, "interconnect.inter_node",
                      "absent: this hardware describes one node of " + std::to_string(g) + " GPUs; --gpus " +
                          std::to_string(gpus) + " needs the inter-node link");
  if (gpus % g != 0)
    throw input_error("", "--gpus",
                      std::to_string(gpus) + " GPUs span nodes of " + std::to_string(g) +
                          " unevenly; give a multiple of " + std::to_string(g));
  return &*ic.inter_node;
}

}  // namespace

double collective_time(collective c, comm_algorithm a, std::int64_t bytes, int gpus, const interconnect_spec& ic,
                       const std::string& file) {
  const link_spec* inter = check_gpus(gpus, ic, file);
  const std::vector<comm_algorithm> ok = algorithms_for(c);
  if (std::find(ok.begin(), ok.end(), a) == ok.end()) {
    std::string names;
    for (comm_algorithm x : ok) names += (names.empty() ? "" : " or ") + std::string(to_string(x));
    throw input_error("", "--algorithm",
                      std::string(to_string(a)) + " does not apply to " + to_string(c) + " (it has " + names + ")");
  }
  const double N = static_cast<double>(bytes);
  const double p = gpus;
  const link_spec& in = ic.intra_node;
  // The ring's link: the slowest one it crosses.
  const double ring_alpha = inter ? std::max(in.latency_s, inter->latency_s) : in.latency_s;
  const double ring_bw = inter ? std::min(in.bytes_s, inter->bytes_s) : in.bytes_s;
  switch (c) {
    case collective::all_reduce:
      if (a == comm_algorithm::ring) return 2 * (p - 1) * ring_alpha + 2 * (p - 1) / p * N / ring_bw;
      if (!inter) return 2 * ceil_log2(gpus) * in.latency_s + 2 * N / in.bytes_s;
      {
        const double g = ic.gpus_per_node;
        const int nodes = gpus / ic.gpus_per_node;
        return 2 * ((g - 1) * in.latency_s + (g - 1) / g * N / in.bytes_s) + 2 * ceil_log2(nodes) * inter->latency_s +
               2 * (N / g) / inter->bytes_s;
      }
    case collective::all_gather:
    case collective::reduce_scatter:
      return (p - 1) * ring_alpha + (p - 1) / p * N / ring_bw;
    case collective::all_to_all:
      if (!inter) return (p - 1) * in.latency_s + (p - 1) / p * N / in.bytes_s;
      {
        const double g = ic.gpus_per_node;
        const double local = (g - 1) * in.latency_s + (g - 1) / p * N / in.bytes_s;
        const double remote = (p - g) * inter->latency_s + (p - g) / p * N / inter->bytes_s;
        return std::max(local, remote);
      }
    case collective::send_recv: {
      const link_spec& l = inter ? *inter : in;
      return l.latency_s + N / l.bytes_s;
    }
  }
  return 0;
}

const collective_fit* find_fit(const interconnect_spec& ic, collective c, link_class l, int gpus) {
  const collective_fit* best = nullptr;
  for (const collective_fit& f : ic.calibration) {
    if (f.collective != to_string(c) || f.link != to_string(l)) continue;
    if (!best || std::abs(f.gpus - gpus) < std::abs(best->gpus - gpus)) best = &f;
  }
  return best;
}

const collective_fit* fit_for(const interconnect_spec& ic, collective c, link_class l, int gpus) {
  if (const collective_fit* f = find_fit(ic, c, l, gpus)) return f;
  std::vector<collective> kin;
  switch (c) {
    case collective::all_to_all:
    case collective::send_recv:
      kin = {collective::all_gather, collective::reduce_scatter, collective::all_reduce};
      break;
    case collective::all_gather:
      kin = {collective::reduce_scatter, collective::all_reduce};
      break;
    case collective::reduce_scatter:
      kin = {collective::all_gather, collective::all_reduce};
      break;
    case collective::all_reduce:
      kin = {collective::reduce_scatter, collective::all_gather};
      break;
  }
  for (collective k : kin)
    if (const collective_fit* f = find_fit(ic, k, l, gpus)) return f;
  return nullptr;
}

double fitted_time(const collective_fit& f, collective c, std::int64_t bytes, int gpus) {
  double beta = 1.0 / f.bus_bytes_s;
  if (f.ramp_to_bytes > 0 && f.ramp_bus_bytes_s > 0 && bytes < f.ramp_to_bytes) {
    const double lo = std::log2(static_cast<double>(f.ramp_from_bytes));
    const double hi = std::log2(static_cast<double>(f.ramp_to_bytes));
    const double w = bytes <= f.ramp_from_bytes ? 0.0 : (std::log2(static_cast<double>(bytes)) - lo) / (hi - lo);
    beta = (1 - w) / f.ramp_bus_bytes_s + w / f.bus_bytes_s;
  }
  return f.alpha_s + static_cast<double>(bytes) * busbw_factor(c, gpus) * beta;
}

comm_prediction predict_collective(const hardware_spec& hw, const comm_request& r) {
  const interconnect_spec ic = effective_interconnect(hw);
  const std::string file = hw.source_file.empty() ? hw.name : hw.source_file;
  if (r.bytes < 0) throw input_error("", "--bytes", "must be >= 0");
  comm_prediction out;
  out.op = r.op;
  out.bytes = r.bytes;
  out.gpus = r.gpus;
  out.gpus_per_node = ic.gpus_per_node;
  out.link = link_for(r.gpus, ic);
  out.nodes = out.link == link_class::inter_node ? r.gpus / ic.gpus_per_node : 1;
  const link_spec* inter = check_gpus(r.gpus, ic, file);
  out.link_name = inter ? inter->name : ic.intra_node.name;
  if (ic.gpus_per_node == 0)
    out.notes.push_back("no interconnect object: interconnect_bytes_s is the one link, latency 0, no node boundary");

  for (comm_algorithm a : algorithms_for(r.op))
    out.analytic.push_back({a, collective_time(r.op, a, r.bytes, r.gpus, ic, file)});

  const collective_fit* fit = nullptr;
  if (!r.algorithm || *r.algorithm == comm_algorithm::fitted) fit = fit_for(ic, r.op, out.link, r.gpus);
  if (r.algorithm && *r.algorithm == comm_algorithm::fitted && !fit)
    throw input_error(file, "interconnect.calibration",
                      std::string("no fit for ") + to_string(r.op) + " or a collective it can be derived from over " +
                          to_string(out.link) + " (run modsim comm calibrate)");
  if (fit) {
    out.calibrated = true;
    out.fit = *fit;
    out.algorithm = comm_algorithm::fitted;
    out.time_s = fitted_time(*fit, r.op, r.bytes, r.gpus);
    const bool own = fit->collective == to_string(r.op);
    const bool here = own && fit->gpus == r.gpus;
    out.source = here ? "fitted" : "derived";
    out.bandwidth_source = out.source;
    out.floor_source = here ? fit->floor_source : "derived";
    const std::string floor_words = fit->floor_source == "given" ? "floor as given there" : "floor as measured there";
    if (!own)
      out.notes.push_back(fmt::format(
          "derived: no fit for {} over {}; the {} fit at {} GPUs ({}) is used: its {}, its bus bandwidth times {}'s "
          "busbw factor {:.3g} at {} GPUs (the bytes its steps move per GPU)",
          to_string(r.op), to_string(out.link), fit->collective, fit->gpus, fit->file,
          fit->floor_source == "given" ? "floor (given)" : "latency floor", to_string(r.op), busbw_factor(r.op, r.gpus),
          r.gpus));
    else if (fit->gpus != r.gpus)
      out.notes.push_back("derived: fitted at " + std::to_string(fit->gpus) + " GPUs: " + floor_words +
                          ", bandwidth carried by the busbw factor");
    else if (fit->floor_source == "given")
      out.notes.push_back("the latency floor of this fit was given, not fitted (its rows start at " +
                          std::to_string(fit->min_bytes) + " bytes; interconnect.calibration.source says from where)");
    if (r.bytes < fit->min_bytes || r.bytes > fit->max_bytes) {
      out.outside_fit_range = true;
      out.notes.push_back(std::to_string(r.bytes) + " bytes is outside the sizes the fit was made on (" +
                          std::to_string(fit->min_bytes) + " .. " + std::to_string(fit->max_bytes) +
                          " bytes): the fitted line is extended beyond its data");
    }
  } else if (r.algorithm) {
    out.algorithm = *r.algorithm;
    out.time_s = collective_time(r.op, *r.algorithm, r.bytes, r.gpus, ic, file);
  } else {
    const comm_candidate* best = &out.analytic.front();
    for (const comm_candidate& c : out.analytic)
      if (c.time_s < best->time_s) best = &c;
    out.algorithm = best->algorithm;
    out.time_s = best->time_s;
  }
  out.algbw_bytes_s = out.time_s > 0 ? static_cast<double>(r.bytes) / out.time_s : 0.0;
  out.busbw_bytes_s = out.algbw_bytes_s * busbw_factor(r.op, r.gpus);
  return out;
}

}  // namespace modsim::sim
