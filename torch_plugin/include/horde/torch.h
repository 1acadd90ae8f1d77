#pragma once

// horde for C++ LibTorch training loops; the one header to include.
//
//   horde::init();
//   auto model = Net();
//   horde::torch::broadcast_parameters(model, 0);
//   torch::optim::SGD sgd(model->parameters(), lr * horde::size());
//   horde::torch::DistributedOptimizer opt(sgd, model->named_parameters());
//   for (...) { opt.zero_grad(); loss.backward(); opt.step(); }
//
// Failures throw horde::Error. Link the CMake target horde::torch (find_package(horde)).

#include "horde/basics.h"
#include "horde/error.h"
#include "horde/process_set.h"
#include "horde/torch/broadcast_helpers.h"
#include "horde/torch/collectives.h"
#include "horde/torch/distributed_optimizer.h"
#include "horde/torch/handle.h"
#include "horde/torch/sharded_optimizer.h"
