#pragma once

#include <string>
#include <string_view>

#include "logs/record.h"
#include "logs/step_line.h"

namespace bigmac::logs {

/// The marker of a trainer's effective-configuration line.
inline constexpr std::string_view kSettingsMarker = "[cfg]";

/// `[cfg] world_size=8 pp=4 tp=1 dp=2 micro_bs=1 accum=8 global_bs=16 split_points=[3,6,9]`
/// (prefix already removed): `key=value` tokens separated by blanks; a value is a bare token or
/// a bracketed list (blanks allowed inside). Known keys and their aliases (SettingsRecord) must
/// hold integers (split_points: a list of them); other keys are kept as written. kNotMine when
/// the line does not start with kSettingsMarker; kBad on a token that is not key=value, an
/// unclosed list, or a known key whose value is not an integer.
LineMatch read_settings_line(std::string_view text, SettingsRecord& out, std::string& error);

}  // namespace bigmac::logs
