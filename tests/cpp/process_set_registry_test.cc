#include "core/process_set_registry.h"

#include <gtest/gtest.h>

namespace horde {
namespace {

// Runtimes are left null here: the registry's bookkeeping does not look inside them,
// and a null runtime is what a rank outside a set holds.
TEST(ProcessSetRegistry, GlobalSetIsIdZeroOverEveryRankAndCannotBeRemoved) {
  ProcessSetRegistry registry;
  registry.SetGlobal(3, nullptr);
  const ProcessSetRegistry::Entry* global = nullptr;
  ASSERT_TRUE(registry.Find(0, &global).ok());
  EXPECT_EQ(global->ranks, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(registry.IdOf({0, 1, 2}), 0);
  ProcessSetRegistry::Entry removed;
  Status s = registry.Remove(0, &removed);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "the global process set (id 0) cannot be removed");
}

TEST(ProcessSetRegistry, IdsCountUpInCallOrderAndAreNeverReused) {
  ProcessSetRegistry registry;
  registry.SetGlobal(4, nullptr);
  EXPECT_EQ(registry.Add({0, 1}, nullptr), 1);
  EXPECT_EQ(registry.Add({2, 3}, nullptr), 2);
  ProcessSetRegistry::Entry removed;
  ASSERT_TRUE(registry.Remove(1, &removed).ok());
  EXPECT_EQ(removed.ranks, (std::vector<int>{0, 1}));
  EXPECT_EQ(registry.IdOf({0, 1}), -1);
  EXPECT_EQ(registry.Add({0, 1}, nullptr), 3);
  // A shutdown forgets every set but keeps counting, so a stale id stays unknown.
  EXPECT_EQ(registry.Clear().size(), 3u);
  registry.SetGlobal(4, nullptr);
  EXPECT_EQ(registry.Add({1}, nullptr), 4);
}

TEST(ProcessSetRegistry, UnknownIdNamesTheKnownOnes) {
  ProcessSetRegistry registry;
  registry.SetGlobal(2, nullptr);
  registry.Add({1}, nullptr);
  const ProcessSetRegistry::Entry* entry = nullptr;
  Status s = registry.Find(7, &entry);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "unknown process set id 7 (removed, or never added); the sets known are [0, 1]");
}

TEST(ProcessSetRanks, AreSortedAndCheckedForEmptinessRangeAndDuplicates) {
  std::vector<int> ranks{3, 0, 2};
  ASSERT_TRUE(ValidateProcessSetRanks(4, &ranks).ok());
  EXPECT_EQ(ranks, (std::vector<int>{0, 2, 3}));

  std::vector<int> empty;
  EXPECT_EQ(ValidateProcessSetRanks(4, &empty).message(),
            "a process set needs at least one rank; got []");
  std::vector<int> out_of_range{1, 4};
  EXPECT_EQ(ValidateProcessSetRanks(4, &out_of_range).message(),
            "process set [1, 4]: rank 4 is out of range; ranks are 0 to 3");
  std::vector<int> negative{-1};
  EXPECT_EQ(ValidateProcessSetRanks(4, &negative).message(),
            "process set [-1]: rank -1 is out of range; ranks are 0 to 3");
  std::vector<int> twice{2, 1, 2};
  EXPECT_EQ(ValidateProcessSetRanks(4, &twice).message(),
            "process set [2, 1, 2]: rank 2 appears more than once");
}

}  // namespace
}  // namespace horde
