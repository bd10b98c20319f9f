#include "diagnose/log_context.h"

#include <re2/re2.h>

#include <algorithm>
#include <array>
#include <map>
#include <vector>

#include "core/checked_integer.h"

namespace bigmac::diagnose {
namespace {

constexpr std::array<std::string_view, 15> kContexts = {"one_process",
                                                        "no_sign_of_parallel",
                                                        "stack_without_parallel",
                                                        "parallel",
                                                        "data_parallel_module",
                                                        "pipeline",
                                                        "no_pipeline",
                                                        "torchrun",
                                                        "accelerate",
                                                        "deepspeed",
                                                        "slurm",
                                                        "mpirun",
                                                        "not_torchrun",
                                                        "nccl_info",
                                                        "progress_bar"};

// The words that name a launcher, a world size, nn.DataParallel, pipeline stages or
// tensor-parallel layers, as one automaton: most lines name none and cost one search.
const RE2& context_words() {
  static const RE2 re(
      "(?P<torchrun>torchrun|torch\\.distributed\\.(?:run|launch|elastic)|torch/distributed/"
      "(?:run|launch|elastic)|Killing subprocess \\d)|"
      "(?P<accelerate>accelerate launch|accelerate[./]commands|\\bAccelerator\\()|"
      "(?P<deepspeed>deepspeed[./]launcher|deepspeed\\.runtime)|(?P<slurm>\\bsrun: |"
      "slurmstepd)|(?P<mpirun>\\bmpirun\\b|\\bORTE\\b|\\bPMIX\\b)|"
      "(?:--nproc[-_]per[-_]node[= ]|\\bWORLD_SIZE=|\\bworld_size[=:] ?)(?P<world>\\d+)|"
      "(?P<ranked>\\blocal_rank\\b|\\bLOCAL_RANK\\b|DistributedDataParallel\\(|"
      "DistributedSampler\\()|"
      "(?P<dp>nn/parallel/data_parallel\\.py|parallel_apply\\.py|torch\\.nn\\.DataParallel)|"
      "(?P<pipe>PipelineStage|distributed/pipelining|PipelineSchedule|Schedule1F1B|"
      "ScheduleGPipe|PipelineModule|PipelineEngine|pipe/engine\\.py|pipeline_model_parallel|"
      "pipeline-model-parallel)|"
      "(?P<tp>tensor_parallel|tensor[-_]model[-_]parallel|module_inject|ColumnParallelLinear|"
      "RowParallelLinear|VocabParallelEmbedding|fairscale)|"
      "(?P<bar>\\d{1,3}%\\|[^|]{0,80}\\|\\s*\\d+/\\d+)");
  return re;
}

// `", line <digits>, in ` somewhere in the line.
bool is_frame(std::string_view text) {
  constexpr std::string_view kLine = "\", line ";
  for (std::size_t at = text.find(kLine); at != std::string_view::npos;
       at = text.find(kLine, at + 1)) {
    std::size_t i = at + kLine.size();
    const std::size_t digits = i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
    if (i > digits && text.substr(i, 5) == ", in ") return true;
  }
  return false;
}

}  // namespace

void LogContext::read(const logs::TextLine& line) {
  if (line.at.rank >= 0 && ranks.size() < 4096 && line.at.rank != last_rank_) {
    ranks.insert(line.at.rank);
    last_rank_ = line.at.rank;
  }
  // NCCL's INFO lines can be a third of a log: a substring test, and a capture only for the
  // few that say a variable is set.
  if (const auto info = line.text.find("NCCL INFO "); info != std::string::npos) {
    nccl_info = true;
    static const RE2 kSet("^(NCCL_\\w+) set by environment to");
    re2::StringPiece rest(line.text.data() + info + 10, line.text.size() - info - 10);
    std::string name;
    if (set_by_environment.size() < 64 && RE2::PartialMatch(rest, kSet, &name))
      set_by_environment.insert(std::move(name));
    return;
  }
  // A traceback's frame (`  File "x.py", line 12, in f`): a substring test until the first one,
  // nothing after. As an alternative of the automaton it sent every frame line through the
  // capture pass: 2.0 s instead of 1.4 s CPU for `diagnose` of the 100 MB benchmark log.
  if (!stack_frames) stack_frames = is_frame(line.text);
  const RE2& re = context_words();
  // The DFA says whether a line names anything (most do not); only then the captures.
  if (!re.Match(line.text, 0, line.text.size(), RE2::UNANCHORED, nullptr, 0)) return;
  static const int kGroups = re.NumberOfCapturingGroups() + 1;
  thread_local std::vector<re2::StringPiece> g;
  g.assign(static_cast<std::size_t>(kGroups), {});
  // A line may name several things (`torchrun --nproc_per_node=2`): every match counts.
  for (std::size_t pos = 0; pos < line.text.size();) {
    if (!re.Match(line.text, pos, line.text.size(), RE2::UNANCHORED, g.data(), kGroups)) break;
    pos = static_cast<std::size_t>(g[0].data() - line.text.data()) +
          std::max<std::size_t>(g[0].size(), 1);
    take(g);
  }
}

void LogContext::take(const std::vector<re2::StringPiece>& g) {
  const auto found = [&](const char* name) {
    // Group indices by name, looked up once.
    static const std::map<std::string, int, std::less<>> index = [] {
      std::map<std::string, int, std::less<>> m;
      for (const auto& [n, i] : context_words().NamedCapturingGroups()) m.emplace(n, i);
      return m;
    }();
    const auto it = index.find(std::string_view(name));
    if (it == index.end()) return std::string_view();
    const re2::StringPiece& piece = g[static_cast<std::size_t>(it->second)];
    return piece.data() != nullptr ? std::string_view(piece.data(), piece.size())
                                   : std::string_view();
  };
  for (const char* name : {"torchrun", "accelerate", "deepspeed", "slurm", "mpirun"}) {
    // A launcher above another (accelerate and DeepSpeed start torchrun's agent) names the run.
    if (!found(name).empty() && (launcher.empty() || launcher == "torchrun")) launcher = name;
  }
  if (const std::string_view n = found("world"); !n.empty())
    world_size = std::max(world_size, parse_integer_as<int>(n).value_or(0));
  if (!found("ranked").empty()) rank_words = true;
  if (!found("dp").empty()) data_parallel_module = true;
  if (!found("pipe").empty()) pipeline_words = true;
  if (!found("tp").empty()) tensor_parallel_words = true;
  if (!found("bar").empty()) progress_bar = true;
}

void LogContext::merge(const LogContext& other) {
  ranks.insert(other.ranks.begin(), other.ranks.end());
  world_size = std::max(world_size, other.world_size);
  if (launcher.empty() || launcher == "torchrun") {
    if (!other.launcher.empty()) launcher = other.launcher;
  }
  data_parallel_module = data_parallel_module || other.data_parallel_module;
  rank_words = rank_words || other.rank_words;
  if (known_world_size == 0 || other.known_world_size > known_world_size)
    known_world_size = other.known_world_size;
  stages = std::max(stages, other.stages);
  pipeline_words = pipeline_words || other.pipeline_words;
  tensor_parallel_words = tensor_parallel_words || other.tensor_parallel_words;
  stack_frames = stack_frames || other.stack_frames;
  nccl_info = nccl_info || other.nccl_info;
  progress_bar = progress_bar || other.progress_bar;
  set_by_environment.insert(other.set_by_environment.begin(), other.set_by_environment.end());
}

bool LogContext::parallel() const {
  const bool other_rank = std::any_of(ranks.begin(), ranks.end(), [](int r) { return r > 0; });
  return other_rank || world_size >= 2 || known_world_size >= 2 || !launcher.empty() ||
         data_parallel_module || rank_words || tensor_parallel_words || stages > 1 ||
         pipeline_words;
}

bool LogContext::holds(std::string_view name) const {
  if (name == "one_process") return known_world_size == 1 && !data_parallel_module;
  if (name == "no_sign_of_parallel") return !parallel();
  if (name == "stack_without_parallel") return stack_frames && !parallel();
  if (name == "parallel") return parallel();
  if (name == "data_parallel_module") return data_parallel_module;
  if (name == "pipeline") return pipeline();
  if (name == "no_pipeline") return stages == 1;
  if (name == "not_torchrun") return parallel() && launcher != "torchrun";
  if (name == "nccl_info") return nccl_info;
  if (name == "progress_bar") return progress_bar;
  if (name.starts_with("set:")) return set_by_environment.count(std::string(name.substr(4))) > 0;
  return !launcher.empty() && name == launcher;
}

std::span<const std::string_view> context_names() { return kContexts; }

}  // namespace bigmac::diagnose
