#include "core/response_builder.h"

#include <gtest/gtest.h>

namespace horde {
namespace {

// Rank `rank`'s allreduce 'x' of `dtype`, submitted from `call_site`.
Request Allreduce(int rank, DataType dtype, const std::string& call_site) {
  Request r;
  r.rank = rank;
  r.name = "x";
  r.dtype = dtype;
  r.shape = {4};
  r.call_site = call_site;
  return r;
}

TEST(ResponseBuilder, AMismatchSaysWhereEveryRankCalledTheOperation) {
  Response response = BuildResponse({Allreduce(0, DataType::kFloat32, "disagree.py:6"),
                                     Allreduce(1, DataType::kInt32, "disagree.py:9")},
                                    {});
  EXPECT_EQ(response.kind, Response::Kind::kError);
  EXPECT_EQ(response.error_message,
            "ranks disagree on the dtype of allreduce 'x': float32 on rank 0; int32 on rank 1 "
            "(rank 0 called it at disagree.py:6, rank 1 at disagree.py:9)");
}

TEST(ResponseBuilder, RanksCallingFromOneSiteAreNamedTogether) {
  Response response = BuildResponse(
      {Allreduce(0, DataType::kFloat32, "train.py:57"),
       Allreduce(1, DataType::kInt32, "train.py:57"), Allreduce(2, DataType::kInt32, "")},
      {});
  EXPECT_EQ(response.error_message,
            "ranks disagree on the dtype of allreduce 'x': float32 on rank 0; int32 on ranks 1,2 "
            "(ranks 0,1 called it at train.py:57)");
}

TEST(ResponseBuilder, AMismatchWithoutCallSitesSaysNothingMore) {
  Response response = BuildResponse(
      {Allreduce(0, DataType::kFloat32, ""), Allreduce(1, DataType::kInt32, "")}, {});
  EXPECT_EQ(response.error_message,
            "ranks disagree on the dtype of allreduce 'x': float32 on rank 0; int32 on rank 1");
}

TEST(ResponseBuilder, CallSitesDoNotMakeAgreeingRequestsDisagree) {
  Response response = BuildResponse(
      {Allreduce(0, DataType::kFloat32, "a.py:1"), Allreduce(1, DataType::kFloat32, "b.py:2")}, {});
  EXPECT_EQ(response.kind, Response::Kind::kCollective) << response.error_message;
}

}  // namespace
}  // namespace horde
