#pragma once

#include <mpi.h>

#include "horde/data_type.h"
#include "horde/status.h"

namespace horde {
namespace mpi {

// MPI datatypes and reduction operations for horde's dtypes. MPI has no 16-bit float
// types, so float16 and bfloat16 get a 2-byte datatype and user-defined reductions that
// compute in float32; bool reduces with logical operations (Sum and Max are "or", Min
// and Product are "and"); uint8 Min and Max use reductions of horde's own (MPICH 4.0
// compares MPI_UINT8_T as signed). Created once per runtime, freed with it.
class MpiDatatypes {
 public:
  MpiDatatypes();
  ~MpiDatatypes();
  MpiDatatypes(const MpiDatatypes&) = delete;
  MpiDatatypes& operator=(const MpiDatatypes&) = delete;

  MPI_Datatype Datatype(DataType dtype) const;
  // Average reduces as Sum; the caller applies the 1/size post-scale.
  MPI_Op Op(DataType dtype, ReduceOp op) const;

 private:
  MPI_Datatype float16_ = MPI_DATATYPE_NULL;
  MPI_Datatype bfloat16_ = MPI_DATATYPE_NULL;
  // Indexed [is_bfloat16][ReduceOp]; Average shares Sum's op.
  MPI_Op half_ops_[2][kNumReduceOps] = {};
  // uint8 Min and Max: unsigned comparisons of horde's own (see mpi_datatypes.cc).
  MPI_Op uint8_min_ = MPI_OP_NULL;
  MPI_Op uint8_max_ = MPI_OP_NULL;
};

}  // namespace mpi
}  // namespace horde
