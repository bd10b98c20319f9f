#pragma once

#include <string>
#include <string_view>

namespace bigmac::diagnose {

// A message broken over lines (terminal width, a logger's wrapping, a paste) is searched in the
// lines joined without a separator. A break inside a word is then undone exactly; a break at a
// space loses the space when the line ends or the next begins with it (pastes trim trailing
// blanks, the log reader strips leading ones). These helpers adapt a catalog pattern to that.

/// `pattern` with every literal space outside a character class made optional (` ` → ` ?`,
/// ` +` → ` *`, `\s+` → `\s*`), so `Address already in use` also matches `Address alreadyin
/// use`. Escapes, classes, groups and quantifiers are kept as they are.
std::string space_tolerant(std::string_view pattern);

/// Whether `pattern` anchors to a line (`^`, `$`, `\A`, `\z` outside a character class): such a
/// pattern is only searched on a line of its own, never in joined lines.
bool anchored_to_line(std::string_view pattern);

}  // namespace bigmac::diagnose
