#include "adopt/command_arguments.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <map>
#include <string_view>

#include "audit/setting_catalog.h"

namespace bigmac::adopt {
namespace {

// The spellings beyond audit's catalog of parallel settings (which already knows the
// micro-batch, accumulation and sequence-length ones): the run-length, seed, lr, log and config
// flags of the usual trainers (argparse scripts, nanoGPT, Megatron-LM, torchtitan, HF Trainer).
// `batch_size` is taken as the micro-batch of one process: in a DDP script it is per rank.
const std::map<std::string, ArgumentRole, std::less<>>& extra_spellings() {
  static const std::map<std::string, ArgumentRole, std::less<>> table = {
      {"seed", ArgumentRole::kSeed},
      {"random_seed", ArgumentRole::kSeed},
      {"manual_seed", ArgumentRole::kSeed},
      {"max_steps", ArgumentRole::kMaxSteps},
      {"max_iters", ArgumentRole::kMaxSteps},
      {"max_iter", ArgumentRole::kMaxSteps},
      {"max_iterations", ArgumentRole::kMaxSteps},
      {"train_iters", ArgumentRole::kMaxSteps},
      {"train_steps", ArgumentRole::kMaxSteps},
      {"training_steps", ArgumentRole::kMaxSteps},
      {"num_steps", ArgumentRole::kMaxSteps},
      {"total_steps", ArgumentRole::kMaxSteps},
      {"steps", ArgumentRole::kMaxSteps},
      {"iters", ArgumentRole::kMaxSteps},
      {"max_train_steps", ArgumentRole::kMaxSteps},  // the transformers/accelerate examples
      {"batch_size", ArgumentRole::kMicroBatchSize},
      {"bs", ArgumentRole::kMicroBatchSize},
      {"per_device_batch_size", ArgumentRole::kMicroBatchSize},
      {"accumulate_grad_batches", ArgumentRole::kGradAccum},  // Lightning's Trainer
      {"lr", ArgumentRole::kLr},
      {"learning_rate", ArgumentRole::kLr},
      {"log_file", ArgumentRole::kLogFile},
      {"logfile", ArgumentRole::kLogFile},
      {"log_path", ArgumentRole::kLogFile},
      {"config", ArgumentRole::kConfig},
      {"config_file", ArgumentRole::kConfig},
      {"config_path", ArgumentRole::kConfig},
      {"cfg", ArgumentRole::kConfig},
      // Checkpoint and output paths (a file, or the folder one goes into).
      {"checkpoint_file", ArgumentRole::kCheckpointPath},
      {"checkpoint_path", ArgumentRole::kCheckpointPath},
      {"checkpoint_dir", ArgumentRole::kCheckpointPath},
      {"ckpt", ArgumentRole::kCheckpointPath},
      {"ckpt_path", ArgumentRole::kCheckpointPath},
      {"ckpt_file", ArgumentRole::kCheckpointPath},
      {"ckpt_dir", ArgumentRole::kCheckpointPath},
      {"snapshot_path", ArgumentRole::kCheckpointPath},
      {"save_dir", ArgumentRole::kCheckpointPath},
      {"save_path", ArgumentRole::kCheckpointPath},
      {"out_dir", ArgumentRole::kCheckpointPath},
      {"output_dir", ArgumentRole::kCheckpointPath},
      {"exp_dir", ArgumentRole::kCheckpointPath},
      {"outf", ArgumentRole::kCheckpointPath},
      // The layout a framework is told (Lightning's Trainer arguments, LightningCLI's
      // --trainer.devices): `--device` (one device's name) is another thing.
      {"devices", ArgumentRole::kDevices},
      {"num_devices", ArgumentRole::kDevices},
      {"num_nodes", ArgumentRole::kNodes},
  };
  return table;
}

bool is_integer(std::string_view text) {
  long long v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  return ec == std::errc() && end == text.data() + text.size();
}

bool is_number(std::string_view text) {
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  return ec == std::errc() && end == text.data() + text.size();
}

}  // namespace

std::string setting_key(ArgumentRole role) {
  switch (role) {
    case ArgumentRole::kSeed:
      return "train.seed";
    case ArgumentRole::kMaxSteps:
      return "train.max_steps";
    case ArgumentRole::kMicroBatchSize:
      return "train.micro_batch_size";
    case ArgumentRole::kGradAccum:
      return "train.gradient_accumulation_steps";
    case ArgumentRole::kSeqLength:
      return "train.seq_length";
    case ArgumentRole::kLr:
      return "train.lr";
    case ArgumentRole::kLogFile:
    case ArgumentRole::kConfig:
    case ArgumentRole::kCheckpointPath:
    case ArgumentRole::kDevices:
    case ArgumentRole::kNodes:
      return "";
  }
  return "";
}

std::string placeholder(ArgumentRole role) {
  switch (role) {
    case ArgumentRole::kSeed:
      return "{seed}";
    case ArgumentRole::kMaxSteps:
      return "{max_steps}";
    case ArgumentRole::kMicroBatchSize:
      return "{micro_batch_size}";
    case ArgumentRole::kGradAccum:
      return "{grad_accum}";
    case ArgumentRole::kSeqLength:
      return "{seq_length}";
    case ArgumentRole::kLr:
      return "{lr}";
    case ArgumentRole::kLogFile:
      return "{log_file}";
    case ArgumentRole::kConfig:
      return "{gate_config}";
    case ArgumentRole::kCheckpointPath:
      return "{attempt_dir}";
    case ArgumentRole::kDevices:
      return "{nproc_per_node}";
    case ArgumentRole::kNodes:
      return "{nnodes}";
  }
  return "";
}

std::string placeholder_of(const RecognisedArgument& a) {
  if (a.role != ArgumentRole::kCheckpointPath) return placeholder(a.role);
  std::string name = a.value;
  while (!name.empty() && name.back() == '/') name.pop_back();
  const auto slash = name.rfind('/');
  if (slash != std::string::npos) name = name.substr(slash + 1);
  if (name.empty() || name == "." || name == "..") return "{attempt_dir}";
  return "{attempt_dir}/" + name;
}

std::optional<ArgumentRole> role_of_name(const std::string& name);

// `--batchSize` as `batch_size`: a word boundary before each capital after a lower-case letter.
std::string snake_case(const std::string& flag) {
  std::string out;
  for (std::size_t i = 0; i < flag.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(flag[i]);
    if (std::isupper(c) && i > 0 && std::islower(static_cast<unsigned char>(flag[i - 1])))
      out.push_back('_');
    out.push_back(static_cast<char>(c));
  }
  return out;
}

bool value_fits(ArgumentRole role, std::string_view value) {
  switch (role) {
    case ArgumentRole::kSeed:
    case ArgumentRole::kMaxSteps:
    case ArgumentRole::kMicroBatchSize:
    case ArgumentRole::kGradAccum:
    case ArgumentRole::kSeqLength:
      return is_integer(value);
    case ArgumentRole::kLr:
      return is_number(value);
    case ArgumentRole::kDevices:
      return is_integer(value) || value == "auto";  // Lightning's devices="auto"
    case ArgumentRole::kNodes:
      return is_integer(value);
    case ArgumentRole::kLogFile:
    case ArgumentRole::kConfig:
    case ArgumentRole::kCheckpointPath:
      return !value.empty() && value.front() != '-';
  }
  return false;
}

std::string shown_argument(const RecognisedArgument& a) {
  std::string out = a.flag + " " + a.value;
  if (a.found_by == FoundBy::kPositional) out += " (positional)";
  if (a.found_by == FoundBy::kDefault) out += " (its argparse default, added to the command)";
  return out;
}

std::optional<ArgumentRole> role_of_flag(const std::string& flag) {
  if (flag.size() < 3 || flag.rfind("--", 0) != 0) return std::nullopt;
  const std::string name = audit::normalise_name(flag);
  if (auto role = role_of_name(name)) return role;
  if (auto role = role_of_name(audit::normalise_name(snake_case(flag)))) return role;
  // A dotted flag names a field of a config tree (`--trainer.batch_size`, `--optim.lr`): its
  // last part says what it is.
  if (const auto dot = name.rfind('.'); dot != std::string::npos && dot + 1 < name.size()) {
    return role_of_name(name.substr(dot + 1));
  }
  return std::nullopt;
}

std::optional<ArgumentRole> role_of_name(const std::string& name) {
  if (auto it = extra_spellings().find(name); it != extra_spellings().end()) return it->second;
  if (const auto setting = audit::find_setting(name)) {
    switch (*setting) {
      case audit::Setting::kMicroBatchSize:
        return ArgumentRole::kMicroBatchSize;
      case audit::Setting::kGradAccum:
        return ArgumentRole::kGradAccum;
      case audit::Setting::kSeqLength:
        return ArgumentRole::kSeqLength;
      default:
        return std::nullopt;
    }
  }
  return std::nullopt;
}

std::optional<std::string> brace_token(const std::string& word) {
  for (std::size_t open = word.find('{'); open != std::string::npos;
       open = word.find('{', open + 1)) {
    std::size_t end = open + 1;
    while (end < word.size() &&
           (std::isalnum(static_cast<unsigned char>(word[end])) || word[end] == '_')) {
      ++end;
    }
    if (end > open + 1 && end < word.size() && word[end] == '}')
      return word.substr(open, end - open + 1);
  }
  return std::nullopt;
}

std::vector<RecognisedArgument> recognise_arguments(const std::vector<std::string>& argv) {
  // One argument per role, the last given; a program may take several output paths.
  std::map<std::pair<ArgumentRole, std::string>, RecognisedArgument> last;
  for (std::size_t i = 1; i < argv.size(); ++i) {
    const std::string& word = argv[i];
    const std::size_t eq = word.find('=');
    const bool joined = eq != std::string::npos && word.rfind("--", 0) == 0;
    const std::string flag = joined ? word.substr(0, eq) : word;
    const auto role = role_of_flag(flag);
    if (!role) continue;
    const std::pair<ArgumentRole, std::string> key{
        *role, *role == ArgumentRole::kCheckpointPath ? audit::normalise_name(flag) : ""};
    if (joined) {
      const std::string value = word.substr(eq + 1);
      if (value_fits(*role, value))
        last.insert_or_assign(key,
                              RecognisedArgument{*role, flag, value, i, true, FoundBy::kSpelling});
    } else if (i + 1 < argv.size() && value_fits(*role, argv[i + 1])) {
      last.insert_or_assign(
          key, RecognisedArgument{*role, flag, argv[i + 1], i + 1, false, FoundBy::kSpelling});
      ++i;
    }
  }
  std::vector<RecognisedArgument> out;
  for (auto& [role, argument] : last) out.push_back(std::move(argument));
  std::sort(out.begin(), out.end(), [](const RecognisedArgument& a, const RecognisedArgument& b) {
    return a.value_index < b.value_index;
  });
  return out;
}

}  // namespace bigmac::adopt
