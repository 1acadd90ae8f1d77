#include "core/response_cache.h"

#include <gtest/gtest.h>

namespace horde {
namespace {

Request AllreduceRequest(const std::string& name, TensorShape shape = {4}) {
  Request r;
  r.name = name;
  r.shape = std::move(shape);
  return r;
}

Response AllreduceResponse(const std::string& name, int64_t elements = 4) {
  Response response;
  response.names = {name};
  response.tensor_sizes = {elements};
  return response;
}

void Put(ResponseCache* cache, const std::string& name) {
  Request mine = AllreduceRequest(name);
  cache->Put(AllreduceResponse(name), &mine);
}

TEST(ResponseCacheTest, FindsHitsAndChangedSignatures) {
  ResponseCache cache(4);
  Put(&cache, "a");
  uint32_t position = 99;
  EXPECT_EQ(cache.Find(AllreduceRequest("a"), &position), ResponseCache::Match::kHit);
  EXPECT_EQ(position, 0u);
  EXPECT_EQ(cache.Find(AllreduceRequest("a", {5}), &position), ResponseCache::Match::kChanged);
  Request scaled = AllreduceRequest("a");
  scaled.postscale = 0.5;
  EXPECT_EQ(cache.Find(scaled, &position), ResponseCache::Match::kChanged);
  EXPECT_EQ(cache.Find(AllreduceRequest("b"), &position), ResponseCache::Match::kMiss);
}

TEST(ResponseCacheTest, AnEntryWithoutARequestOfThisRankNeverMatches) {
  ResponseCache cache(4);
  cache.Put(AllreduceResponse("a"), nullptr);
  uint32_t position = 0;
  EXPECT_EQ(cache.Find(AllreduceRequest("a"), &position), ResponseCache::Match::kChanged);
}

TEST(ResponseCacheTest, EvictsTheLeastRecentlyUsedAndReusesItsPosition) {
  ResponseCache cache(3);
  Put(&cache, "a");
  Put(&cache, "b");
  Put(&cache, "c");
  cache.Touch(0);  // "a" is now the most recent; "b" the least
  Put(&cache, "d");
  EXPECT_EQ(cache.NamesByPosition(), (std::vector<std::string>{"a", "d", "c"}));
  EXPECT_EQ(cache.size(), 3u);
  EXPECT_TRUE(cache.Holds(1, "d"));
  EXPECT_FALSE(cache.Holds(1, "b"));
}

TEST(ResponseCacheTest, ErasedPositionsAreReusedLowestFirst) {
  ResponseCache cache(8);
  for (const char* name : {"a", "b", "c", "d"}) Put(&cache, name);
  cache.Erase(2);
  cache.Erase(0);
  Put(&cache, "e");
  Put(&cache, "f");
  Put(&cache, "g");
  EXPECT_EQ(cache.NamesByPosition(), (std::vector<std::string>{"e", "b", "f", "d", "g"}));
  EXPECT_EQ(cache.num_positions(), 5u);
}

TEST(ResponseCacheTest, PuttingACachedNameAgainReplacesIt) {
  ResponseCache cache(4);
  Put(&cache, "a");
  Request bigger = AllreduceRequest("a", {8});
  cache.Put(AllreduceResponse("a", 8), &bigger);
  EXPECT_EQ(cache.size(), 1u);
  uint32_t position = 0;
  ASSERT_EQ(cache.Find(bigger, &position), ResponseCache::Match::kHit);
  EXPECT_EQ(cache.response(position).tensor_sizes, std::vector<int64_t>{8});
}

TEST(ResponseCacheTest, CapacityZeroStoresNothing) {
  ResponseCache cache(0);
  Put(&cache, "a");
  uint32_t position = 0;
  EXPECT_EQ(cache.Find(AllreduceRequest("a"), &position), ResponseCache::Match::kMiss);
  EXPECT_EQ(cache.num_positions(), 0u);
}

TEST(ResponseCacheTest, SplitsAFusedAllreduceIntoOneResponsePerName) {
  Response fused;
  fused.names = {"a", "b"};
  fused.tensor_sizes = {3, 5};
  fused.postscale = 0.5;
  std::vector<Response> singles = SplitResponse(fused);
  ASSERT_EQ(singles.size(), 2u);
  EXPECT_EQ(singles[1].names, std::vector<std::string>{"b"});
  EXPECT_EQ(singles[1].tensor_sizes, std::vector<int64_t>{5});
  EXPECT_EQ(singles[1].postscale, 0.5);
}

TEST(ResponseCacheTest, SplitsFusedAllgathersWithEachTensorsFirstDimensionsAndFusedReducescatters) {
  Response fused;
  fused.op = OpType::kAllgather;
  fused.names = {"a", "b"};
  fused.first_dims = {1, 2, 3, 0};  // a: 1 row on rank 0, 2 on rank 1; b: 3 and 0
  std::vector<Response> singles = SplitResponse(fused);
  ASSERT_EQ(singles.size(), 2u);
  EXPECT_EQ(singles[0].names, std::vector<std::string>{"a"});
  EXPECT_EQ(singles[0].first_dims, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(singles[1].first_dims, (std::vector<int64_t>{3, 0}));

  Response fused_reducescatter = fused;
  fused_reducescatter.op = OpType::kReducescatter;
  fused_reducescatter.first_dims.clear();
  std::vector<Response> scattered = SplitResponse(fused_reducescatter);
  ASSERT_EQ(scattered.size(), 2u);
  EXPECT_EQ(scattered[1].names, std::vector<std::string>{"b"});

  Response fused_broadcast;
  fused_broadcast.op = OpType::kBroadcast;
  fused_broadcast.names = {"a", "b"};
  EXPECT_TRUE(SplitResponse(fused_broadcast).empty());
}

}  // namespace
}  // namespace horde
