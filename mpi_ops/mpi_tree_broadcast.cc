#include "mpi_ops/mpi_tree_broadcast.h"

#include <cstring>

namespace horde {
namespace mpi {

bool MpiTreeBroadcast::Enabled(const Response& response,
                               const std::vector<TensorEntry>& entries) const {
  if (response.device != kCpuDevice || entries.empty()) return false;
  // Bytes need no arithmetic: the trees move them as bytes, whatever the dtype.
  for (const TensorEntry& e : entries) {
    if (!plan_->TreesForBroadcast(e.output->size_bytes(), 1, response.root)) return false;
  }
  return true;
}

Status MpiTreeBroadcast::Execute(std::vector<TensorEntry>& entries, const Response& response) {
  const bool root = context_->topology().rank == response.root;
  const std::vector<SpanningTree> trees = plan_->TreesRootedAt(response.root);
  timeline_->ActivityStart(response.names, "TREE_BROADCAST");
  for (TensorEntry& e : entries) {
    char* out = static_cast<char*>(e.output->data());
    const int64_t bytes = e.output->size_bytes();
    if (root && out != e.input->data() && bytes > 0) std::memcpy(out, e.input->data(), bytes);
    HORDE_RETURN_IF_ERROR(pipeline_.Broadcast(trees, out, bytes, 1));
  }
  return Status::Ok();
}

}  // namespace mpi
}  // namespace horde
