#pragma once

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "config/data_file.h"
#include "config/settings.h"
#include "core/error.h"

namespace bigmac::gates {

/// What a gate launches (the `[launch]` table of a stages/ file). Empty optionals mean "the
/// configuration's value".
struct GateLaunch {
  std::optional<int> nproc;  ///< `nproc = "all"`: the configured world size
  std::optional<int> pp;     ///< `pp = "config"`: parallel.pp_size
  std::optional<int> tp;     ///< `tp = "config"`: parallel.tp_size
  std::string schedule;      ///< "config", "1f1b" or "gpipe"; empty = config
  int micro_batches = 0;     ///< pipeline micro-batches; 0 = the configuration's
  bool trace_shapes = false;
  /// Which value is rescaled so samples/step equals the baseline's: "accum", "micro", "none",
  /// or "auto": the one the program takes from the gates (its accumulation, else its
  /// micro-batch; gates/gate_plan.h).
  std::string rescale = "auto";
};

/// One check of a gate, by registry name.
struct CheckSpec {
  std::string name;
  std::string route_back;       ///< empty: the gate's route_back
  bool needs_baseline = false;  ///< `when = "baseline"`: run only when a baseline exists
};

/// Which target layouts a gate belongs to (`applies` in its stages/ file).
enum class GateApplies {
  kAlways,    ///< every bring-up runs it
  kPipeline,  ///< only a target layout with pipeline stages (parallel.pp_size > 1)
  /// only a target layout with data-parallel replicas: not one whose every process is a
  /// pipeline stage (pp × tp = world size, dp 1), where no replica exists to judge
  kDataParallel,
};

/// A gate as data: a stages/0N-*.toml file with the user's `[gates.<id>]` overrides applied.
struct GateSpec {
  std::string id;
  std::string title;
  int order = 0;
  std::string route_back;
  GateApplies applies = GateApplies::kAlways;
  GateLaunch launch;
  /// Flat check parameters (`[params]`): key -> number, string, bool or list.
  nlohmann::json params = nlohmann::json::object();
  std::vector<CheckSpec> checks;
  /// The file and where each overridable key was last set ("stages/02-dp.toml:9:1",
  /// "configs/demo.toml:40:1 ([gates.dp])").
  std::string path;
  std::map<std::string, std::string> key_origins;
  /// `--strict`: every unobservable check counts as a required one (a failure).
  bool strict = false;
  /// The raw tables, kept so overrides can be applied and re-read.
  nlohmann::json raw_launch = nlohmann::json::object();
};

/// Reads and checks one gate file: keys, types and check names (did-you-mean), file:line:col.
Expected<GateSpec> parse_gate_spec(const config::DataFile& file);
Expected<GateSpec> load_gate_spec(const std::filesystem::path& path);

/// Every `*.toml` under `dir` that has an `id` (diagnoses.toml is skipped), sorted by `order`.
/// Orders must be unique; all errors together.
tl::expected<std::vector<GateSpec>, Errors> load_gate_specs(const std::filesystem::path& dir);

/// Where the gate files are when none is given and there is no ./stages, in the order looked
/// in: installed beside the program (`<exe>/../share/bigmac-bringup/stages`), then the source
/// tree's stages/ the program was built from. A missing last one is an error naming both.
std::vector<std::filesystem::path> default_stages_directories();

/// Applies `[gates.<id>]` overrides: each key must exist in the gate's [launch] or [params]
/// (did-you-mean otherwise) and keep its type. Errors name where the override was written.
tl::expected<GateSpec, Errors> apply_overrides(
    GateSpec spec, const std::map<std::string, config::Setting>& overrides);

/// Whether `id` can name a gate: a plain word of letters, digits, '_' and '-' (it names attempt
/// folders, "02-dp.1", and report entries, so never a path like "../x"), not digits alone (a
/// gate is also named by its number).
bool valid_gate_id(std::string_view id);

/// The checks a gate requires: `[params] required_checks` (a list of check names, overridable
/// under [gates.<id>]), else every check; with `strict`, every check. A gate passes only when
/// each required check was observable and passed.
bool is_required(const GateSpec& spec, std::string_view check);

/// The spec with id or order number `name` ("dp", "2").
const GateSpec* find_gate(const std::vector<GateSpec>& specs, std::string_view name);

/// Every route back of every gate (the gate's, each check's and the `<metric>_route_back_*`
/// params a check routes by) names a known gate at or before its own: a failure is fixed at
/// the gate that failed or an earlier one, never a later one. Errors name the gate file and key.
Errors check_route_backs(const std::vector<GateSpec>& specs);

}  // namespace bigmac::gates
