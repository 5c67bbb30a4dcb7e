#pragma once
// A CPU with round numbers, shared by the calibration, prediction and decode-fit tests: 100
// GFLOP/s matmul, 10 GFLOP/s vector, 10 GB/s, 1 us per launch.
#include "sim/model/spec.hpp"

namespace modsim::sim::test {

inline hardware_spec round_cpu() {
  hardware_spec h;
  h.name = "round";
  h.kind = hardware_kind::cpu;
  h.peak_matmul_flops = {100e9, 100e9, 100e9};
  h.peak_vector_flops = {10e9, 10e9, 10e9};
  h.memory_bandwidth_bytes_s = 10e9;
  h.sm_count = 2;
  h.kernel_launch_s = 1e-6;
  return h;
}

}  // namespace modsim::sim::test
