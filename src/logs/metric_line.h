#pragma once

#include <string>
#include <string_view>

#include "logs/step_line.h"

namespace bigmac::logs {

/// A plain step line of no particular framework: a step counter and metrics as `name value`
/// pairs, written `name=value`, `name: value` or `name value` and separated by blanks, commas,
/// `|` or `;`:
///
///     step=3 loss=2.31 lr=1e-4              iter 3: loss 4.4400, time 30.12ms, mfu 12.3%
///     it 3 | loss 2.31 | lr 0.0001          Step [3/100] - Loss: 2.31 - Grad Norm: 0.8
///
/// Names are folded and mapped through metric_alias.h (`Learning Rate` is the lr); a name may
/// be several words, and the counter is a name whose last word is step, iter, iteration,
/// global_step or it, followed by digits (`3`, or `3/100` with the total). A time with a unit
/// (`time 30ms`, `dt 0.03s`) is the step time; other units (`%`, `GiB`) are dropped.
///
/// A line is a step line when it has a counter and a loss and names no evaluation metric
/// (`step 500: train loss 4.1, val loss 4.3` is nanoGPT's evaluation, not a step). The first
/// step line of a stream fixes the counter's name in `counter_name`; later lines counting with
/// another name are not step lines. kBad when a counter, loss, grad norm, lr or step time reads
/// as a malformed number (`loss 7.1.2`).
LineMatch read_metric_line(std::string_view text, std::string& counter_name, StepLine& out,
                           std::string& error);

}  // namespace bigmac::logs
