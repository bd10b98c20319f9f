#pragma once

#include <string>
#include <string_view>

#include "logs/step_line.h"

namespace bigmac::logs {

/// A Python dict as `print(dict)` writes it, the way the Hugging Face Trainer logs its steps:
/// `{'loss': 2.31, 'grad_norm': 0.8, 'learning_rate': 5e-05, 'epoch': 0.1}`. The dict may
/// follow other text on the line (a logger's prefix) and must end it. Keys are quoted strings
/// (single or double quotes, so flat JSON objects read too); values are numbers (also `nan`,
/// `inf`), a number in a call (`tensor(0.8, device='cuda:0')`, `np.float64(2.31)`), a number in
/// a string (transformers 5 prints `{'loss': '4.717', 'grad_norm': '0.6922', ...}`, each value
/// rounded to 4 significant digits), other strings, True/False/None, or nested lists, tuples and
/// dicts (skipped).
///
/// Keys are mapped through metric_alias.h. A dict is a step line when it has a loss and is
/// neither the run summary (it has `train_runtime`) nor an evaluation (`eval_loss`, ...);
/// without a counter key (`step`, `global_step`, ...) its step is the count of step lines
/// before it. kBad when a loss, grad norm, lr or counter is not a number, or a dict that has
/// a loss does not parse.
LineMatch read_python_dict_line(std::string_view text, StepLine& out, std::string& error);

}  // namespace bigmac::logs
