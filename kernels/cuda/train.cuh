#pragma once
// The CUDA backend's way to a trainer (kernels/cuda_train.hpp) on its own device context, so
// that the training ops run on the backend's stream and its events time them.
#include <memory>

#include "kernels/cuda/device_context.cuh"
#include "kernels/cuda_train.hpp"

namespace modsim::kernels::cuda {

std::unique_ptr<train::cuda_trainer> make_trainer(std::shared_ptr<detail::device_context> ctx,
                                                  const train::layer_params& params, dtype type);

}  // namespace modsim::kernels::cuda
