#pragma once

#include <string>
#include <vector>

#include "logs/record.h"

namespace bigmac::report {

/// The pipeline schedule as an inline <svg class="schedule">: one lane per stage, one box per
/// `mb` event placed by its start/end time (F and B coloured apart, labelled with the
/// micro-batch index), for the first `max_steps` optimizer steps present so boxes stay
/// readable. Gaps show an idle stage; the order shows 1F1B against GPipe.
std::string schedule_chart(const std::vector<logs::MicroBatchRecord>& events, int max_steps = 2,
                           int width = 1080);

}  // namespace bigmac::report
