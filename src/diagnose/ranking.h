#pragma once

#include <vector>

#include "diagnose/diagnosis.h"

namespace bigmac::diagnose {

/// Orders diagnoses best first, root cause before consequences: higher specificity first (a
/// line that names a cause beats one that reports a symptom such as a timeout); then the
/// earlier failure (wall time of the first evidence, where both have one); then diagnoses
/// blaming the rank torchrun names as the first failure (`child_failed`); then confidence;
/// then the lower rank and the id, so the order is deterministic. A launcher's report of a
/// failed rank (`child_failed`) ranks below every other diagnosis that names that rank: the
/// rank's own error is the headline, the launcher's summary its context. A peer that closed its
/// connection (`peer_exited`) comes last: a consequence of another rank's exit.
void rank_diagnoses(std::vector<Diagnosis>& diagnoses);

/// Moves consequences after the causes, keeping each part's order: a closed peer
/// (`peer_exited`), then a library's message that its file printed after a closed peer (how
/// that process went on failing, such as NCCL's proxy reporting the broken socket) or an
/// exception raised while handling one another diagnosis explains (Diagnosis::consequence_of).
void put_consequences_last(std::vector<Diagnosis>& diagnoses);

}  // namespace bigmac::diagnose
