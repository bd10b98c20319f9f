#pragma once

#include <cstdint>
#include <map>
#include <source_location>
#include <string>
#include <string_view>
#include <vector>

#include "trainer/log_writer.h"

namespace bigmac::trainer {

/// bigmac-train's collective ledger: the `coll` events the probe writes for a Python program
/// (docs/log-contract.md), written before each collective and point-to-point transfer goes in.
/// A rank that hangs or aborts inside one has already said which; the orchestrator compares the
/// ranks' ledgers to name the rank that never reached a collective or called another one.
class CollectiveLedger {
 public:
  CollectiveLedger(LogWriter& log, int rank) : log_(log), rank_(rank) {}

  /// The step the entries that follow belong to.
  void set_step(int step) { step_ = step; }
  /// This process's global rank: the channels' ends.
  int rank() const { return rank_; }

  /// One entry: `op` on `group` ("world", the members' global ranks "0,2", or a channel
  /// "0->1"), numbered per group in issue order; `shape` and `dtype` of its input (empty: none);
  /// `where` the trainer's line that issued it.
  void record(std::string_view op, const std::string& group, const std::vector<std::int64_t>& shape,
              std::string_view dtype, const std::source_location& where);

 private:
  LogWriter& log_;
  int rank_ = 0;
  int step_ = 0;
  std::map<std::string, std::int64_t> seq_;  ///< group -> entries written on it so far
};

/// A transfer's channel from sender to receiver: "0->1".
std::string channel_key(int sender, int receiver);

/// "trainer.cpp:281": the file's name and line of `where`.
std::string site_of(const std::source_location& where);

/// The bare name of `where`'s function ("train_step"), without its scope and signature.
std::string function_of(const std::source_location& where);

}  // namespace bigmac::trainer
