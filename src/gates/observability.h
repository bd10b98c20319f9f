#pragma once

#include <string>
#include <string_view>

#include "gates/check.h"
#include "gates/gate_evidence.h"

namespace bigmac::gates {

/// What a trainer must log for a check that needs `field` to be made: one sentence naming the
/// bigmac-log line (docs/log-contract.md) or the probe setting that provides it. `field` is a
/// step field ("loss", "grad_norm", "lr", "samples_per_step"), a contract event ("model",
/// "pg_ready", "layout", "mb", "shape", "ckpt", "run", "batch", "done", "digest") or a setting
/// the gate gave the trainer ("world_size", "seed", ...). An unknown name gets a generic
/// sentence: no check is left without advice.
MissingField missing_field(std::string_view field);

/// Whether the trainer made progress the gate can see (some rank logged a step): only then is
/// a field missing everywhere "not logged" rather than "the run never got that far".
bool logged_steps(const GateEvidence& evidence);

/// A check that found nothing to judge: unobservable (the trainer does not log `fields`) when
/// the ranks logged steps, else a failure with `message` (the run never got that far).
CheckResult not_logged(const GateEvidence& evidence, std::string name, std::string message,
                       const std::vector<std::string>& fields);

/// Whether no rank logged a record of type R.
template <class R>
bool logged_nowhere(const GateEvidence& evidence) {
  for (const RankEvidence& r : evidence.ranks) {
    if (!r.template all<R>().empty()) return false;
  }
  return true;
}

/// Whether no step of the owner carries the optional step field `get` reads.
template <class Get>
bool step_field_nowhere(const GateEvidence& evidence, Get get) {
  const RankEvidence* owner = evidence.owner();
  if (!owner) return false;
  for (const logs::StepRecord& s : owner->steps) {
    if (get(s)) return false;
  }
  return !owner->steps.empty();
}

}  // namespace bigmac::gates
