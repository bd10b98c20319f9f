#include "launch/slurm_hostlist.h"

#include <gtest/gtest.h>

namespace bigmac::launch {
namespace {

using Hosts = std::vector<std::string>;

TEST(SlurmHostlist, FirstHostTakesTheFirstValueOfEveryBracket) {
  EXPECT_EQ(first_host("n[1-2]"), "n1");
  EXPECT_EQ(first_host("gpu[07-08,12],cpu3"), "gpu07");
  EXPECT_EQ(first_host("a[1-2]b[3,5]"), "a1b3");
  EXPECT_EQ(first_host("login01"), "login01");
  EXPECT_EQ(first_host("n2,n1"), "n2");
  EXPECT_EQ(first_host(""), "");
}

TEST(SlurmHostlist, ExpandsRangesKeepingZeroPadding) {
  EXPECT_EQ(*expand_hostlist("n[1-3],m"), (Hosts{"n1", "n2", "n3", "m"}));
  EXPECT_EQ(*expand_hostlist("gpu[07-08,12]"), (Hosts{"gpu07", "gpu08", "gpu12"}));
  EXPECT_EQ(*expand_hostlist("a[1-2]b[3-4]"), (Hosts{"a1b3", "a1b4", "a2b3", "a2b4"}));
  EXPECT_FALSE(expand_hostlist("n[1-"));
  EXPECT_FALSE(expand_hostlist("n[3-1]"));
  EXPECT_FALSE(expand_hostlist("n[x]"));
}

TEST(SlurmHostlist, ExpandsPerNodeCounts) {
  EXPECT_EQ(*expand_node_counts("2(x3),1"), (std::vector<int>{2, 2, 2, 1}));
  EXPECT_EQ(*expand_node_counts("4"), (std::vector<int>{4}));
  EXPECT_FALSE(expand_node_counts("2(x"));
  EXPECT_FALSE(expand_node_counts("two"));
}

TEST(SlurmHostlist, ExpandsTaskLists) {
  EXPECT_EQ(*expand_task_list("0-1,3"), (std::vector<int>{0, 1, 3}));
  EXPECT_EQ(*expand_task_list("2"), (std::vector<int>{2}));
  EXPECT_FALSE(expand_task_list("a-b"));
}

}  // namespace
}  // namespace bigmac::launch
