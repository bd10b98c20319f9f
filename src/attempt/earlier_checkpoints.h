#pragma once

#include <filesystem>
#include <map>
#include <string>

namespace bigmac::attempt {

/// The checkpoints the earlier gate attempts of a run wrote, as their ranks' probe logs name
/// them (`ckpt` events in `probe-rank*.jsonl`): path -> "gate single (attempt 1), step 15". The
/// attempt folder `current` is left out. What cannot be read is left out too: this only makes a
/// resumed checkpoint nameable, it never fails a gate by itself.
std::map<std::string, std::string> earlier_checkpoints(const std::filesystem::path& run_dir,
                                                       const std::filesystem::path& current);

}  // namespace bigmac::attempt
