#include "torch_plugin/counted_allreduce.h"

#include <utility>

#include "horde/error.h"
#include "torch_plugin/submission.h"

namespace horde {
namespace torch_ops {

void AllreduceInPlaceCounted(const std::vector<at::Tensor>& tensors,
                             const std::vector<std::string>& names, const std::string& group,
                             const std::vector<size_t>& tags, ReduceOp op, double prescale,
                             double postscale, int32_t process_set,
                             const std::shared_ptr<CompletionCounter>& done) {
  std::string context;
  const std::shared_ptr<Runtime> runtime = RequireRuntime(process_set, &context);
  std::vector<Request> requests(tensors.size());
  std::vector<TensorEntry> entries(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    Request& request = requests[i];
    request.op = OpType::kAllreduce;
    if (group.empty()) request.name = names[i];
    request.reduce_op = op;
    request.prescale = prescale;
    request.postscale = postscale;
    Describe(tensors[i], tensors[i], &request, &entries[i]);
    entries[i].callback = [done, tag = tags[i], context](const Status& status) {
      done->Complete(tag, InContext(status, context));
    };
  }
  // Counted in before the background thread can count any of them out.
  done->Expect(tensors.size());
  Status status = group.empty()
                      ? runtime->Enqueue(std::move(requests), std::move(entries))
                      : runtime->EnqueueGroup(group, std::move(requests), std::move(entries));
  if (status.ok()) return;
  status = InContext(status, context);
  for (size_t tag : tags) done->Complete(tag, status);
  throw Error(status);
}

}  // namespace torch_ops
}  // namespace horde
