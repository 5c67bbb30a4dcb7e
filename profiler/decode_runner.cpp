#include "profiler/decode_runner.hpp"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.hpp"

namespace modsim::profiler {

kernels::decode_shape decode_shape_of(const point& p) {
  if (!kernels::is_decode(p.op))
    throw input_error("", "op", std::string(kernels::to_string(p.op)) + " is not a decode op");
  const kernels::block_shape& b = p.shape;
  kernels::decode_shape s;
  s.batch = b.batch;
  s.max_context = b.seq_len + 1;
  s.d_model = b.d_model;
  s.n_heads = b.n_heads;
  s.n_kv_heads = b.n_kv_heads;
  s.d_head = b.d_head;
  s.d_ff = b.d_ff;
  s.mlp = b.mlp;
  s.predictor_hidden = p.predictor_hidden;
  s.routing = routing_of(p.decode_routing);
  s.pad_capacity = p.pad_capacity > 0 ? p.pad_capacity : 1.0;
  switch (p.op) {
    case kernels::op::decode_dense:
      s.layers = {{false}};
      break;
    case kernels::op::decode_mod:
      s.layers = {{true}};
      break;
    default: {
      if (!p.model) throw input_error("", "model", "decode_step needs its model");
      for (const sim::layer_plan& l : sim::plan_layers(*p.model)) s.layers.push_back({l.routed});
      s.vocab = p.model->vocab_size;
      break;
    }
  }
  s.validate();
  return s;
}

decode_lengths decode_lengths_of(const point& p) {
  const auto B = static_cast<std::size_t>(p.shape.batch);
  decode_lengths l;
  l.dense.assign(B, p.shape.seq_len);
  l.routed.assign(B, routed_tokens(p.shape.capacity, p.shape.seq_len));
  return l;
}

void evict_host_caches() {
  static const std::size_t bytes = [] {
    std::size_t llc = std::size_t{32} << 20;
    std::ifstream f("/sys/devices/system/cpu/cpu0/cache/index3/size");
    std::string text;
    if (f >> text && !text.empty()) {
      std::size_t scale = 1;
      if (text.back() == 'K') scale = std::size_t{1} << 10;
      if (text.back() == 'M') scale = std::size_t{1} << 20;
      if (scale > 1) text.pop_back();
      try {
        llc = std::stoull(text) * scale;
      } catch (const std::exception&) {
      }
    }
    return std::clamp<std::size_t>(llc + (std::size_t{64} << 20), std::size_t{64} << 20, std::size_t{1} << 30);
  }();
  static std::vector<unsigned char> buffer(bytes);
  static unsigned char round = 0;
  std::memset(buffer.data(), ++round, buffer.size());
  volatile unsigned char sink = 0;
  for (std::size_t i = 0; i < buffer.size(); i += 4096) sink = static_cast<unsigned char>(sink + buffer[i]);
}

}  // namespace modsim::profiler
