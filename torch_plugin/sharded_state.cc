#include "torch_plugin/sharded_state.h"

#include <torch/serialize/archive.h>

#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>

#include "horde/error.h"

namespace horde {
namespace torch_ops {
namespace {

using ::torch::optim::Optimizer;
using ::torch::optim::OptimizerParamState;
// A parameter's state as its serialize() writes it: tensors and scalars by name.
using Fields = std::map<std::string, c10::IValue>;

Error InvalidArgument(const std::string& message) {
  return Error(Status::InvalidArgument("ShardedOptimizer: " + message));
}

// A parameter's key in Optimizer::state(): its TensorImpl's address, as a pointer
// (LibTorch 2) or as the text of one (LibTorch 1).
template <typename StateMap>
typename StateMap::key_type StateKey(const at::Tensor& param) {
  using Key = typename StateMap::key_type;
  if constexpr (std::is_same_v<Key, std::string>) {
    std::ostringstream text;
    text << static_cast<const void*>(param.unsafeGetTensorImpl());
    return text.str();
  } else {
    return static_cast<Key>(param.unsafeGetTensorImpl());
  }
}

const OptimizerParamState* FindState(const Optimizer& optimizer, const at::Tensor& param) {
  const auto& state = optimizer.state();
  const auto found = state.find(StateKey<std::decay_t<decltype(state)>>(param));
  return found == state.end() ? nullptr : found->second.get();
}

void SetState(Optimizer& optimizer, const at::Tensor& param,
              std::unique_ptr<OptimizerParamState> value) {
  auto& state = optimizer.state();
  state[StateKey<std::decay_t<decltype(state)>>(param)] = std::move(value);
}

::torch::serialize::InputArchive Reread(::torch::serialize::OutputArchive& out) {
  std::ostringstream bytes;
  out.save_to(bytes);
  const std::string data = bytes.str();
  ::torch::serialize::InputArchive in;
  in.load_from(data.data(), data.size());
  return in;
}

Fields FieldsOf(const OptimizerParamState& state) {
  ::torch::serialize::OutputArchive out;
  state.serialize(out);
  ::torch::serialize::InputArchive in = Reread(out);
  Fields fields;
  for (const std::string& key : in.keys()) {
    c10::IValue value;
    // "training" is the archive's own module attribute, not the state's.
    if (key != "training" && in.try_read(key, value)) fields.emplace(key, std::move(value));
  }
  return fields;
}

// A state of `like`'s type holding `fields`.
std::unique_ptr<OptimizerParamState> WithFields(const OptimizerParamState& like,
                                                const Fields& fields) {
  ::torch::serialize::OutputArchive out;
  for (const auto& [key, value] : fields) out.write(key, value);
  ::torch::serialize::InputArchive in = Reread(out);
  std::unique_ptr<OptimizerParamState> state = like.clone();
  state->serialize(in);
  return state;
}

c10::IValue Copy(const c10::IValue& value) {
  return value.isTensor() ? c10::IValue(value.toTensor().clone()) : value;
}

std::string Shape(const at::Tensor& t) {
  std::ostringstream text;
  text << t.sizes();
  return text.str();
}

// whole's parameters in order, checked against the sharded optimizer's.
std::vector<at::Tensor> WholeParameters(const Optimizer& whole,
                                        const std::vector<at::Tensor>& params,
                                        const std::vector<int>& groups) {
  std::vector<at::Tensor> mine;
  std::vector<int> my_groups;
  for (size_t g = 0; g < whole.param_groups().size(); ++g) {
    for (const at::Tensor& p : whole.param_groups()[g].params()) {
      mine.push_back(p);
      my_groups.push_back(static_cast<int>(g));
    }
  }
  if (mine.size() != params.size()) {
    throw InvalidArgument("the whole optimizer has " + std::to_string(mine.size()) +
                          " parameters, this one " + std::to_string(params.size()) +
                          " trainable ones; make it over the same parameters, in order");
  }
  for (size_t i = 0; i < mine.size(); ++i) {
    if (my_groups[i] != groups[i] || !mine[i].sizes().equals(params[i].sizes())) {
      throw InvalidArgument("parameter " + std::to_string(i) + " of the whole optimizer (group " +
                            std::to_string(my_groups[i]) + ", shape " + Shape(mine[i]) +
                            ") is not this optimizer's (group " + std::to_string(groups[i]) +
                            ", shape " + Shape(params[i]) + ")");
    }
  }
  return mine;
}

// True when every bucket's value of `key` is a tensor shaped like its slice.
bool Sliced(const std::vector<Fields>& fields, const std::vector<at::Tensor>& slices,
            const std::string& key) {
  for (size_t k = 0; k < fields.size(); ++k) {
    const auto found = fields[k].find(key);
    if (found == fields[k].end() || !found->second.isTensor() ||
        !found->second.toTensor().sizes().equals(slices[k].sizes())) {
      return false;
    }
  }
  return true;
}

}  // namespace

void GatherWholeState(const ParameterShards& shards, const Optimizer& sharded,
                      const std::vector<at::Tensor>& params, const std::vector<int>& groups,
                      Optimizer& whole, bool write) {
  const std::vector<at::Tensor> whole_params = WholeParameters(whole, params, groups);
  std::map<size_t, Fields> per_param;
  std::map<size_t, const OptimizerParamState*> like;  // a state of each parameter's bucket
  for (size_t g = 0; g < whole.param_groups().size(); ++g) {
    std::vector<size_t> buckets;
    std::vector<at::Tensor> slices;
    std::vector<Fields> fields;
    std::set<std::string> keys;  // ordered: every rank gathers in the same order
    for (size_t b = 0; b < shards.shards().size(); ++b) {
      if (shards.group_of(b) != static_cast<int>(g)) continue;
      const OptimizerParamState* state = FindState(sharded, shards.shards()[b]);
      buckets.push_back(b);
      slices.push_back(shards.shards()[b]);
      fields.push_back(state != nullptr ? FieldsOf(*state) : Fields());
      for (const auto& field : fields.back()) keys.insert(field.first);
      for (const ShardBucket::Member& m : shards.buckets()[b].members) {
        if (state != nullptr) like.emplace(m.tensor, state);
      }
    }
    for (const std::string& key : keys) {
      if (Sliced(fields, slices, key)) {
        std::vector<at::Tensor> values;
        for (const Fields& f : fields) values.push_back(f.at(key).toTensor());
        for (auto& [i, tensor] : shards.Unshard(buckets, values)) per_param[i][key] = tensor;
        continue;
      }
      for (size_t k = 0; k < buckets.size(); ++k) {
        const auto found = fields[k].find(key);
        if (found == fields[k].end()) continue;
        for (const ShardBucket::Member& m : shards.buckets()[buckets[k]].members) {
          per_param[m.tensor].emplace(key, Copy(found->second));
        }
      }
    }
  }
  if (!write) return;
  whole.state().clear();
  for (const auto& [i, fields] : per_param) {
    SetState(whole, whole_params[i], WithFields(*like.at(i), fields));
  }
  for (size_t g = 0; g < whole.param_groups().size(); ++g) {
    whole.param_groups()[g].set_options(sharded.param_groups()[g].options().clone());
  }
}

void ShardWholeState(const ParameterShards& shards, const Optimizer& whole,
                     const std::vector<at::Tensor>& params, const std::vector<int>& groups,
                     Optimizer& sharded) {
  const std::vector<at::Tensor> whole_params = WholeParameters(whole, params, groups);
  sharded.state().clear();
  for (size_t b = 0; b < shards.shards().size(); ++b) {
    const auto& members = shards.buckets()[b].members;
    std::vector<Fields> member_fields;
    const OptimizerParamState* first = FindState(whole, whole_params[members[0].tensor]);
    for (const ShardBucket::Member& m : members) {
      const OptimizerParamState* state = FindState(whole, whole_params[m.tensor]);
      if ((state == nullptr) != (first == nullptr)) {
        throw InvalidArgument("parameters " + std::to_string(members[0].tensor) + " and " +
                              std::to_string(m.tensor) +
                              " share a bucket, but only one of them has optimizer state");
      }
      member_fields.push_back(state != nullptr ? FieldsOf(*state) : Fields());
    }
    if (first == nullptr) continue;  // not stepped yet
    const at::Tensor& slice = shards.shards()[b];
    Fields slice_fields;
    for (const auto& [key, value] : member_fields[0]) {
      const at::Tensor& param = params[members[0].tensor];
      if (!value.isTensor() || value.toTensor().dim() == 0 ||
          value.toTensor().numel() != param.numel()) {
        slice_fields.emplace(key, Copy(value));
        continue;
      }
      std::map<size_t, at::Tensor> whole_tensors;
      for (size_t k = 0; k < members.size(); ++k) {
        const auto found = member_fields[k].find(key);
        if (found == member_fields[k].end() || !found->second.isTensor()) {
          throw InvalidArgument("parameter " + std::to_string(members[k].tensor) +
                                "'s optimizer state has no tensor '" + key + "'");
        }
        whole_tensors[members[k].tensor] = found->second.toTensor();
      }
      slice_fields.emplace(key, shards.Shard(b, whole_tensors).to(slice.device()));
    }
    SetState(sharded, slice, WithFields(*first, slice_fields));
  }
  for (size_t g = 0; g < sharded.param_groups().size(); ++g) {
    sharded.param_groups()[g].set_options(whole.param_groups()[g].options().clone());
  }
}

}  // namespace torch_ops
}  // namespace horde
