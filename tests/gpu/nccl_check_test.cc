// Runs without a GPU: CUDA's and NCCL's error strings need no device.
#include "gpu_ops/nccl_check.h"

#include <gtest/gtest.h>

#include "gpu_ops/cuda_check.h"
#include "gpu_ops/gpu_ops.h"
#include "gpu_ops/nccl_datatypes.h"

namespace horde {
namespace gpu {
namespace {

TEST(NcclCheck, ErrorNamesTheOpTheCallAndNcclsText) {
  const Status status = CheckNccl(ncclInvalidArgument, "ncclAllReduce", "allreduce 'grad.fc1'");
  EXPECT_FALSE(status.ok());
  EXPECT_EQ(status.message(), std::string("allreduce 'grad.fc1': ncclAllReduce failed: ") +
                                  ncclGetErrorString(ncclInvalidArgument));
  EXPECT_TRUE(CheckNccl(ncclSuccess, "ncclAllReduce", "x").ok());
}

TEST(CudaCheck, ErrorNamesTheCallWhatItWasForAndCudasText) {
  const Status status = CheckCuda(cudaErrorMemoryAllocation, "cudaMalloc",
                                  "fusion buffer on cuda:0");
  EXPECT_FALSE(status.ok());
  EXPECT_EQ(status.message(), std::string("cudaMalloc (fusion buffer on cuda:0): ") +
                                  cudaGetErrorString(cudaErrorMemoryAllocation));
  EXPECT_TRUE(CheckCuda(cudaSuccess, "cudaMalloc", "x").ok());
}

TEST(OperationName, OneTensorOrAFusedGroup) {
  EXPECT_EQ(OperationName("allreduce", {"a"}), "allreduce 'a'");
  EXPECT_EQ(OperationName("allreduce", {"a", "b"}), "allreduce of 2 tensors ('a', 'b')");
  EXPECT_EQ(OperationName("allreduce", {"a", "b", "c", "d"}),
            "allreduce of 4 tensors ('a', 'b', 'c', ...)");
}

TEST(NcclDatatypes, TypesNcclLacksGoThroughHostStaging) {
  ncclDataType_t type;
  EXPECT_TRUE(NcclType(DataType::kBFloat16, &type));
  EXPECT_EQ(type, ncclBfloat16);
  EXPECT_FALSE(NcclType(DataType::kInt16, &type));
  EXPECT_FALSE(NcclType(DataType::kBool, &type));
}

TEST(NcclDatatypes, AverageIsNcclAvgForFloatsAndAnExactlyDividedSumForIntegers) {
  EXPECT_EQ(NcclOp(ReduceOp::kAverage, DataType::kFloat16), ncclAvg);
  EXPECT_EQ(NcclOp(ReduceOp::kAverage, DataType::kInt32), ncclSum);
  Response response;
  response.reduce_op = ReduceOp::kAverage;
  response.postscale = 2.0;
  response.dtype = DataType::kFloat32;
  EXPECT_EQ(NcclPostscale(response, 4).factor, 2.0);
  EXPECT_EQ(NcclPostscale(response, 4).divisor, 1) << "ncclAvg has divided";
  response.dtype = DataType::kInt64;
  EXPECT_EQ(NcclPostscale(response, 49).factor, 2.0);
  EXPECT_EQ(NcclPostscale(response, 49).divisor, 49) << "an exact division, not a factor of 1/49";
}

TEST(GpuOps, ThisBuildHasTheGpuPath) { EXPECT_TRUE(GpuOpsBuilt()); }

}  // namespace
}  // namespace gpu
}  // namespace horde
