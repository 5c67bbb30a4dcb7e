// `modsim predict MODEL --hardware HW`: the predicted time of MODEL per op, layer and model
// (sim/cost/predict.hpp), next to its dense baseline, and where the difference between the time
// saved and the FLOPs saved goes. JSON is the contract of docs/contracts.md plus extra fields.
#include <fmt/format.h>

#include <boost/json.hpp>
#include <cmath>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "analysis/analysis.hpp"
#include "cli/common.hpp"
#include "cli/printer.hpp"
#include "core/text.hpp"
#include "core/error.hpp"
#include "sim/model/config.hpp"
#include "sim/cost/cost.hpp"
#include "sim/cost/predict.hpp"

namespace modsim::cli {
namespace {

namespace json = boost::json;

const char* const k_usage =
    "usage: modsim predict MODEL --hardware HW [--batch B] [--seq S] [--mode forward|train|decode]\n"
    "                      [--dtype fp32|bf16|fp16] [--capacity C] [--schedule S] [--baseline MODEL]\n"
    "                      [--recompute none|selective|full] [--flop-budget F]\n"
    "                      [--graph] [--decode-routing fastest|sync|pad] [--pad-capacity C] [--seed N] [--draws N]\n"
    "                      [--tp N] [--pp N] [--dp N] [--ep N] [--micro-batches M] [--gpus G]\n"
    "                      [--attention fused|unfused] [--format table|json|csv|markdown]\n"
    "\n"
    "Predicted device time of MODEL per op, layer and model on HW (a hardware JSON or a shipped\n"
    "name: cpu, h100-sxm, h200): the datasheet roofline, or the calibrated cost model when HW has a\n"
    "`calibration` block (modsim calibrate). Also the same workload on the dense baseline, the\n"
    "FLOP and time ratios, and a decomposition of (time ratio - FLOP ratio) into routing ops,\n"
    "launch overhead, GEMM efficiency, attention, memory-bound ops and wave quantisation (the time\n"
    "GEMM tiles' partial waves add). Uncalibrated GPU files tile each GEMM with the tile chooser\n"
    "(docs/cost-model.md \"GEMM tiling\") unless they set gemm_tiles. --dtype defaults to bf16\n"
    "on GPU hardware and fp32 on a CPU. --mode train prices each op's forward, its backward (from the\n"
    "backward's FLOPs and bytes: the datasheet roofline, or calibrated the forward's efficiency with no\n"
    "band), what --recompute none|selective|full runs again and one AdamW step (28 bytes per parameter);\n"
    "JSON \"train_pricing\" says how, with the MFU. Train mode also answers the paper's training claim (JSON\n"
    "\"training\"): per step of MODEL and its baseline the time, tokens/s, MFU (model FLOPs: 3 x the forward's\n"
    "matmul FLOPs, docs/flops.md) and memory (weights, gradients, optimizer state, activations under --recompute);\n"
    "the wall-clock MODEL takes for the model FLOPs its baseline takes, and where the difference comes from;\n"
    "with --flop-budget F (model FLOPs, e.g. the paper's 6e18) the steps, tokens and wall-clock of each.\n"
    "--mode decode is one decode\n"
    "step through the discrete-event simulator, the step `modsim simulate forward --mode decode` and\n"
    "`modsim sampling` time: the mean over --draws routing draws (default 8, seeds --seed, --seed + 1, ...),\n"
    "equal to the `modsim sampling` cell of the same strategy. The strategy (named in the head, JSON\n"
    "decode.strategy) is --decode-routing sync (reads the routed count back: round trips) or pad (no sync,\n"
    "padded rows), with --graph as CUDA graphs (--graph alone: pad + graphs); by default the fastest of\n"
    "sync, pad and, on a GPU, pad + graphs for the model at this batch and context, the others' steps\n"
    "beside it (JSON decode_routing_choice). overhead_s is then the step's launches, GPU waits on the host\n"
    "and syncs. --baseline MODEL compares with a matched-quality dense model instead of\n"
    "MODEL without routing (JSON: \"baseline\").\n"
    "\n"
    "--attention fused|unfused says how attention runs (default: fused on GPU hardware, unfused on a CPU;\n"
    "JSON \"attention\", \"attention_measured\"). A calibration prices attention as its rows ran it; asked\n"
    "for the other implementation, the attention ops are its datasheet roofline and no error band is\n"
    "printed (the calibration's validation says nothing of them). The memory note (a step that does\n"
    "not fit in HW's memory) follows it too: unfused keeps one layer's B·H·S² scores, fused only the\n"
    "kernel's per-row statistics and output. A calibration made without cross-validation or held-out\n"
    "rows (calibrate --cv 0) has no band either: the head says `expected error: NO BAND - why`, the JSON\n"
    "\"no_error_band\" (and no \"expected_error\").\n"
    "On GPU hardware a d_model, d_ff or n_heads at none of the calibration's measured values is a new\n"
    "tile/wave shape: its band is at least that axis's leave-one-value-out p90 (the widest of the other\n"
    "two where it has none), and says so (JSON between[]/outside[] \"new_gpu_shape\").\n"
    "\n"
    "Over several GPUs (--tp, --pp, --dp, --ep; JSON \"parallel\"): one step of the split for MODEL and\n"
    "its baseline: each GPU's tensor-parallel shard timed by the cost model, the TP all-reduces and EP\n"
    "all-to-alls sized by the tokens a layer really computes (a routed layer's k) and timed by the\n"
    "hardware's interconnect (modsim comm), pipeline stages balanced by predicted time under a 1F1B\n"
    "schedule of --micro-batches (default 4 x pp) with its bubble, and in training the data-parallel\n"
    "gradient all-reduce less the backward pass it overlaps; memory per GPU. --gpus G ranks every\n"
    "split of G GPUs (tp, pp powers of two, tp within a node). With a split, the headline, the ratios and JSON\n"
    "total_s / dense_total_s / time_ratio are the split's step (the slowest stage's); the per-layer table is one GPU\n"
    "holding the whole batch (JSON \"one_gpu\"). Memory (table and JSON \"memory\") is always shown: one GPU's, or\n"
    "per GPU of the split, with the verdict of that scope.";

json::object op_json(const sim::op_prediction& o, bool train = false) {
  json::object j;
  if (train) {
    j["forward_s"] = o.forward_s;
    j["backward_s"] = o.backward_s;
    j["recompute_s"] = o.recompute_s;
  }
  j["op"] = modsim::to_string(o.op);
  j["class"] = o.op_class;
  j["time_s"] = o.time_s;
  j["roofline_s"] = o.roofline_s;
  j["matmul_flops"] = o.matmul_flops;
  j["other_flops"] = o.other_flops;
  j["bytes"] = o.bytes;
  j["launches"] = o.kernels;
  j["memory_bound"] = o.memory_bound;
  j["calibrated_as"] = sim::curve_name(o.calibrated_as);
  return j;
}

json::object gap_json(const sim::prediction& p) {
  json::object g;
  g["time_ratio_minus_flop_ratio"] = p.time_ratio - p.flop_ratio;
  for (const sim::gap_term& t : sim::gap_terms()) g[t.key] = p.gap.*t.value;
  g["sum"] = p.gap.total();
  json::object by_class;
  for (const auto& [k, v] : p.gap.by_class) by_class[k] = v;
  g["by_class"] = std::move(by_class);
  g["units"] = "fractions of the dense total time; the components sum to time_ratio - flop_ratio";
  return g;
}

// Why a calibrated prediction has no error band (empty: it has one, or it is uncalibrated).
std::string no_band_reason(const sim::prediction& p) {
  if (!p.calibrated || p.expected_error) return {};
  if (p.load.run == sim::run_mode::train && p.backward)
    return fmt::format(
        "the calibration's bands cover forward blocks; its backward was fitted on {} measured training rows (the notes "
        "say how it did on rows it never saw), not banded; the optimizer step the datasheet roofline",
        p.backward->rows);
  if (p.load.run == sim::run_mode::train)
    return "no row of this calibration measures a backward pass: the backward is the forward's calibrated efficiency "
           "applied to the backward's FLOPs and bytes, the optimizer step the datasheet roofline";
  if (!p.attention_measured)
    return fmt::format(
        "{} attention was never measured by this calibration and is priced by the datasheet roofline (a lower bound); "
        "--attention {} predicts with the measured kernels",
        modsim::to_string(p.attention),
        modsim::to_string(p.attention == attention_impl::fused ? attention_impl::unfused : attention_impl::fused));
  return "this calibration was made without cross-validation (calibrate --cv 0) and without held-out rows, so how "
         "far its predictions miss was never measured; calibrate with --cv K (default 5) to record a band";
}

json::value prediction_json(const sim::prediction& p, const std::string& hw_name) {
  const bool train = p.load.run == sim::run_mode::train;
  json::object root;
  root["model"] = p.model_name;
  root["hardware"] = hw_name;
  root["cost_model"] = p.cost_label;
  root["calibrated"] = p.calibrated;
  root["workload"] = workload_json(p.load);
  root["total_s"] = p.total_s();
  root["dense_total_s"] = p.dense_total_s();
  root["overhead_s"] = p.overhead_s();
  root["ops_s"] = p.model.ops_s;
  root["launches"] = p.model.kernels;
  root["launch_s"] = p.launch_s;
  root["dense_overhead_s"] = p.dense.overhead_s;
  root["dense_launches"] = p.dense.kernels;
  root["flop_ratio"] = p.flop_ratio;
  root["matmul_flop_ratio"] = p.matmul_flop_ratio;
  root["time_ratio"] = p.time_ratio;
  root["matmul_flops"] = p.model.matmul_flops;
  root["other_flops"] = p.model.other_flops;
  root["dense_matmul_flops"] = p.dense.matmul_flops;
  root["dense_other_flops"] = p.dense.other_flops;
  root["gap"] = gap_json(p);
  root["attention_share"] = p.attention_share;
  // GPU kernel-sequence model: the largest GEMM wave factor and the share of the time its
  // waves add past what the calibration's rows measured (sim/cost/kernel_model.hpp).
  root["max_wave_factor"] = p.model.max_wave_factor;
  root["unmeasured_wave_s"] = p.model.unmeasured_wave_s;
  if (p.model.unmeasured_wave_s > 0) root["unmeasured_wave_share"] = p.model.unmeasured_wave_s / p.model.total_s;
  if (const std::string why = no_band_reason(p); !why.empty()) root["no_error_band"] = why;
  if (p.expected_error) {
    const sim::cross_validation_summary& e = *p.expected_error;
    json::object ee;
    for (const auto& f : sim::k_cv_block_errors) ee[f.key] = e.*f.value;
    ee["blocks"] = e.blocks;
    ee["folds"] = e.folds;
    ee["method"] = "cross-validation grouped by shape: blocks predicted by calibrations that never saw their shape";
    const double b = p.band ? p.band->p90_pct : e.p90_abs_pct_error;
    json::array band;
    band.emplace_back(p.total_s() * (1 - b / 100));
    band.emplace_back(p.total_s() * (1 + b / 100));
    ee["total_s_p90_band"] = std::move(band);
    ee["band_pct"] = b;
    if (p.band) {
      ee["inside_measured_range"] = p.band->inside();
      // outside: past the measured range; between: inside it, at none of the measured values.
      const auto axes = [](const std::vector<sim::error_band::outside_axis>& list, bool past) {
        json::array arr;
        for (const auto& a : list) {
          json::object ao{{"axis", a.axis}, {"value", a.value}};
          ao[past ? "min" : "below"] = a.min;
          ao[past ? "max" : "above"] = a.max;
          if (past) ao["factor"] = std::exp2(a.distance);
          ao["band_pct"] = a.band_pct;
          if (past) ao["extrapolation_measured"] = a.measured;
          // GPU shape axes at an unmeasured value (only there): the leave-one-value-out p90
          // the band is at least, and the axis it was measured along.
          if (!a.shape_lovo_axis.empty())
            ao["new_gpu_shape"] = json::object{{"leave_one_value_out_axis", a.shape_lovo_axis},
                                               {"leave_one_value_out_p90_pct", a.shape_lovo_pct}};
          arr.push_back(std::move(ao));
        }
        return arr;
      };
      ee["outside"] = axes(p.band->outside, true);
      ee["between"] = axes(p.band->between, false);
      ee["band"] = p.band->text();
      ee["holdout_blocks"] = p.band->holdout_blocks;
      // Ops timed with a stand-in's curve: their share of the time, the check that spoke for
      // each (null: none, the band does not cover it) and what it added.
      json::array stand_ins;
      for (const auto& x : p.band->stand_ins)
        stand_ins.push_back(
            json::object{{"op", x.op},
                         {"as", x.as},
                         {"share", x.share},
                         {"checked_on", x.checked_on.empty() ? json::value(nullptr) : json::value(x.checked_on)},
                         {"check_p90_pct", x.p90_pct},
                         {"added_pct", x.share * x.p90_pct}});
      ee["stand_ins"] = std::move(stand_ins);
      ee["stand_in_pct"] = p.band->stand_in_pct;
    }
    if (p.holdout) {
      json::object h;
      h["blocks"] = p.holdout->blocks;
      for (const auto& f : sim::k_holdout_block_errors) h[f.key] = (*p.holdout).*f.value;
      h["decode_blocks"] = p.holdout->decode_rows;
      for (const auto& f : sim::k_holdout_decode_errors) h[f.key] = (*p.holdout).*f.value;
      ee["holdout"] = std::move(h);
    }
    root["expected_error"] = std::move(ee);
  }
  json::array layers;
  for (std::size_t i = 0; i < p.model.layers.size(); ++i) {
    const sim::layer_prediction& l = p.model.layers[i];
    json::object o;
    o["index"] = l.index;
    o["routed"] = l.routed;
    o["capacity"] = l.capacity;
    o["tokens"] = l.tokens;
    o["time_s"] = l.time_s;
    o["dense_time_s"] = i < p.dense.layers.size() ? p.dense.layers[i].time_s : 0.0;
    o["launches"] = l.kernels;
    json::array ops;
    for (const auto& op : l.ops) ops.push_back(op_json(op, train));
    o["ops"] = std::move(ops);
    layers.push_back(std::move(o));
  }
  root["layers"] = std::move(layers);
  json::object head = op_json(p.model.lm_head, train);
  head["dense_time_s"] = p.dense.lm_head.time_s;
  root["lm_head"] = std::move(head);
  if (train) {
    json::object opt;
    opt["time_s"] = p.model.optimizer.time_s;
    opt["dense_time_s"] = p.dense.optimizer.time_s;
    opt["other_flops"] = p.model.optimizer.other_flops;
    opt["bytes"] = p.model.optimizer.bytes;
    opt["bytes_per_param"] = p.model.optimizer_bytes_per_param;
    opt["launches"] = p.model.optimizer.kernels;
    root["optimizer"] = std::move(opt);
  }
  json::array notes;
  for (const auto& n : p.notes) notes.emplace_back(n);
  root["notes"] = std::move(notes);
  return root;
}

// Op times run to microseconds: four decimals of a millisecond.
std::string ms(double s) { return text::ms(s, 4); }

std::string des_routing_name(decode_routing r) { return std::string(modsim::to_string(r)); }
cell ms_cell(double s) { return cell(ms(s), fmt::format("{}", s)); }
std::string ratio_text(double a, double b) { return b > 0 ? fmt::format("{:.3f}", a / b) : "-"; }

// A footprint's parts in bytes and whether it fits (`verdict` empty), with the verdict's sentence.
json::object memory_json(const sim::memory_footprint& m, const std::string& verdict) {
  json::object j{{"weights_bytes", m.weights},
                 {"training_state_bytes", m.training_state()},
                 {"gradients_bytes", m.gradients},
                 {"optimizer_state_bytes", m.optimizer_state},
                 {"kv_cache_bytes", m.kv_cache},
                 {"activations_bytes", m.activations},
                 {"attention_buffers_bytes", m.attention_buffers},
                 {"total_bytes", m.total()},
                 {"fits", verdict.empty()}};
  if (!verdict.empty()) j["verdict"] = verdict;
  return j;
}

json::object parallel_json(const sim::parallel_prediction& p) {
  json::object j;
  j["tp"] = p.split.tp;
  j["pp"] = p.split.pp;
  j["dp"] = p.split.dp;
  j["ep"] = p.split.ep;
  j["micro_batches"] = p.split.micro_batches;
  j["gpus"] = p.split.gpus();
  j["step_s"] = p.step_s;
  j["compute_s"] = p.compute_s;
  j["optimizer_s"] = p.optimizer_s;
  j["tp_comm_s"] = p.tp_comm_s;
  j["ep_comm_s"] = p.ep_comm_s;
  j["pp_send_s"] = p.pp_send_s;
  j["bubble_s"] = p.bubble_s;
  j["dp_exposed_s"] = p.dp_exposed_s;
  j["dp_allreduce_s"] = p.dp_allreduce_s;
  j["naive_step_s"] = p.naive_step_s;
  j["tp_bytes_per_step"] = p.tp_bytes_per_step;
  j["ep_bytes_per_step"] = p.ep_bytes_per_step;
  j["dp_bytes_per_step"] = p.dp_bytes_per_step;
  json::array first, stage_s, naive_s;
  for (int f : p.stages.first_layer) first.emplace_back(f);
  for (double x : p.stages.stage_s) stage_s.emplace_back(x);
  for (double x : p.naive_stages.stage_s) naive_s.emplace_back(x);
  j["stage_first_layer"] = std::move(first);
  j["stage_s"] = std::move(stage_s);
  j["naive_stage_s"] = std::move(naive_s);
  j["memory_per_gpu"] = memory_json(p.memory_per_gpu, p.memory_verdict);
  json::array notes;
  for (const auto& n : p.notes) notes.emplace_back(n);
  j["notes"] = std::move(notes);
  return j;
}

void add_parallel(output& o, const analysis::parallel_section& ps) {
  json::object j;
  j["model"] = parallel_json(ps.model);
  j["baseline"] = parallel_json(ps.baseline);
  j["one_gpu_model"] = parallel_json(ps.one_gpu_model);
  j["one_gpu_baseline"] = parallel_json(ps.one_gpu_baseline);
  if (ps.gpus > 0) {
    json::array bm, bb;
    for (const auto& p : ps.best_model) bm.push_back(parallel_json(p));
    for (const auto& p : ps.best_baseline) bb.push_back(parallel_json(p));
    j["best_model"] = std::move(bm);
    j["best_baseline"] = std::move(bb);
  }
  o.json.as_object()["parallel"] = std::move(j);

  table t;
  t.title = fmt::format("over {} GPUs: {}, {} micro-batches (per step, the slowest stage)", ps.model.split.gpus(),
                        sim::to_string(ps.model.split), ps.model.split.micro_batches);
  t.columns = {"",           "step ms",   "compute ms",    "TP comm ms",        "EP comm ms",
               "PP send ms", "bubble ms", "DP exposed ms", "by layer count ms", "memory/GPU GB"};
  auto row = [&](const char* who, const sim::parallel_prediction& p) {
    t.rows.push_back({who, ms_cell(p.step_s), ms_cell(p.compute_s), ms_cell(p.tp_comm_s), ms_cell(p.ep_comm_s),
                      ms_cell(p.pp_send_s), ms_cell(p.bubble_s), ms_cell(p.dp_exposed_s), ms_cell(p.naive_step_s),
                      number(p.memory_per_gpu.total() / 1e9, "{:.1f}")});
  };
  row("model", ps.model);
  row("baseline", ps.baseline);
  row("model, 1 GPU", ps.one_gpu_model);
  row("baseline, 1 GPU", ps.one_gpu_baseline);
  o.tables.push_back(std::move(t));
  if (ps.model.split.pp > 1) {
    table st;
    st.title = "pipeline stages (one micro-batch; the last with the LM head): balanced by time vs by layer count";
    st.columns = {"stage", "first layer", "ms", "by count ms"};
    st.left_columns = 0;
    for (std::size_t i = 0; i < ps.model.stages.stage_s.size(); ++i)
      st.rows.push_back({integer(std::int64_t(i)), integer(ps.model.stages.first_layer[i]),
                         ms_cell(ps.model.stages.stage_s[i]), ms_cell(ps.model.naive_stages.stage_s[i])});
    o.tables.push_back(std::move(st));
  }
  if (ps.gpus > 0) {
    table b;
    b.title = fmt::format("every split of {} GPUs: those that fit in memory first, fastest first", ps.gpus);
    b.columns = {"split", "model step ms", "baseline step ms", "ratio", "memory/GPU GB", "fits"};
    for (const auto& p : ps.best_model) {
      const double base = ps.baseline_step_s(p.split);
      b.rows.push_back({sim::to_string(p.split), ms_cell(p.step_s), base > 0 ? ms_cell(base) : cell("-"),
                        ratio_text(p.step_s, base), number(p.memory_per_gpu.total() / 1e9, "{:.1f}"),
                        p.memory_verdict.empty() ? "yes" : "no"});
    }
    o.tables.push_back(std::move(b));
  }
  for (const auto& n : ps.model.notes) o.tail.push_back("parallel: " + n);
}

// What the step keeps in device memory: one GPU's, or per GPU of the split (a.memory_scope).
void add_memory(output& o, const analysis::analysis_result& a, double device_bytes) {
  if (!a.memory) return;
  const sim::memory_footprint& m = *a.memory;
  json::object j = memory_json(m, a.memory_verdict);
  j["scope"] = a.memory_scope;
  j["device_bytes"] = device_bytes;
  o.json.as_object()["memory"] = std::move(j);

  table t;
  t.title = fmt::format("memory ({}): what the step keeps on the device, a lower bound", a.memory_scope);
  t.columns = {"weights GB", "grads + optimizer GB", "KV cache GB", "activations GB", "total GB", "device GB", "fits"};
  t.left_columns = 0;
  const auto gb = [](double b) { return number(b / 1e9, "{:.2f}"); };
  t.rows.push_back({gb(m.weights), gb(m.training_state()), gb(m.kv_cache), gb(m.activations), gb(m.total()),
                    device_bytes > 0 ? gb(device_bytes) : cell("-"), a.memory_verdict.empty() ? "yes" : "no"});
  o.tables.push_back(std::move(t));
}

// The training answer (analysis/training.hpp): JSON "training", the per-step and budget tables,
// and where the wall-clock difference at equal FLOPs comes from.
json::object training_step_json(const analysis::training_step& s) {
  const sim::memory_footprint& m = s.memory;
  return json::object{{"name", s.name},
                      {"step_s", s.step_s},
                      {"forward_s", s.forward_s},
                      {"backward_s", s.backward_s},
                      {"recompute_s", s.recompute_s},
                      {"optimizer_s", s.optimizer_s},
                      {"overhead_s", s.overhead_s},
                      {"tokens_per_step", s.tokens},
                      {"tokens_per_s", s.tokens_per_s},
                      {"model_flops", s.model_flops},
                      {"counted_flops", s.counted_flops},
                      {"mfu", s.mfu},
                      {"memory", json::object{{"weights_bytes", m.weights},
                                              {"gradients_bytes", m.gradients},
                                              {"optimizer_state_bytes", m.optimizer_state},
                                              {"activations_bytes", m.activations},
                                              {"total_bytes", m.total()},
                                              {"fits", s.memory_verdict.empty()}}}};
}

void add_training(output& o, const analysis::training_section& t) {
  json::object j;
  j["flop_convention"] = t.flop_convention;
  j["memory_scope"] = t.memory_scope;
  j["model"] = training_step_json(t.model);
  j["baseline"] = training_step_json(t.baseline);
  j["time_ratio"] = t.time_ratio;
  j["flop_ratio"] = t.flop_ratio;
  j["model_flop_ratio"] = t.model_flop_ratio;
  j["wall_ratio"] = t.wall_ratio;
  json::object sources;
  double sum = 0;
  for (const analysis::training_source& x : t.sources) {
    sources[x.key] = x.value;
    sum += x.value;
  }
  sources["sum"] = sum;
  sources["units"] = "fractions of the baseline's wall-clock at equal model FLOPs; they sum to wall_ratio - 1";
  j["sources"] = std::move(sources);
  if (t.budget) {
    const analysis::training_budget& b = *t.budget;
    j["budget"] = json::object{
        {"flops", b.flops},
        {"model", json::object{{"steps", b.model_steps}, {"tokens", b.model_tokens}, {"wall_s", b.model_wall_s}}},
        {"baseline",
         json::object{{"steps", b.baseline_steps}, {"tokens", b.baseline_tokens}, {"wall_s", b.baseline_wall_s}}},
        {"wall_ratio", b.baseline_wall_s > 0 ? b.model_wall_s / b.baseline_wall_s : 0.0}};
  }
  o.json.as_object()["training"] = std::move(j);

  const auto gb = [](double b) { return number(b / 1e9, "{:.2f}"); };
  table st;
  st.title = "training step, " + t.memory_scope + "; model FLOPs = 3 x forward matmul FLOPs (docs/flops.md)";
  st.columns = {"",           "step ms",      "tokens/step",  "tokens/s",       "model TFLOP/step", "MFU",
                "weights GB", "gradients GB", "optimizer GB", "activations GB", "memory GB"};
  for (const analysis::training_step* s : {&t.model, &t.baseline})
    st.rows.push_back({s->name, ms_cell(s->step_s), integer(s->tokens), number(s->tokens_per_s, "{:.0f}"),
                       number(static_cast<double>(s->model_flops) / 1e12, "{:.3f}"), number(100 * s->mfu, "{:.1f}%"),
                       gb(s->memory.weights), gb(s->memory.gradients), gb(s->memory.optimizer_state),
                       gb(s->memory.activations), gb(s->memory.total())});
  o.tables.push_back(std::move(st));
  if (t.budget) {
    const analysis::training_budget& b = *t.budget;
    table bt;
    bt.title = fmt::format("at a budget of {:.3g} model FLOPs (steps = budget / model FLOPs per step)", b.flops);
    bt.columns = {"", "steps", "tokens", "wall-clock h"};
    bt.rows.push_back({t.model.name, number(b.model_steps, "{:.0f}"), number(b.model_tokens, "{:.4g}"),
                       number(b.model_wall_s / 3600, "{:.2f}")});
    bt.rows.push_back({t.baseline.name, number(b.baseline_steps, "{:.0f}"), number(b.baseline_tokens, "{:.4g}"),
                       number(b.baseline_wall_s / 3600, "{:.2f}")});
    o.tables.push_back(std::move(bt));
  }
  o.tail.push_back(fmt::format(
      "training at equal model FLOPs: wall-clock x{:.3f} of the baseline's (step time x{:.3f} / model FLOPs per step "
      "x{:.3f}); where the difference comes from (fractions of the baseline's wall-clock):",
      t.wall_ratio, t.time_ratio, t.model_flop_ratio));
  for (const analysis::training_source& x : t.sources)
    o.tail.push_back(fmt::format("  {:<30} {:+.4f}  {}", x.label, x.value, x.why));
}

// How a training step is priced, said with every --mode train result (JSON train_pricing and
// one line of text).
struct train_pricing {
  json::object json;
  std::string line;
};

train_pricing train_pricing_of(const analysis::analysis_result& a) {
  const sim::prediction& p = *a.prediction;
  const sim::model_time& m = p.model;
  const analysis::training_section& tr = *a.training;
  const std::string& backward = tr.backward;
  const std::string& attention = tr.attention_backward;
  const std::string& optimizer = tr.optimizer;
  const double mfu = tr.model.mfu;
  train_pricing t;
  t.json = json::object{{"backward", backward},
                        {"backward_fitted", tr.backward_fitted},
                        {"attention_backward", attention},
                        {"optimizer", optimizer},
                        {"optimizer_fitted", tr.optimizer_fitted},
                        {"recompute", modsim::to_string(p.load.recompute)},
                        {"batch", "global (batch / dp per replica)"},
                        {"forward_s", m.forward_s},
                        {"backward_s", m.backward_s},
                        {"recompute_s", m.recompute_s},
                        {"optimizer_s", m.optimizer.time_s},
                        {"model_flops", m.model_matmul_flops},
                        {"mfu", mfu},
                        {"mfu_convention",
                         "model FLOPs (3 x the forward's matmul FLOPs, recomputation not counted) / (total_s x the "
                         "peak matmul FLOP/s of the dtype); one GPU holding the whole batch"}};
  t.line = fmt::format(
      "training step: forward {} ms + backward {} ms + recompute ({}) {} ms + optimizer {} ms; backward = {}; "
      "attention backward = {}; optimizer = {}; MFU {:.1f}% (model FLOPs 3 x forward matmul / step time / peak{}); "
      "--batch is the global batch (each of --dp replicas runs batch / dp)",
      ms(m.forward_s), ms(m.backward_s), modsim::to_string(p.load.recompute), ms(m.recompute_s), ms(m.optimizer.time_s),
      backward, attention, optimizer, 100 * mfu,
      p.calibrated ? "" : "; an upper bound: the datasheet runs every GEMM at the peak");
  return t;
}

// Per layer: the model's and the baseline's time, the LM head, the optimizer (train), launches,
// the total, the band, and the split's step.
table layers_table(const sim::prediction& p, const analysis::parallel_section* split) {
  table layers;
  if (split) layers.title = "one GPU holding the whole batch (for reference; the split's step is below)";
  layers.columns = {"layer", "routed", "capacity", "tokens", "time ms", "dense ms", "ratio", "launches"};
  layers.left_columns = 0;
  for (std::size_t i = 0; i < p.model.layers.size(); ++i) {
    const auto& l = p.model.layers[i];
    const double d = i < p.dense.layers.size() ? p.dense.layers[i].time_s : 0.0;
    layers.rows.push_back({integer(l.index), l.routed ? "yes" : "no", number(l.capacity, "{:.3f}"), integer(l.tokens),
                           ms_cell(l.time_s), ms_cell(d), ratio_text(l.time_s, d), integer(l.kernels)});
  }
  layers.rows.push_back({"lm_head", "", "", "", ms_cell(p.model.lm_head.time_s), ms_cell(p.dense.lm_head.time_s),
                         ratio_text(p.model.lm_head.time_s, p.dense.lm_head.time_s), integer(p.model.lm_head.kernels)});
  if (p.load.run == sim::run_mode::train)
    layers.rows.push_back(
        {"optimizer", "", "", "", ms_cell(p.model.optimizer.time_s), ms_cell(p.dense.optimizer.time_s),
         ratio_text(p.model.optimizer.time_s, p.dense.optimizer.time_s), integer(p.model.optimizer.kernels)});
  layers.rows.push_back({"launch", "", "", "", ms_cell(p.model.overhead_s), ms_cell(p.dense.overhead_s),
                         ratio_text(p.model.overhead_s, p.dense.overhead_s), integer(p.model.kernels)});
  layers.rows.push_back({split ? "1-GPU total" : "total", "", "", "", ms_cell(p.total_s()), ms_cell(p.dense_total_s()),
                         fmt::format("{:.3f}", p.time_ratio), ""});
  if (p.expected_error) {
    const double band = (p.band ? p.band->p90_pct : p.expected_error->p90_abs_pct_error) / 100;
    layers.rows.push_back({"p90 band", "", "", "", ms(p.total_s() * (1 - band)) + "-" + ms(p.total_s() * (1 + band)),
                           ms(p.dense_total_s() * (1 - band)) + "-" + ms(p.dense_total_s() * (1 + band)), "", ""});
  }
  if (split)
    layers.rows.push_back({fmt::format("step, {} GPUs", split->model.split.gpus()), "", "", "",
                           ms_cell(split->model.step_s), ms_cell(split->baseline.step_s),
                           ratio_text(split->model.step_s, split->baseline.step_s), ""});
  return layers;
}

// Time by op class beside the baseline's, with the FLOP ratio.
table classes_table(const analysis::analysis_result& a, const sim::prediction& p) {
  table classes;
  classes.columns = {"op class", "time ms", "share", "dense ms", "time ratio", "FLOP ratio"};
  for (const sim::class_rollup& c : a.time_classes) {
    const double f = double(c.matmul_flops) + double(c.other_flops);
    const double df = double(c.dense_matmul_flops) + double(c.dense_other_flops);
    classes.rows.push_back({std::string(c.op_class), ms_cell(c.time_s),
                            fmt::format("{:.1f}%", p.total_s() > 0 ? 100 * c.time_s / p.total_s() : 0.0),
                            ms_cell(c.dense_time_s), ratio_text(c.time_s, c.dense_time_s), ratio_text(f, df)});
  }
  classes.rows.push_back({"launch", ms_cell(p.model.overhead_s),
                          fmt::format("{:.1f}%", p.total_s() > 0 ? 100 * p.model.overhead_s / p.total_s() : 0.0),
                          ms_cell(p.dense.overhead_s), "", ""});
  return classes;
}

// The CSV: one row per (layer, op) and the lm_head.
table ops_table(const sim::prediction& p) {
  table ops;
  ops.columns = {"layer",      "routed",       "capacity",    "op",    "class",    "time_s",       "dense_time_s",
                 "roofline_s", "matmul_flops", "other_flops", "bytes", "launches", "memory_bound", "calibrated_as"};
  ops.people = false;
  ops.csv = true;
  auto row = [&](cell layer, bool routed, cell cap, const sim::op_prediction& x, double dense_t) {
    ops.rows.push_back({std::move(layer), routed ? "true" : "false", std::move(cap),
                        std::string(modsim::to_string(x.op)), std::string(x.op_class), number(x.time_s, "{}"),
                        number(dense_t, "{}"), number(x.roofline_s, "{}"), integer(x.matmul_flops),
                        integer(x.other_flops), integer(x.bytes), integer(x.kernels), x.memory_bound ? "true" : "false",
                        std::string(sim::curve_name(x.calibrated_as))});
  };
  for (std::size_t i = 0; i < p.model.layers.size(); ++i) {
    const auto& l = p.model.layers[i];
    const sim::layer_prediction* d = i < p.dense.layers.size() ? &p.dense.layers[i] : nullptr;
    for (const auto& x : l.ops) {
      double dt = 0;
      if (d)
        for (const auto& y : d->ops)
          if (y.op == x.op) dt = y.time_s;
      row(integer(l.index), l.routed, number(l.capacity, "{:g}"), x, dt);
    }
  }
  row("", false, "", p.model.lm_head, p.dense.lm_head.time_s);
  return ops;
}

output output_of(const analysis::analysis_result& a, const std::string& hw_name,
                 const analysis::timeline_request& step) {
  const sim::prediction& p = *a.prediction;
  const bool decode = p.load.run == sim::run_mode::decode;
  const analysis::parallel_section* split = a.parallel ? &*a.parallel : nullptr;
  output o;
  o.json = prediction_json(p, hw_name);
  json::object& root = o.json.as_object();
  if (split) {
    // The contract: with a split, total_s and the ratios are the split's step (the slowest
    // stage's); the one-GPU figures stay beside them, labelled.
    const double b = split->baseline.step_s;
    root["one_gpu"] = json::object{{"total_s", p.total_s()},
                                   {"dense_total_s", p.dense_total_s()},
                                   {"time_ratio", p.time_ratio},
                                   {"scope", "one GPU holding the whole batch; the layers and ops are these"}};
    root["total_s"] = split->model.step_s;
    root["dense_total_s"] = b;
    root["time_ratio"] = b > 0 ? split->model.step_s / b : 0.0;
    root["gpus"] = split->model.split.gpus();
    if (auto* ee = root.if_contains("expected_error")) {
      // The calibration's band covers the cost model's part, the compute; collectives have none.
      json::object& e = ee->as_object();
      const double bp = e["band_pct"].as_double() / 100;
      const double c = split->model.compute_s;
      e["total_s_p90_band"] = json::array{split->model.step_s - bp * c, split->model.step_s + bp * c};
      e["band_scope"] = "the split's compute; its communication and bubble carry no band";
    }
  }
  std::optional<train_pricing> train;
  if (p.load.run == sim::run_mode::train) {
    train = train_pricing_of(a);
    root["train_pricing"] = train->json;
  }
  root["baseline"] = baseline_json(a.config);
  add_attention_json(root, a);
  if (decode && a.decode_choice) {
    const analysis::decode_strategy_choice& ch = *a.decode_choice;
    json::object d;
    d["strategy"] = ch.strategy.name();
    d["decode_routing"] = des_routing_name(ch.strategy.routing);
    if (step.pad_capacity)
      d["pad_capacity"] = *step.pad_capacity;
    else
      d["pad_capacity"] = "default (capacity + 3 sigma)";
    d["graph"] = ch.strategy.cuda_graph;
    d["seed"] = ch.seed;
    d["draws"] = ch.draws;
    d["step_s"] = p.total_s();
    d["source"] =
        "discrete-event decode step (analysis::mean_decode_step), the mean over the routing draws, as modsim "
        "simulate forward --mode decode and the modsim sampling cell";
    root["decode"] = std::move(d);
    root["decode_routing_choice"] = decode_choice_json(ch);
  }
  o.head.push_back(fmt::format("{} on {}: {}, batch {}, {} {}, {}", p.model_name.empty() ? "model" : p.model_name,
                               hw_name, sim::to_string(p.load.run), p.load.batch, decode ? "context" : "seq",
                               p.load.seq_len, sim::to_string(p.load.type)));
  o.head.push_back(fmt::format("cost model: {}", p.calibrated ? p.cost_label : "DATASHEET ROOFLINE (uncalibrated)"));
  o.head.push_back("baseline (\"dense\"): " + analysis::baseline_label(a.config));
  o.head.push_back(attention_line(a) + fmt::format(", {:.1f}% of the time", 100 * p.attention_share));
  if (const std::string sw = sliding_window_line(a.config.model, p.load); !sw.empty()) o.head.push_back(sw);
  add_sliding_window_json(root, a.config.model);
  if (decode && a.decode_choice) {
    const analysis::decode_strategy_choice& ch = *a.decode_choice;
    o.head.push_back(fmt::format(
        "decode step: discrete-event simulation (as simulate forward), strategy {}, {}; launch row = "
        "launches, GPU waits on the host and routed-count syncs",
        ch.label(),
        ch.draws > 1 ? fmt::format("seeds {}-{}", ch.seed, ch.seed + static_cast<std::uint64_t>(ch.draws - 1))
                     : fmt::format("seed {}", ch.seed)));
    o.head.push_back("decode strategies at this cell: " + decode_candidates_text(ch));
  }
  if (p.expected_error) {
    o.head.push_back(fmt::format(
        "expected error: median {:.1f}%, p90 {:.1f}% (|predicted - measured| of {} blocks this calibration never saw, "
        "{}-fold cross-validation by shape)",
        p.expected_error->median_abs_pct_error, p.expected_error->p90_abs_pct_error, p.expected_error->blocks,
        p.expected_error->folds));
    // The held-out rows of the prediction's kind, where the calibration was checked on some.
    if (p.holdout && p.holdout->count(decode) > 0)
      o.head.push_back(fmt::format(
          "checked on {} held-out {} it was never fitted on: median {:.1f}%, p90 {:.1f}% (the band inside the measured "
          "range comes from these)",
          p.holdout->count(decode), decode ? "decode rows" : "blocks",
          decode ? p.holdout->decode_median_abs_pct_error : p.holdout->median_abs_pct_error,
          decode ? p.holdout->decode_p90_abs_pct_error : p.holdout->p90_abs_pct_error));
    if (p.band) o.head.push_back("this prediction: " + p.band->text());
  } else if (const std::string why = no_band_reason(p); !why.empty()) {
    o.head.push_back("expected error: NO BAND - " + why);
  }
  if (train) o.head.push_back(train->line);
  o.head.push_back(fmt::format(
      "times are predicted device time; launch overhead (gaps between kernels, host-bound stalls; {:.2f} us per "
      "launch) shown separately",
      p.launch_s * 1e6));
  if (split)
    o.head.push_back(fmt::format(
        "over {} GPUs ({}): step {} ms against {} ms for the baseline (x{}); one GPU holding the whole batch: {} ms "
        "(x{}), the per-layer table below",
        split->model.split.gpus(), sim::to_string(split->model.split), ms(split->model.step_s),
        ms(split->baseline.step_s), ratio_text(split->model.step_s, split->baseline.step_s), ms(p.total_s()),
        fmt::format("{:.3f}", p.time_ratio)));

  o.tables.push_back(layers_table(p, split));

  o.tables.push_back(classes_table(a, p));

  o.tables.push_back(ops_table(p));

  if (split) {
    const double r = split->baseline.step_s > 0 ? split->model.step_s / split->baseline.step_s : 0.0;
    o.tail.push_back(fmt::format(
        "vs dense over {} GPUs: FLOPs x{:.3f} (matmul only x{:.3f}), step time x{:.3f} -> {:.1f}% of the FLOPs saved, "
        "{:.1f}% of the step time",
        split->model.split.gpus(), p.flop_ratio, p.matmul_flop_ratio, r, 100 * (1 - p.flop_ratio), 100 * (1 - r)));
  } else {
    o.tail.push_back(fmt::format(
        "vs dense: FLOPs x{:.3f} (matmul only x{:.3f}), time x{:.3f} -> {:.1f}% of the FLOPs saved, {:.1f}% of the "
        "time",
        p.flop_ratio, p.matmul_flop_ratio, p.time_ratio, 100 * (1 - p.flop_ratio), 100 * (1 - p.time_ratio)));
  }
  o.tail.push_back(fmt::format("time ratio - FLOP ratio = {:+.4f} (in units of the dense time{}); where it comes from:",
                               p.time_ratio - p.flop_ratio, split ? ", one GPU holding the whole batch" : ""));
  auto line = [&](const std::string& what, double v, const std::string& why) {
    o.tail.push_back(fmt::format("  {:<30} {:+.4f}  {}", what, v, why));
  };
  for (const sim::gap_term& t : sim::gap_terms())
    line(t.label, p.gap.*t.value,
         fmt::format(fmt::runtime(t.why), fmt::arg("launches", p.model.kernels),
                     fmt::arg("dense_launches", p.dense.kernels)));
  o.tail.push_back(fmt::format("  {:<30} {:+.4f}", "sum", p.gap.total()));
  for (const auto& n : p.notes) o.tail.push_back("note: " + n);
  return o;
}

}  // namespace

int cmd_predict(const std::vector<std::string>& args) {
  po::options_description options("modsim predict options");
  options.add_options()("model", po::value<std::string>()->required(),
                        "model JSON, HF config.json or shipped model name")(
      "hardware", po::value<std::string>()->required(), "hardware JSON (or a shipped name: cpu, h100-sxm, h200)")(
      "format", po::value<std::string>()->default_value("table"), "table | json | csv | markdown");
  add_workload_options(options);
  add_routing_overrides(options);
  add_baseline_option(options);
  add_step_options(options);
  add_parallel_options(options);
  add_attention_option(options);
  add_flop_budget_option(options);
  po::positional_options_description positional;
  positional.add("model", 1);
  po::variables_map vm;
  if (!parse_args(args, options, positional, vm, k_usage)) return exit_ok;

  const output_format format = parse_format(vm["format"].as<std::string>());
  const sim::hardware_spec hw = sim::load_hardware(sim::resolve_config(vm["hardware"].as<std::string>(), "hardware"));
  const sim::model_spec model = load_model_arg(vm["model"].as<std::string>(), vm);
  const sim::workload w = workload_from(vm, sim::default_dtype(hw));
  analysis::scenario scenario;
  const analysis::timeline_request step = step_options_from(vm);
  if (w.run == sim::run_mode::decode) {
    scenario.timeline = step;
  } else {
    for (const char* k : {"graph", "decode-routing", "pad-capacity", "seed", "draws"})
      if (vm.count(k) && !vm[k].defaulted())
        throw input_error("", std::string("--") + k, "applies to --mode decode only");
  }
  if (w.run == sim::run_mode::train)
    scenario.training = analysis::training_request{flop_budget_from(vm)};
  else if (vm.count("flop-budget"))
    throw input_error("", "--flop-budget", "applies to --mode train only");
  scenario.parallel = parallel_from(vm);
  if (scenario.parallel) scenario.parallel->headline = true;
  const analysis::analysis_result a =
      analysis::analyze({model, w, hw, baseline_from(vm), attention_from(vm)}, scenario);
  output o = output_of(a, hw.name, step);
  if (a.parallel) add_parallel(o, *a.parallel);
  add_memory(o, a, hw.memory_bytes);
  if (a.training) add_training(o, *a.training);
  print(o, format, std::cout);
  return exit_ok;
}

}  // namespace modsim::cli
