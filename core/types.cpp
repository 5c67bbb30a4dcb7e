#include "core/types.hpp"

#include <string>

#include "core/error.hpp"

namespace modsim {

const char* to_string(dtype t) {
  switch (t) {
    case dtype::fp32:
      return "fp32";
    case dtype::bf16:
      return "bf16";
    case dtype::fp16:
      return "fp16";
  }
  return "?";
}

const char* to_string(backend_kind b) { return b == backend_kind::cuda ? "cuda" : "cpu"; }

const char* to_string(const std::optional<backend_kind>& b) { return b ? to_string(*b) : ""; }

const char* to_string(mlp_kind m) { return m == mlp_kind::gelu ? "gelu" : "swiglu"; }

const char* to_string(moe_variant v) {
  switch (v) {
    case moe_variant::none:
      return "none";
    case moe_variant::moe:
      return "moe";
    case moe_variant::staged:
      return "staged";
    case moe_variant::integrated:
      return "integrated";
  }
  return "?";
}

const char* to_string(decode_routing r) { return r == decode_routing::sync ? "sync" : "pad"; }

const char* to_string(decode_run r) {
  switch (r) {
    case decode_run::sync:
      return "sync";
    case decode_run::pad:
      return "pad";
    case decode_run::pad_graph:
      return "graph";
  }
  return "?";
}

decode_routing routing_of(decode_run r) { return r == decode_run::sync ? decode_routing::sync : decode_routing::pad; }

bool in_cuda_graph(decode_run r) { return r == decode_run::pad_graph; }

const char* to_string(attention_impl a) { return a == attention_impl::fused ? "fused" : "unfused"; }

const char* to_string(timing_mode t) { return t == timing_mode::in_block ? "in_block" : "isolated"; }

const char* to_string(recompute r) {
  switch (r) {
    case recompute::none:
      return "none";
    case recompute::selective:
      return "selective";
    case recompute::full:
      return "full";
  }
  return "?";
}

std::optional<dtype> find_dtype(std::string_view name) {
  for (dtype t : {dtype::fp32, dtype::bf16, dtype::fp16})
    if (name == to_string(t)) return t;
  return std::nullopt;
}

std::optional<backend_kind> find_backend(std::string_view name) {
  for (backend_kind b : {backend_kind::cpu, backend_kind::cuda})
    if (name == to_string(b)) return b;
  return std::nullopt;
}

std::optional<mlp_kind> find_mlp_kind(std::string_view name) {
  for (mlp_kind m : {mlp_kind::gelu, mlp_kind::swiglu})
    if (name == to_string(m)) return m;
  return std::nullopt;
}

std::optional<moe_variant> find_moe_variant(std::string_view name) {
  for (moe_variant v : {moe_variant::none, moe_variant::moe, moe_variant::staged, moe_variant::integrated})
    if (name == to_string(v)) return v;
  return std::nullopt;
}

std::optional<decode_routing> find_decode_routing(std::string_view name) {
  for (decode_routing r : {decode_routing::sync, decode_routing::pad})
    if (name == to_string(r)) return r;
  return std::nullopt;
}

std::optional<decode_run> find_decode_run(std::string_view name) {
  for (decode_run r : {decode_run::sync, decode_run::pad, decode_run::pad_graph})
    if (name == to_string(r)) return r;
  return std::nullopt;
}

std::optional<attention_impl> find_attention_impl(std::string_view name) {
  for (attention_impl a : {attention_impl::unfused, attention_impl::fused})
    if (name == to_string(a)) return a;
  return std::nullopt;
}

std::optional<recompute> find_recompute(std::string_view name) {
  for (recompute r : {recompute::none, recompute::selective, recompute::full})
    if (name == to_string(r)) return r;
  return std::nullopt;
}

std::optional<timing_mode> find_timing_mode(std::string_view name) {
  for (timing_mode t : {timing_mode::isolated, timing_mode::in_block})
    if (name == to_string(t)) return t;
  return std::nullopt;
}

dtype parse_dtype(std::string_view name) {
  if (auto t = find_dtype(name)) return *t;
  throw input_error("", "dtype", "unknown dtype '" + std::string(name) + "' (fp32, bf16, fp16)");
}

backend_kind parse_backend(std::string_view name, const std::string& file, const std::string& key) {
  if (auto b = find_backend(name)) return *b;
  throw input_error(file, key, "unknown backend '" + std::string(name) + "' (expected cpu or cuda)");
}

attention_impl parse_attention_impl(std::string_view name, const std::string& key) {
  if (auto a = find_attention_impl(name)) return *a;
  throw input_error("", key, "unknown attention '" + std::string(name) + "' (expected unfused or fused)");
}

timing_mode parse_timing(std::string_view name, const std::string& key) {
  if (auto t = find_timing_mode(name)) return *t;
  throw input_error("", key, "unknown timing '" + std::string(name) + "' (expected isolated or in_block)");
}

recompute parse_recompute(std::string_view name, const std::string& key) {
  if (auto r = find_recompute(name)) return *r;
  throw input_error("", key, "must be none, selective or full, got '" + std::string(name) + "'");
}

int dtype_bytes(dtype t) { return t == dtype::fp32 ? 4 : 2; }

}  // namespace modsim
