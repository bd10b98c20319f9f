#include "trainer/fault_plan.h"

#include <fmt/format.h>

#include <charconv>

namespace bigmac::trainer {
namespace {

std::optional<int> parse_int(std::string_view text) {
  int value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || text.empty()) return std::nullopt;
  return value;
}

Expected<std::optional<RankAndValue>> optional_pair(const std::string& text, std::string_view key) {
  if (text.empty()) return std::optional<RankAndValue>{};
  auto parsed = parse_rank_and_value(text, key);
  if (!parsed) return tl::unexpected(parsed.error());
  return std::optional<RankAndValue>(*parsed);
}

}  // namespace

Expected<RankAndValue> parse_rank_and_value(std::string_view text, std::string_view key) {
  auto colon = text.find(':');
  std::optional<int> rank;
  std::optional<int> value;
  if (colon != std::string_view::npos) {
    rank = parse_int(text.substr(0, colon));
    value = parse_int(text.substr(colon + 1));
  }
  if (!rank || !value || *rank < 0) {
    Error error = make_error(ErrorKind::kConfig,
                             fmt::format("\"{}\" is not of the form R:K (rank:integer)", text),
                             "for example \"1:5\"");
    error.key = std::string(key);
    return tl::unexpected(error);
  }
  return RankAndValue{*rank, *value};
}

Expected<FaultPlan> parse_fault_plan(const config::FaultsConfig& faults) {
  FaultPlan plan;
  plan.nan_at_step = faults.nan_at_step;
  plan.grad_blowup = faults.grad_blowup;
  plan.skip_step_log = faults.skip_step_log;
  plan.dup_step_log = faults.dup_step_log;
  plan.lr_scale_by_world = faults.lr_scale_by_world;
  plan.world_size_offset = faults.world_size_offset;
  plan.all_ranks_checkpoint = faults.all_ranks_checkpoint;
  plan.boundary_seq_trim = faults.boundary_seq_trim;
  plan.boundary_dtype = faults.boundary_dtype;
  plan.ragged_microbatch = faults.ragged_microbatch;
  plan.middle_stage_loss = faults.middle_stage_loss;
  plan.untied_sync = faults.untied_sync;
  plan.unsharded_data = faults.unsharded_data;
  plan.unreduced_grads = faults.unreduced_grads;
  plan.rank_seeded_init = faults.rank_seeded_init;
  plan.summed_grads = faults.summed_grads;
  if (!plan.boundary_dtype.empty() && plan.boundary_dtype != "bf16" &&
      plan.boundary_dtype != "float16") {
    Error error = make_error(ErrorKind::kConfig,
                             fmt::format("\"{}\" is not bf16 or float16", plan.boundary_dtype));
    error.key = "faults.boundary_dtype";
    return tl::unexpected(error);
  }
  auto stall = optional_pair(faults.stage_stall, "faults.stage_stall");
  if (!stall) return tl::unexpected(stall.error());
  plan.stage_stall = *stall;
  auto crash = optional_pair(faults.crash_rank, "faults.crash_rank");
  if (!crash) return tl::unexpected(crash.error());
  auto hang = optional_pair(faults.hang_rank, "faults.hang_rank");
  if (!hang) return tl::unexpected(hang.error());
  auto port = optional_pair(faults.master_port_offset, "faults.master_port_offset");
  if (!port) return tl::unexpected(port.error());
  auto extra = optional_pair(faults.extra_collective, "faults.extra_collective");
  if (!extra) return tl::unexpected(extra.error());
  auto lengthened = optional_pair(faults.collective_shape, "faults.collective_shape");
  if (!lengthened) return tl::unexpected(lengthened.error());
  plan.extra_collective = *extra;
  plan.collective_shape = *lengthened;
  plan.crash_rank = *crash;
  plan.hang_rank = *hang;
  plan.master_port_offset = *port;
  return plan;
}

}  // namespace bigmac::trainer
