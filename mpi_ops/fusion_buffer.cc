#include "mpi_ops/fusion_buffer.h"

#include "core/operation_name.h"
#include "core/rank_agreement.h"
#include "mpi_ops/mpi_transport.h"

namespace horde {
namespace mpi {

Status FusionBuffer::Bind(FusionCopier* copier, const Response& response) {
  const Status bound = copier->Bind(&buffer_);
  // Within what every rank has held, the buffer does not grow (so cannot fail). Beyond
  // it, the ranks agree first: all execute the same responses, so all get here together.
  if (copier->total_bytes() <= agreed_bytes_) return bound;
  MpiTransport transport(context_);
  HORDE_RETURN_IF_ERROR(AgreeAllSucceeded(&transport, bound,
                                          OperationName("allreduce", response.names),
                                          RankNames(context_->topology().world_ranks)));
  agreed_bytes_ = copier->total_bytes();
  return Status::Ok();
}

}  // namespace mpi
}  // namespace horde
