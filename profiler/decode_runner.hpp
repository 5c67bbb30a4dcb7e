#pragma once
// Measuring decode points (decode_dense, decode_mod, decode_step; docs/contracts.md "Decode
// measurements"): each point gets a decode state of its own (kernels/decode.hpp) with a cache
// as after a prefill of `seq_len` tokens (routed layers hold routed_tokens(capacity, seq_len)
// of them), and one sample is one step of `batch` new tokens with round(capacity·batch) of
// them forced into every routed layer, appended to the cache's next slot but not committed, so
// every sample sees the same cache. Samples of a single layer (decode_dense, decode_mod) start
// cold, the device's and the host's caches evicted (as inside a model); decode_step samples
// run back to back, as in a decode loop. Each is timed on the host's steady clock around step
// + synchronize: a decode step's host work (launches, the routed count's read-back) is part of
// what it costs.
#include <functional>
#include <memory>

#include "kernels/decode.hpp"
#include "profiler/grid.hpp"

namespace modsim::profiler {

// Makes the decode state of a point: (shape, weights, dtype, graph) → state. The command line
// passes the CPU or CUDA factory; graph = in_cuda_graph(the point's decode_routing).
using decode_factory = std::function<std::unique_ptr<kernels::decode_state>(
    const kernels::decode_shape&, const kernels::decode_weights&, kernels::dtype, bool graph)>;

// The decode shape of point `p` (one dense or routed layer, or p.model's layers and LM head),
// its cache sized for seq_len + 1 tokens. Throws bad_input for a point that is not a decode op.
kernels::decode_shape decode_shape_of(const point& p);

// The cache lengths a point's state starts from: seq_len per sequence at dense layers and
// routed_tokens(capacity, seq_len) at routed ones (as after a top-k prefill).
struct decode_lengths {
  std::vector<std::int64_t> dense, routed;
};
decode_lengths decode_lengths_of(const point& p);

// Evicts the host's caches: writes and reads back a buffer 64 MiB larger than the last-level
// cache (read from /sys; 32 MiB when unknown; at most 1 GiB). Before each sample of a single decode layer
// (decode_dense, decode_mod), so that its weights and cache come from memory as inside a model
// whose other layers ran since (decode_step runs its layers back to back and is not flushed).
void evict_host_caches();

}  // namespace modsim::profiler
