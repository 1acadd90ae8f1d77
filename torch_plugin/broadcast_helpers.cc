#include "horde/torch/broadcast_helpers.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/full.h>
#include <torch/serialize/archive.h>

#include <cstring>
#include <sstream>
#include <vector>

#include "horde/basics.h"
#include "horde/torch/collectives.h"

namespace horde {
namespace torch {
namespace {

// The optimizer's state through its own save(), which is generic over optimizer types
// and keys the state by parameter position, not by address as the in-memory state is,
// so that another rank can load it onto its own parameters. load() restores no options
// (LibTorch 1.13), so each group's options are written beside it.
std::string Serialize(const ::torch::optim::Optimizer& optimizer) {
  ::torch::serialize::OutputArchive archive;
  ::torch::serialize::OutputArchive state(archive.compilation_unit());
  optimizer.save(state);
  archive.write("state", state);
  const auto& groups = optimizer.param_groups();
  for (size_t i = 0; i < groups.size(); ++i) {
    ::torch::serialize::OutputArchive options(archive.compilation_unit());
    groups[i].options().serialize(options);
    archive.write("options." + std::to_string(i), options);
  }
  std::ostringstream out;
  archive.save_to(out);
  return out.str();
}

void Deserialize(const std::string& bytes, ::torch::optim::Optimizer& optimizer) {
  auto& groups = optimizer.param_groups();
  at::Device device = at::kCPU;  // load the state where this rank's parameters live
  for (const auto& group : groups) {
    if (!group.params().empty()) device = group.params().front().device();
  }
  ::torch::serialize::InputArchive archive;
  archive.load_from(bytes.data(), bytes.size(), device);
  ::torch::serialize::InputArchive state;
  archive.read("state", state);
  // load() only adds the root's entries; a rank must not keep state the root lacks.
  optimizer.state().clear();
  optimizer.load(state);
  for (size_t i = 0; i < groups.size(); ++i) {
    ::torch::serialize::InputArchive saved;
    archive.read("options." + std::to_string(i), saved);
    auto options = groups[i].options().clone();  // of this optimizer's options type
    options->serialize(saved);
    groups[i].set_options(std::move(options));
  }
}

// root_rank's `bytes` on every rank: first the length, then the bytes as a uint8 tensor.
std::string BroadcastBytes(const std::string& bytes, int root_rank, const std::string& name,
                           const ProcessSet& process_set) {
  at::Tensor length = at::full({1}, static_cast<int64_t>(bytes.size()), at::kLong);
  broadcast_(length, root_rank, name + ".length", process_set);
  at::Tensor data = at::empty({length.item<int64_t>()}, at::kByte);
  if (rank() == root_rank) std::memcpy(data.data_ptr(), bytes.data(), bytes.size());
  broadcast_(data, root_rank, name + ".bytes", process_set);
  return std::string(static_cast<const char*>(data.data_ptr()), data.numel());
}

}  // namespace

void broadcast_parameters(const ::torch::OrderedDict<std::string, at::Tensor>& named_tensors,
                          int root_rank, const ProcessSet& process_set) {
  // All start at once so they can be fused; a failure still waits for the rest (~Handle).
  std::vector<Handle> handles;
  handles.reserve(named_tensors.size());
  for (const auto& item : named_tensors) {
    handles.push_back(
        broadcast_async_(item.value(), root_rank, "broadcast." + item.key(), process_set));
  }
  for (Handle& handle : handles) handle.wait();
}

void broadcast_parameters(const ::torch::nn::Module& module, int root_rank,
                          const ProcessSet& process_set) {
  ::torch::OrderedDict<std::string, at::Tensor> state;
  for (const auto& item : module.named_parameters()) state.insert(item.key(), item.value());
  for (const auto& item : module.named_buffers()) {
    if (item.value().defined()) state.insert(item.key(), item.value());
  }
  broadcast_parameters(state, root_rank, process_set);
}

void broadcast_optimizer_state(::torch::optim::Optimizer& optimizer, int root_rank,
                               const ProcessSet& process_set) {
  const bool root = rank() == root_rank;
  std::string bytes = BroadcastBytes(root ? Serialize(optimizer) : std::string(), root_rank,
                                     "broadcast_optimizer_state", process_set);
  if (!root) Deserialize(bytes, optimizer);
}

}  // namespace torch
}  // namespace horde
