// The audit over project-shaped fixtures (tests/audit/fixtures/): each clean version gives no
// finding, each planted version exactly the findings listed here, and this repository's own
// examples/ and configs/ give none.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "audit/project_audit.h"
#include "proc/posix_process_runner.h"

namespace bigmac::audit {
namespace {

using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

const std::string kFixtures = std::string(BIGMAC_SOURCE_DIR) + "/tests/audit/fixtures/";

ProjectAudit audit_of(const std::vector<std::string>& paths) {
  proc::PosixProcessRunner runner;
  auto result = audit_project(AuditOptions{paths, BIGMAC_BIN_DIR, "python3"}, runner);
  if (!result) {
    std::string text;
    for (const Error& e : result.error()) text += e.format() + "\n";
    ADD_FAILURE() << text;
    return {};
  }
  return std::move(*result);
}

/// "code file:line setting" with the fixture directory left out.
std::vector<std::string> findings_of(const ProjectAudit& audit, const std::string& dir) {
  std::vector<std::string> out;
  for (const Finding& f : audit.findings) {
    std::string file = f.file.starts_with(dir) ? f.file.substr(dir.size()) : f.file;
    out.push_back(std::string(finding_code(f.kind)) + " " + file + ":" + std::to_string(f.line) +
                  (f.setting ? " " + std::string(info(*f.setting).name) : ""));
  }
  return out;
}

const Finding& finding_at(const ProjectAudit& audit, FindingKind kind, const std::string& file_end,
                          int line) {
  for (const Finding& f : audit.findings) {
    if (f.kind == kind && f.file.ends_with(file_end) && f.line == line) return f;
  }
  throw std::runtime_error("no such finding: " + file_end + ":" + std::to_string(line));
}

class CleanFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(CleanFixture, GivesNoFinding) {
  const std::string dir = kFixtures + GetParam() + "/clean/";
  const ProjectAudit audit = audit_of({dir});
  EXPECT_THAT(findings_of(audit, dir), ::testing::IsEmpty());
  EXPECT_GE(audit.facts.places.size(), 8u);  // it did read the project
}

INSTANTIATE_TEST_SUITE_P(Fixtures, CleanFixture,
                         ::testing::Values("seed001", "megatron", "hf", "torchtitan"));

TEST(PlantedFixture, Seed001) {
  const std::string dir = kFixtures + "seed001/planted/";
  const ProjectAudit audit = audit_of({dir});
  EXPECT_THAT(findings_of(audit, dir), ElementsAreArray({
                                           "constraint configs/pp4.yaml:3 pp_size",
                                           "derived-written configs/pp4.yaml:9 global_batch",
                                           "wrong-layer configs/pp4.yaml:18 devices",
                                           "wrong-layer launch.sh:15 micro_batch_size",
                                           "conflict launch.sh:15 micro_batch_size",
                                           "wrong-layer launch.sh:16 split_points",
                                           "conflict launch.sh:16 split_points",
                                           "no-stage model.py:24",
                                           "unordered-layers model.py:25 layer_ids",
                                           "no-stage model.py:28",
                                           "no-config-print train.py:24",
                                       }));
  EXPECT_THAT(finding_at(audit, FindingKind::kConstraint, "configs/pp4.yaml", 3).message,
              HasSubstr("world_size 6 (nnodes 1 at " + dir + "launch.sh:4 × nproc_per_node 6 at " +
                        dir + "launch.sh:5) is not divisible by pp_size 4"));
  const Finding& conflict = finding_at(audit, FindingKind::kConflict, "launch.sh", 15);
  EXPECT_THAT(conflict.message, HasSubstr("train.py:15 argparse default = 8 → " + dir +
                                          "configs/pp4.yaml:7 config file = 2 → " + dir +
                                          "launch.sh:15 launch script = 4 (wins)"));
  EXPECT_THAT(conflict.message, HasSubstr("never takes effect"));
  EXPECT_THAT(conflict.fix, HasSubstr("once, at " + dir + "configs/pp4.yaml:7 (schedule layer)"));
  EXPECT_THAT(audit.unchecked, ::testing::Contains(HasSubstr("global batch")));
}

TEST(PlantedFixture, Megatron) {
  const std::string dir = kFixtures + "megatron/planted/";
  const ProjectAudit audit = audit_of({dir});
  EXPECT_THAT(findings_of(audit, dir), ElementsAreArray({
                                           "conflict configs/gpt_345m.yaml:4 pp_size",
                                           "no-layer-id gpt_model.py:22 layer_ids",
                                           "no-stage gpt_model.py:35",
                                           "no-stage gpt_model.py:37",
                                           "no-config-print pretrain_gpt.py:16",
                                           "conflict pretrain_gpt.sbatch:14 nnodes",
                                           "wrong-layer pretrain_gpt.sbatch:20 num_layers",
                                           "wrong-layer pretrain_gpt.sbatch:21 micro_batch_size",
                                           "conflict pretrain_gpt.sbatch:21 micro_batch_size",
                                           "wrong-layer pretrain_gpt.sbatch:22 global_batch",
                                           "derived-written pretrain_gpt.sbatch:22 global_batch",
                                           "constraint pretrain_gpt.sbatch:22 global_batch",
                                       }));
  EXPECT_THAT(finding_at(audit, FindingKind::kConstraint, "pretrain_gpt.sbatch", 22).message,
              HasSubstr("global batch 100 (" + dir +
                        "pretrain_gpt.sbatch:22) is not a multiple of "
                        "micro_batch_size 8 (" +
                        dir + "pretrain_gpt.sbatch:21) × dp 4 (derived) = 32"));
  EXPECT_THAT(
      finding_at(audit, FindingKind::kConflict, "pretrain_gpt.sbatch", 14).message,
      HasSubstr("#SBATCH directive = 2 → " + dir + "pretrain_gpt.sbatch:14 launch script = 4"));
}

TEST(PlantedFixture, HuggingFace) {
  const std::string dir = kFixtures + "hf/planted/";
  const ProjectAudit audit = audit_of({dir});
  EXPECT_THAT(findings_of(audit, dir), ElementsAreArray({
                                           "wrong-layer model/config.json:8 devices",
                                           "no-stage modeling.py:17",
                                           "no-layer-id modeling.py:18 layer_ids",
                                           "no-stage modeling.py:20",
                                           "no-config-print run_clm.py:20",
                                           "conflict run_clm.sbatch:9 nnodes",
                                           "wrong-layer run_clm.sbatch:11 micro_batch_size",
                                           "conflict run_clm.sbatch:11 micro_batch_size",
                                           "conflict train_args.json:4 gradient_accumulation_steps",
                                           "derived-written train_args.json:5 global_batch",
                                           "constraint train_args.json:5 global_batch",
                                       }));
  EXPECT_THAT(finding_at(audit, FindingKind::kConstraint, "train_args.json", 5).message,
              HasSubstr("× dp 4 (derived) = 128, but global batch = 96"));
}

TEST(PlantedFixture, Torchtitan) {
  const std::string dir = kFixtures + "torchtitan/planted/";
  const ProjectAudit audit = audit_of({dir});
  EXPECT_THAT(findings_of(audit, dir),
              ElementsAreArray({
                  "wrong-layer run_train.sh:13 micro_batch_size",
                  "conflict run_train.sh:13 micro_batch_size",
                  "conflict torchtitan/models/llama3/__init__.py:5 num_layers",
                  "constraint torchtitan/models/llama3/__init__.py:5 num_layers",
                  "no-stage torchtitan/models/llama3/model.py:18",
                  "unordered-layers torchtitan/models/llama3/model.py:19 layer_ids",
                  "no-stage torchtitan/models/llama3/model.py:23",
                  "no-config-print torchtitan/train.py:16",
                  "derived-written train_configs/llama3_debug.toml:17 dp",
                  "constraint train_configs/llama3_debug.toml:19 pp_size",
              }));
  EXPECT_THAT(finding_at(audit, FindingKind::kConstraint, "torchtitan/models/llama3/__init__.py", 5)
                  .message,
              HasSubstr("num_layers 2 (" + dir +
                        "torchtitan/models/llama3/__init__.py:5) is less than "
                        "pp_size 4"));
}

TEST(RepositoryExamples, ExamplesAndConfigsGiveNoFinding) {
  const ProjectAudit audit = audit_of(
      {std::string(BIGMAC_SOURCE_DIR) + "/examples", std::string(BIGMAC_SOURCE_DIR) + "/configs"});
  EXPECT_THAT(findings_of(audit, BIGMAC_SOURCE_DIR), ::testing::IsEmpty());
  EXPECT_GE(audit.facts.files.size(), 10u);
}

}  // namespace
}  // namespace bigmac::audit
