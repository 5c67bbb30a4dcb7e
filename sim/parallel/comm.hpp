#pragma once
// Collectives over G GPUs: the alpha-beta cost of NCCL's algorithms on the hardware file's
// `interconnect` (sim/model/spec.hpp), or the line fitted to nccl-tests' own output when the file
// carries `interconnect.calibration` (sim/parallel/comm_calibrate.hpp).
//
// N, "bytes", is nccl-tests' `size` column, so that a prediction and a measured row line up:
//   all_reduce      N = the buffer each GPU holds (input and output are both N bytes);
//   all_gather      N = the gathered output on each GPU (each GPU contributes N/G);
//   reduce_scatter  N = the input on each GPU (each GPU keeps N/G of the reduced result);
//   all_to_all      N = the send buffer of each GPU (N/G to every GPU, itself included);
//   send_recv       N = what each GPU sends to its neighbour (and receives from the other).
// algbw = N / time; busbw = algbw x factor, factor = 2(G-1)/G for all_reduce, (G-1)/G for
// all_gather, reduce_scatter and all_to_all, 1 for send_recv (nccl-tests' PERFORMANCE.md).
//
// Links (per GPU, one direction): intra-node alpha_i, B_i; inter-node alpha_e, B_e;
// g = interconnect.gpus_per_node, n = G / g nodes. G <= g is one node: every term uses the
// intra-node link. G > g (G a multiple of g) crosses nodes: a ring is as slow as its slowest
// link, alpha = max(alpha_i, alpha_e), B = min(B_i, B_e); the tree is hierarchical.
//
//   all_reduce  ring  2(G-1) alpha + 2 (G-1)/G N / B
//               tree  G <= g: double binary tree, 2 ceil(log2 G) alpha_i + 2 N / B_i
//                     (two trees each carry N/2; a GPU is inner in one, a leaf in the other,
//                     so it sends N up and N down);
//                     G > g: intra-node reduce-scatter, double binary tree over the n nodes
//                     on N/g per GPU (one NIC each), intra-node all-gather:
//                     2 [(g-1) alpha_i + (g-1)/g N / B_i] + 2 ceil(log2 n) alpha_e + 2 (N/g) / B_e
//   all_gather, reduce_scatter
//               ring  (G-1) alpha + (G-1)/G N / B
//   all_to_all  direct (every GPU sends N/G to every other one at once):
//                     G <= g: (G-1) alpha_i + (G-1)/G N / B_i;
//                     G > g: max[(g-1) alpha_i + (g-1)/G N / B_i, (G-g) alpha_e + (G-g)/G N / B_e]
//   send_recv   direct alpha + N / B (the inter-node link when G > g: some pairs cross nodes)
//
// `auto` takes the fastest algorithm that applies. With a fit for the collective and the link
// class (interconnect.calibration), `auto` uses it instead ("fitted"):
//   time = alpha_fit + N x factor(G) x beta(N),
// beta = 1 / bus_bytes_s, or with a ramp (a bus bandwidth that saturates, as NCCL's does while
// it grows its chunks and channels with the size) 1 / ramp_bus_bytes_s up to ramp_from_bytes,
// 1 / bus_bytes_s from ramp_to_bytes, straight in log2(N) between; alpha as measured, the bus
// bandwidth carried to other G by the busbw factor. A size outside the fit's min_bytes ..
// max_bytes is predicted by extending the line, and the prediction says so.
// Which fit (fit_for): the collective's own at G, else its own at the nearest GPU count
// ("derived": the floor as measured there, the bus bandwidth carried by the busbw factor),
// else another collective's over the same link, nearest in kind and then in GPU count
// ("derived": its floor, its bus bandwidth times this collective's busbw factor, i.e. the
// bytes this algorithm's (G-1) or 2(G-1) steps move per GPU; nccl-tests defines busbw so that
// it is comparable across collectives). The floor is not scaled by the step count: in the
// shipped one-node H100 runs it is the launch and synchronisation cost (all_reduce,
// all_gather and reduce_scatter on 4 GPUs: 23, 22 and 21 us for 6, 3 and 3 ring steps).
// Nearest in kind: all_to_all and send_recv take all_gather, reduce_scatter, all_reduce (no
// reduction first); all_gather takes reduce_scatter, all_reduce; reduce_scatter takes
// all_gather, all_reduce; all_reduce takes reduce_scatter, all_gather.
// A hardware file without `interconnect` but with interconnect_bytes_s > 0: that bandwidth is
// the one link (as if every GPU were on one node), latency 0.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/model/spec.hpp"

