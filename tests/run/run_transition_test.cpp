#include "run/run_transition.h"

#include <gtest/gtest.h>

namespace bigmac::run {
namespace {

const std::vector<std::string> kGates = {"single", "dp", "pp2", "shapes", "target"};

RunState fresh() { return RunState::fresh("r1", kGates); }

template <class A>
const A& action(const Decision& d) {
  const A* a = std::get_if<A>(&d.action);
  EXPECT_NE(a, nullptr) << "unexpected action index " << d.action.index();
  static const A empty{};
  return a ? *a : empty;
}

GateFinished passed(const std::string& gate, gates::GateInputs inputs = {}) {
  return GateFinished{gate, true, gate + " passed", {}, {}, std::move(inputs)};
}

GateFinished failed(const std::string& gate, const std::string& check, const std::string& route) {
  return GateFinished{gate, false, gate + " failed: " + check, check, route, {}};
}

// Runs gates until the first non-launch action, passing each launched gate.
Decision pass_all(Decision d) {
  while (const auto* launch = std::get_if<LaunchGate>(&d.action))
    d = decide(d.state, passed(launch->gate));
  return d;
}

TEST(RunTransition, BeginLaunchesTheFirstGate) {
  const Decision d = decide(fresh(), Begin{});
  EXPECT_EQ(action<LaunchGate>(d).gate, "single");
  EXPECT_EQ(d.state.phase(), RunPhase::kRunning);
  EXPECT_EQ(d.state.find("single")->status, GateStatus::kRunning);
  EXPECT_EQ(d.state.find("single")->attempts, 1);
  EXPECT_EQ(d.state.find("dp")->status, GateStatus::kPending);
  EXPECT_EQ(d.log, std::vector<std::string>{"single: pending -> running"});
  EXPECT_EQ(exit_code_of(d.action), ExitCode::kOk);
}

TEST(RunTransition, PassingEveryGateFinishes) {
  const Decision d = pass_all(decide(fresh(), Begin{}));
  EXPECT_EQ(action<Finish>(d).summary, "5 gates passed");
  EXPECT_EQ(d.state.phase(), RunPhase::kPassed);
  for (const GateRecord& g : d.state.gates) EXPECT_EQ(g.status, GateStatus::kPassed) << g.id;
  EXPECT_EQ(exit_code_of(d.action), ExitCode::kOk);
}

TEST(RunTransition, AFailureStopsWithItsCheckAndRoute) {
  Decision d = decide(decide(fresh(), Begin{}).state, passed("single"));
  d = decide(d.state, failed("dp", "samples_per_step", "single"));
  const auto& stop = action<StopWithFailure>(d);
  EXPECT_EQ(stop.gate, "dp");
  EXPECT_EQ(stop.check, "samples_per_step");
  EXPECT_EQ(stop.route_back, "single");
  EXPECT_EQ(d.state.phase(), RunPhase::kFailed);
  EXPECT_EQ(d.state.find("dp")->status, GateStatus::kFailed);
  EXPECT_EQ(d.state.find("pp2")->status, GateStatus::kPending);
  EXPECT_EQ(exit_code_of(d.action), ExitCode::kGateFailed);

  // resume reruns the failed gate (attempt 2) and continues.
  const Decision r = decide(d.state, Resume{});
  EXPECT_EQ(action<LaunchGate>(r).gate, "dp");
  EXPECT_EQ(r.state.find("dp")->attempts, 2);
  EXPECT_EQ(r.log.back(), "dp: failed -> running (attempt 2)");
}

TEST(RunTransition, RunOneGateNeedsItsPrerequisites) {
  const Decision refused = decide(fresh(), Begin{"pp2", "pp2", {}, {}});
  EXPECT_EQ(action<Refuse>(refused).message,
            "gate pp2 needs every earlier applicable gate passed in this run: single is pending, "
            "dp is pending "
            "(run them first, e.g. run-all --until dp)");
  EXPECT_EQ(exit_code_of(refused.action), ExitCode::kBadInput);

  Decision d = pass_all(decide(fresh(), Begin{"", "dp", {}, {}}));
  EXPECT_EQ(action<Finish>(d).summary, "2 gates passed");
  EXPECT_EQ(d.state.find("pp2")->status, GateStatus::kSkipped);
  d = decide(d.state, Begin{"pp2", "pp2", {}, {}});
  EXPECT_EQ(action<LaunchGate>(d).gate, "pp2");  // skipped, now selected
  // A failed prerequisite is rerun in this run, not by starting another.
  {
    Decision run = decide(fresh(), Begin{"", "dp", {}, {}});
    run = decide(run.state, failed("single", "finite_loss", "single"));
    const Decision again = decide(run.state, Begin{"dp", "dp", {}, {}});
    EXPECT_EQ(
        action<Refuse>(again).message,
        "gate dp needs every earlier applicable gate passed in this run: single failed (fix it and "
        "rerun it with `run single`, or `resume` this run)");
  }
  d = decide(d.state, passed("pp2"));
  EXPECT_EQ(action<Finish>(d).summary, "1 gate passed");
  EXPECT_EQ(d.state.find("shapes")->status, GateStatus::kSkipped);
}

TEST(RunTransition, BadSelectionsAreRefused) {
  EXPECT_NE(
      action<Refuse>(decide(fresh(), Begin{"dpp", "", {}, {}})).message.find("unknown gate 'dpp'"),
      std::string::npos);
  EXPECT_NE(action<Refuse>(decide(fresh(), Begin{"", "nope", {}, {}})).message.find("unknown gate"),
            std::string::npos);
  EXPECT_EQ(action<Refuse>(decide(fresh(), Begin{"pp2", "dp", {}, {}})).message,
            "--from pp2 comes after --until dp");
  EXPECT_EQ(action<Refuse>(decide(RunState{}, Begin{})).message, "no gates to run");
  // The same order check the command asks before it touches the run directory.
  EXPECT_EQ(selection_out_of_order(kGates, "pp2", "dp"), "--from pp2 comes after --until dp");
  EXPECT_EQ(selection_out_of_order(kGates, "dp", "dp"), std::nullopt);
  EXPECT_EQ(selection_out_of_order(kGates, "", "single"), std::nullopt);
  EXPECT_EQ(selection_out_of_order(kGates, "target", ""), std::nullopt);
}

TEST(RunTransition, InterruptedIsKeptOnTheGateAndResumes) {
  Decision d = decide(decide(fresh(), Begin{}).state, passed("single"));
  d = decide(d.state, Interrupted{});
  EXPECT_EQ(action<StopInterrupted>(d).gate, "dp");
  EXPECT_EQ(d.state.phase(), RunPhase::kInterrupted);
  EXPECT_EQ(d.state.find("dp")->status, GateStatus::kInterrupted);
  EXPECT_EQ(d.state.find("dp")->note, "interrupted");
  EXPECT_EQ(exit_code_of(d.action), ExitCode::kInterrupted);
  const Decision r = decide(d.state, Resume{});
  EXPECT_EQ(action<LaunchGate>(r).gate, "dp");
  EXPECT_EQ(r.state.find("single")->status, GateStatus::kPassed);
}

TEST(RunTransition, AGateLeftRunningByAKilledOrchestratorReruns) {
  RunState killed = decide(fresh(), Begin{}).state;  // saved as `running`, then SIGKILL
  const Decision r = decide(killed, Resume{});
  EXPECT_EQ(action<LaunchGate>(r).gate, "single");
  EXPECT_EQ(r.state.find("single")->attempts, 2);
  EXPECT_EQ(r.state.find("single")->note, "was running when the orchestrator stopped");
}

TEST(RunTransition, AbortedIsInfrastructure) {
  const Decision d =
      decide(decide(fresh(), Begin{}).state, GateAborted{"single", "bigmac-train not found"});
  EXPECT_EQ(action<StopWithError>(d).message, "bigmac-train not found");
  EXPECT_EQ(d.state.phase(), RunPhase::kInfrastructure);
  EXPECT_EQ(d.state.find("single")->status, GateStatus::kAborted);
  EXPECT_EQ(exit_code_of(d.action), ExitCode::kInfrastructure);
}

TEST(RunTransition, FinishingAGateThatIsNotRunningIsAnError) {
  EXPECT_EQ(exit_code_of(decide(fresh(), passed("dp")).action), ExitCode::kInfrastructure);
}

TEST(RunTransition, ChangedInputsInvalidatePassedGatesAndLaterOnes) {
  gates::GateInputs old_inputs{{{"train.seed", "1234"}, {"train.lr", "0.003"}}, "bin 100 1", "b1"};
  Decision d = decide(fresh(), Begin{"", "pp2", {}, {}});
  d = decide(d.state, passed("single", old_inputs));
  d = decide(d.state, passed("dp", old_inputs));
  d = decide(d.state, passed("pp2", old_inputs));
  ASSERT_TRUE(std::holds_alternative<Finish>(d.action));

  // Same inputs: nothing to do.
  const std::map<std::string, gates::GateInputs> same{
      {"single", old_inputs}, {"dp", old_inputs}, {"pp2", old_inputs}};
  EXPECT_EQ(action<Finish>(decide(d.state, Resume{same, {}})).summary, "3 gates passed");

  // dp now reads another seed: dp reruns, and pp2 (judged after it) too; single stays passed.
  gates::GateInputs new_inputs = old_inputs;
  new_inputs.config["train.seed"] = "7";
  const Decision r = decide(
      d.state, Resume{{{"single", old_inputs}, {"dp", new_inputs}, {"pp2", new_inputs}}, {}});
  EXPECT_EQ(action<LaunchGate>(r).gate, "dp");
  EXPECT_EQ(r.state.find("single")->status, GateStatus::kPassed);
  EXPECT_EQ(r.state.find("pp2")->status, GateStatus::kInvalidated);
  ASSERT_GE(r.log.size(), 3u);
  EXPECT_EQ(r.log[0], "dp: passed -> invalidated (train.seed changed 1234 -> 7)");
  EXPECT_EQ(r.log[1], "pp2: passed -> invalidated (gate dp reruns first)");
  EXPECT_EQ(r.log[2], "dp: invalidated -> running (attempt 2)");
}

TEST(RunTransition, TrainerAndBaselineChangesAreNamed) {
  const gates::GateInputs a{{}, "bigmac-train 100 1", "b1"};
  const gates::GateInputs b{{}, "bigmac-train 120 2", ""};
  EXPECT_EQ(a.difference(b),
            "trainer binary changed (bigmac-train 100 1 -> bigmac-train 120 2); "
            "baseline changed (b1 -> none)");
  EXPECT_EQ(a.difference(a), "");
}

TEST(RunTransition, ExplicitInvalidate) {
  Decision d = decide(decide(fresh(), Begin{}).state, passed("single"));
  d = decide(d.state, Invalidate{"single", "baseline re-recorded"});
  EXPECT_TRUE(std::holds_alternative<Continue>(d.action));
  EXPECT_EQ(d.state.find("single")->status, GateStatus::kInvalidated);
  EXPECT_TRUE(std::holds_alternative<Refuse>(decide(d.state, Invalidate{"x", "y"}).action));
}

const std::map<std::string, std::string> kNoStages = {
    {"pp2", "the target layout has no pipeline stages"},
    {"shapes", "the target layout has no pipeline stages"}};

TEST(RunTransition, GatesThatDoNotApplyAreNeverRunAndTheRunPasses) {
  const Decision begun = decide(fresh(), Begin{"", "", {}, kNoStages});
  EXPECT_EQ(begun.state.find("pp2")->status, GateStatus::kNotApplicable);
  EXPECT_EQ(begun.state.find("pp2")->note, "the target layout has no pipeline stages");
  EXPECT_EQ(begun.log.front(),
            "pp2: pending -> not applicable (the target layout has no pipeline stages)");
  Decision d = decide(begun.state, passed("single"));
  EXPECT_EQ(action<LaunchGate>(d).gate, "dp");
  d = decide(d.state, passed("dp"));
  EXPECT_EQ(action<LaunchGate>(d).gate, "target");
  d = decide(d.state, passed("target"));
  EXPECT_EQ(action<Finish>(d).summary, "3 gates passed, 2 not applicable (pp2, shapes)");
  EXPECT_EQ(d.state.phase(), RunPhase::kPassed);
  EXPECT_EQ(exit_code_of(d.action), ExitCode::kOk);
  EXPECT_EQ(d.state.find("shapes")->attempts, 0);
}

TEST(RunTransition, FromAGateWhoseEarlierApplicableGatesPassed) {
  Decision d = decide(fresh(), Begin{"", "dp", {}, kNoStages});
  d = decide(decide(d.state, passed("single")).state, passed("dp"));
  EXPECT_EQ(action<Finish>(d).summary, "2 gates passed");
  const Decision from = decide(d.state, Begin{"target", "", {}, kNoStages});
  EXPECT_EQ(action<LaunchGate>(from).gate, "target");
}

TEST(RunTransition, AGateThatDoesNotApplyCannotBeRunAlone) {
  Decision d = decide(fresh(), Begin{"", "dp", {}, kNoStages});
  d = decide(decide(d.state, passed("single")).state, passed("dp"));
  const Decision refused = decide(d.state, Begin{"pp2", "pp2", {}, kNoStages});
  EXPECT_EQ(action<Refuse>(refused).message,
            "gate pp2 does not apply: the target layout has no pipeline stages");
  EXPECT_EQ(exit_code_of(refused.action), ExitCode::kBadInput);
}

TEST(RunTransition, AGateThatAppliesAgainAfterAConfigurationChangeRuns) {
  Decision d = pass_all(decide(fresh(), Begin{"", "", {}, kNoStages}));
  EXPECT_EQ(d.state.find("pp2")->status, GateStatus::kNotApplicable);
  // parallel.pp_size set to 2 since: pp2 and shapes apply and run on resume.
  const Decision r = decide(d.state, Begin{"", "", {}, {}});
  EXPECT_EQ(r.state.find("pp2")->status, GateStatus::kRunning);
  EXPECT_EQ(action<LaunchGate>(r).gate, "pp2");
  EXPECT_TRUE(r.state.find("pp2")->note.empty());
}

}  // namespace
}  // namespace bigmac::run
