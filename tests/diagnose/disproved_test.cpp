// A cause that a later fact of the same attempt disproves is not offered: a port that could not
// be bound, once every rank joined the process group.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "diagnose/catalog.h"
#include "diagnose/diagnoser.h"
#include "diagnose/metric_rules.h"
#include "logs/rank_log.h"

namespace bigmac::diagnose {
namespace {

// What torchrun's second agent on one host prints when the first already serves the c10d
// rendezvous store (torch 1.13, torch/csrc/distributed/c10d/socket.cpp), before it connects.
const std::string kAgentBind =
    "W20261130 23:57:25.996483 12797 socket.cpp:426] [c10d] The server socket has failed to "
    "bind to [::]:42271 (errno: 98 - Address already in use).\n"
    "W20261130 23:57:26.012205 12797 socket.cpp:426] [c10d] The server socket has failed to "
    "bind to 0.0.0.0:42271 (errno: 98 - Address already in use).\n";

logs::RankLog rank_log(int rank, bool joined) {
  std::string text = rank == 0 ? kAgentBind : std::string();
  if (joined) {
    text += R"({"ev":"pg_ready","rank":)" + std::to_string(rank) +
            R"(,"t":1,"init_ms":5,"world_size":2,"backend":"gloo"})" + "\n";
  }
  auto loaded = logs::load_text(text, "rank" + std::to_string(rank) + ".log",
                                logs::LogFormat::kAuto, rank);
  logs::RankLog log = loaded.ranks.empty() ? logs::RankLog() : loaded.ranks.front();
  log.rank = rank;
  return log;
}

bool offers_port_in_use(bool rank1_joined) {
  auto catalog = builtin_catalog();
  EXPECT_TRUE(catalog.has_value());
  auto diagnoser = Diagnoser::create(std::move(*catalog));
  EXPECT_TRUE(diagnoser.has_value());
  const std::vector<logs::RankLog> logs = {rank_log(0, true), rank_log(1, rank1_joined)};
  LaunchFacts facts;
  facts.planned_world_size = 2;
  facts.processes_started = 2;
  MetricInput input;
  input.logs = logs;
  input.launch = &facts;
  const std::vector<Diagnosis> all = diagnoser->diagnose(input);
  return std::any_of(all.begin(), all.end(),
                     [](const Diagnosis& d) { return d.klass == kPortInUseClass; });
}

TEST(DisprovedCauses, APortThatCouldNotBeBoundIsACauseWhileTheGroupDidNotForm) {
  EXPECT_TRUE(offers_port_in_use(/*rank1_joined=*/false));
}

TEST(DisprovedCauses, APortThatCouldNotBeBoundIsNoCauseOnceEveryRankJoinedTheGroup) {
  EXPECT_FALSE(offers_port_in_use(/*rank1_joined=*/true));
}

}  // namespace
}  // namespace bigmac::diagnose