namespace modsim::sim {

enum class collective { all_reduce, all_gather, reduce_scatter, all_to_all, send_recv };
enum class comm_algorithm { ring, tree, direct, fitted };
enum class link_class { intra_node, inter_node };

const char* to_string(collective c);
const char* to_string(comm_algorithm a);
const char* to_string(link_class l);
// "all_reduce" ... "send_recv"; nccl-tests' spellings "alltoall" and "sendrecv" too.
std::optional<collective> find_collective(std::string_view text);
std::optional<comm_algorithm> find_comm_algorithm(std::string_view text);
std::optional<link_class> find_link_class(std::string_view text);
// "all_reduce, all_gather, reduce_scatter, all_to_all, send_recv" (for messages).
const char* collective_names();

// nccl-tests' busbw / algbw factor.
double busbw_factor(collective c, int gpus);

// A byte count: digits with an optional binary suffix K (1024), M (1024^2), G (1024^3) or
// T (1024^4), as nccl-tests reads -b/-e. Throws modsim::error(bad_input) naming `key`.
std::int64_t parse_bytes(std::string_view text, const std::string& key);

// The interconnect the model uses: the `interconnect` object, else interconnect_bytes_s as
// the intra-node link (gpus_per_node 0: no node boundary), else bad input naming the file.
interconnect_spec effective_interconnect(const hardware_spec& hw);

// The algorithms that apply to a collective (auto chooses among them).
std::vector<comm_algorithm> algorithms_for(collective c);

// The alpha-beta time of one algorithm (the formulas above). (Named collective_time, not
// model_time: sim/cost/predict.hpp has a struct sim::model_time that a function would hide.) Throws
// modsim::error(bad_input) when G < 2, G > g is not a multiple of g, G > g without an inter-node link, or the algorithm
// does not apply to the collective. `file` names the hardware file in messages.
double collective_time(collective c, comm_algorithm a, std::int64_t bytes, int gpus, const interconnect_spec& ic,
                       const std::string& file = "");

struct comm_request {
  collective op = collective::all_reduce;
  std::int64_t bytes = 0;
  int gpus = 2;
  std::optional<comm_algorithm> algorithm;  // nullopt = auto
};

struct comm_candidate {
  comm_algorithm algorithm = comm_algorithm::ring;
  double time_s = 0;
};

struct comm_prediction {
  collective op = collective::all_reduce;
  std::int64_t bytes = 0;
  int gpus = 0;
  int gpus_per_node = 0;  // 0 = unknown (interconnect_bytes_s only)
  int nodes = 1;
  comm_algorithm algorithm = comm_algorithm::ring;
  double time_s = 0;
  double algbw_bytes_s = 0;
  double busbw_bytes_s = 0;
  link_class link = link_class::intra_node;
  std::string link_name;
  bool calibrated = false;
  // Where time_s comes from: "fitted" (a fit of this collective at this GPU count, its bus
  // bandwidth from its own rows), "derived" (a fit of another GPU count or collective, carried
  // as the header says; a note names it), "analytic" (the alpha-beta model of the links).
  std::string source = "analytic";
  // The same for each term: floor_source fitted | given (the fit's floor was fixed, not
  // fitted: collective_fit::floor_source) | derived | analytic; bandwidth_source fitted |
  // derived | analytic.
  std::string floor_source = "analytic";
  std::string bandwidth_source = "analytic";
  std::optional<collective_fit> fit;     // the fit used, when calibrated
  bool outside_fit_range = false;        // the fit used outside the sizes it was fitted on
  std::vector<comm_candidate> analytic;  // every alpha-beta algorithm that applies, in algorithms_for order
  std::vector<std::string> notes;
};

// The link class G GPUs use: inter-node when G > gpus_per_node (> 0).
link_class link_for(int gpus, const interconnect_spec& ic);

// The fit for (collective, link class), preferring one measured at `gpus`, else the nearest
// GPU count; nullptr when none.
const collective_fit* find_fit(const interconnect_spec& ic, collective c, link_class l, int gpus);

// The fit `auto` uses for c: find_fit's, else another collective's (nearest in kind, then in
// GPU count; the header); nullptr when the link has none.
const collective_fit* fit_for(const interconnect_spec& ic, collective c, link_class l, int gpus);

// The fitted time (the formula above) of `bytes` per GPU over `gpus` GPUs.
double fitted_time(const collective_fit& f, collective c, std::int64_t bytes, int gpus);

// One collective on `hw`.
comm_prediction predict_collective(const hardware_spec& hw, const comm_request& r);

}  // namespace modsim::sim
