#pragma once
// The names of a training layer's tensors, in the order of layer_params::tensors()
// (kernels/train.hpp), as error messages and test failures name them ("layer_params.w_q").
#include <array>

namespace modsim::kernels::train {

inline constexpr std::array<const char*, 14> tensor_names = {"router_w",
                                                             "attn_norm_g",
                                                             "w_q",
                                                             "w_k",
                                                             "w_v",
                                                             "w_o",
                                                             "mlp_norm_g",
                                                             "w_up",
                                                             "w_gate",
                                                             "w_down",
                                                             "expert_router_w",
                                                             "expert_w_up",
                                                             "expert_w_gate",
                                                             "expert_w_down"};

}  // namespace modsim::kernels::train
