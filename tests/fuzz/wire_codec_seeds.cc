// Writes the wire codec fuzzer's seed corpus: valid encodings of the request and
// response lists negotiation really exchanges, so that mutation starts from the
// structure of the format rather than from random bytes. Generated at build time (into
// the build tree) instead of checked in, so the seeds follow the format when it changes.
// Usage: horde_wire_codec_seeds <output directory>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "core/wire_codec.h"

namespace horde {
namespace {

Request GradientRequest(int rank, const std::string& name, TensorShape shape) {
  Request r;
  r.rank = rank;
  r.name = name;
  r.shape = std::move(shape);
  r.reduce_op = ReduceOp::kAverage;
  r.postscale = 0.5;
  return r;
}

std::vector<RequestList> SeedRequestLists() {
  RequestList empty;
  RequestList shutdown;
  shutdown.shutdown = true;

  RequestList training;
  training.requests = {GradientRequest(1, "grad.fc1.weight", {64, 784}),
                       GradientRequest(1, "grad.fc1.bias", {64}), GradientRequest(1, "scalar", {})};
  Request broadcast = GradientRequest(0, "broadcast.parameters", {3, 3, 16});
  broadcast.op = OpType::kBroadcast;
  broadcast.dtype = DataType::kInt64;
  broadcast.root = 1;
  Request grouped = GradientRequest(0, "grad.group.0", {10});
  grouped.group = "optimizer.group";
  grouped.group_size = 2;
  grouped.dtype = DataType::kBFloat16;
  Request join = GradientRequest(0, kJoinName, {});
  join.op = OpType::kJoin;
  RequestList mixed;
  mixed.requests = {broadcast, grouped, join};
  return {empty, shutdown, training, mixed};
}

std::vector<ResponseList> SeedResponseLists() {
  ResponseList empty;
  ResponseList shutdown;
  shutdown.shutdown = true;

  Response fused;
  fused.names = {"grad.fc1.weight", "grad.fc1.bias"};
  fused.reduce_op = ReduceOp::kAverage;
  fused.tensor_sizes = {64 * 784, 64};
  Response allgather;
  allgather.op = OpType::kAllgather;
  allgather.names = {"gathered"};
  allgather.first_dims = {3, 5};
  Response error;
  error.kind = Response::Kind::kError;
  error.names = {"mismatched"};
  error.error_message = "shape mismatch on rank 1: [2, 3] vs [3, 2]";
  ResponseList round;
  round.responses = {fused, allgather, error};
  return {empty, shutdown, round};
}

bool WriteSeed(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
  return static_cast<bool>(out);
}

}  // namespace
}  // namespace horde

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <output directory>\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  bool ok = true;
  int i = 0;
  for (const auto& list : horde::SeedRequestLists()) {
    const std::string path = dir + "/request_list_" + std::to_string(i++);
    ok &= horde::WriteSeed(path, horde::EncodeRequestList(list));
  }
  i = 0;
  for (const auto& list : horde::SeedResponseLists()) {
    const std::string path = dir + "/response_list_" + std::to_string(i++);
    ok &= horde::WriteSeed(path, horde::EncodeResponseList(list));
  }
  if (!ok) std::fprintf(stderr, "horde_wire_codec_seeds: cannot write into %s\n", dir.c_str());
  return ok ? 0 : 1;
}
