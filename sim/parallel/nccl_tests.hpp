#pragma once
// Reads the table that nccl-tests' all_reduce_perf, all_gather_perf, reduce_scatter_perf,
// alltoall_perf and sendrecv_perf print (github.com/NVIDIA/nccl-tests):
//
//   # nThread 1 nGpus 8 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 ...
//   #  Rank  0 Group  0 Pid  1234 on  host device  0 [0x18] NVIDIA H100 80GB HBM3
//   #                          out-of-place                       in-place
//   #  size  count  type  redop  root  time  algbw  busbw #wrong  time  algbw  busbw #wrong
//   #   (B) (elements)                 (us) (GB/s) (GB/s)          (us) (GB/s) (GB/s)
//         8      2 float    sum    -1  33.52  0.00  0.00     0  32.12  0.00  0.00     0
//   # Avg bus bandwidth    : 190.7
//
// Lines starting with '#' are headers; the column-name line says which columns a row has
// (`redop` and `root` appear or not depending on the collective and the nccl-tests version;
// older versions call #wrong `error`). A launcher's prefix on each line (srun --label's
// "0: ", Open MPI --tag-output's "[1,0]<stdout>:") is dropped. A data row starts with a digit; other lines (NCCL's own
// log, "NCCL version ...") are skipped. Times are microseconds, bandwidths GB/s (1e9 B/s).
// N/A may stand in the #wrong columns and the in-place block. The GPU count is the number of
// "# Rank" lines, else nThread x nGpus of the header line; the node count the number of
// distinct hosts on the Rank lines (0 when there are none). The collective comes from the
// "# Collective test starting: X_perf" line when present, else from the file's name
// (all_reduce, all_gather, reduce_scatter, alltoall, sendrecv), else it is unknown.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/parallel/comm.hpp"

namespace modsim::sim {

struct nccl_row {
  std::int64_t bytes = 0;  // the `size` column
  std::int64_t count = 0;  // elements
  std::string type;        // float, half, ...
  double time_s = 0;       // out-of-place
  double algbw_bytes_s = 0;
  double busbw_bytes_s = 0;
  std::optional<double> in_place_time_s;  // absent when N/A
  int line = 0;                           // 1-based
};

struct nccl_table {
  std::string file;
  std::optional<collective> op;
  int gpus = 0;   // 0 = unknown
  int nodes = 0;  // 0 = unknown
  std::vector<nccl_row> rows;
  std::optional<double> avg_busbw_bytes_s;  // the "# Avg bus bandwidth" footer
};

// The collective an nccl-tests binary or output file is named after ("all_reduce_perf",
// "results/alltoall_perf-8gpu.txt"), or nullopt.
std::optional<collective> collective_from_name(std::string_view name);

// Parses the text of one nccl-tests run. Throws modsim::error(bad_input) as
// "FILE: line L: reason" for a malformed row, and "FILE: no data rows" when there are none.
nccl_table parse_nccl_tests(std::string_view text, const std::string& file);
nccl_table load_nccl_tests(const std::string& path);

}  // namespace modsim::sim
