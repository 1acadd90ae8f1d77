#include "mpi_ops/postscale.h"

namespace horde {

Postscale PostscaleOf(const Response& response, int size) {
  Postscale postscale;
  postscale.factor = response.postscale;
  if (response.reduce_op == ReduceOp::kAverage) postscale.divisor = size;
  return postscale;
}

}  // namespace horde
