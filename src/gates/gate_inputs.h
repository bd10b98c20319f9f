#pragma once

#include <map>
#include <string>

namespace bigmac::gates {

/// What a gate's result depends on. A passed gate whose inputs differ now is invalidated.
struct GateInputs {
  std::map<std::string, std::string> config;  ///< GatePlan::inputs
  std::string trainer;                        ///< trainer identity: "path size mtime" or a hash
  std::string baseline;  ///< digest of the baseline file it was compared with (empty: none)

  bool empty() const { return config.empty() && trainer.empty() && baseline.empty(); }
  /// Why `now` differs from these (the ones a gate ran with); empty when equal.
  std::string difference(const GateInputs& now) const;
};

}  // namespace bigmac::gates
