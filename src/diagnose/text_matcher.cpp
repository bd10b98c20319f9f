#include "diagnose/text_matcher.h"

#include <fmt/format.h>
#include <re2/re2.h>
#include <re2/set.h>

#include <algorithm>
#include <cctype>
#include <optional>

#include "diagnose/wrapped_pattern.h"

namespace bigmac::diagnose {
namespace {

RE2::Options quiet_options() {
  RE2::Options options;
  options.set_log_errors(false);
  // The sets hold every signature: give the DFA room so it does not fall back to the NFA.
  options.set_max_mem(std::int64_t{64} << 20);
  return options;
}

// Fills `captures` from a match: numbered groups and named groups.
void fill_captures(const RE2& re, const std::vector<re2::StringPiece>& pieces,
                   TemplateValues& captures) {
  for (std::size_t n = 1; n < pieces.size(); ++n) {
    if (pieces[n].data() != nullptr)
      captures[std::to_string(n)] = std::string(pieces[n].data(), pieces[n].size());
  }
  for (const auto& [name, index] : re.NamedCapturingGroups()) {
    const auto& piece = pieces[static_cast<std::size_t>(index)];
    if (piece.data() != nullptr) captures[name] = std::string(piece.data(), piece.size());
  }
}

// The first match of `re` in `text` that needs the text after `seam`. A match the text before
// the seam holds on its own belongs to earlier lines and was reported with them, even when a
// greedy `.*` could stretch it into the current line; false when there is none.
bool locate(const RE2& re, std::string_view text, std::size_t seam, TextMatch& m) {
  std::vector<re2::StringPiece> pieces(static_cast<std::size_t>(re.NumberOfCapturingGroups()) + 1);
  const int n = static_cast<int>(pieces.size());
  for (std::size_t pos = 0; pos <= text.size();) {
    if (!re.Match(text, pos, text.size(), RE2::UNANCHORED, pieces.data(), n)) return false;
    const auto begin = static_cast<std::size_t>(pieces[0].data() - text.data());
    const std::size_t end = begin + pieces[0].size();
    if (begin < seam &&
        (end <= seam || re.Match(text, begin, seam, RE2::ANCHOR_START, nullptr, 0))) {
      pos = begin + 1;
      continue;
    }
    fill_captures(re, pieces, m.captures);
    m.begin = begin;
    return true;
  }
  return false;
}

// Patterns of one RE2::Set and, by set index, their single RE2 and signature.
struct PatternSet {
  RE2::Set set{quiet_options(), RE2::UNANCHORED};
  std::vector<std::unique_ptr<RE2>> patterns;
  std::vector<std::size_t> owner;

  /// `searched` goes into the set; `pattern` (default: the same) confirms a hit and captures.
  bool add(const std::string& pattern, std::size_t signature, std::string& why,
           const std::string* searched = nullptr) {
    if (set.Add(searched != nullptr ? *searched : pattern, &why) < 0) return false;
    patterns.push_back(std::make_unique<RE2>(pattern, quiet_options()));
    if (!patterns.back()->ok()) {
      why = patterns.back()->error();
      return false;
    }
    owner.push_back(signature);
    return true;
  }
  bool compile() { return patterns.empty() || set.Compile(); }
  bool match(std::string_view text, std::vector<int>& hits) const {
    hits.clear();
    // Asking which patterns matched allocates inside RE2 on every call; whether any did does
    // not, and most lines match none.
    if (patterns.empty() || !set.Match(text, nullptr)) return false;
    if (!set.Match(text, &hits)) return false;
    std::sort(hits.begin(), hits.end());
    return true;
  }
};

bool already(const std::vector<TextMatch>& out, std::size_t first, std::size_t signature) {
  return std::any_of(out.begin() + static_cast<std::ptrdiff_t>(first), out.end(),
                     [&](const TextMatch& m) { return m.signature == signature; });
}

}  // namespace

struct TextMatcher::Compiled {
  PatternSet joined;    ///< space-tolerant forms, searched in the joined window
  PatternSet line;      ///< line-anchored and fallback patterns, the current line only
  PatternSet messages;  ///< the libraries' messages by their literal runs, in the window
  std::vector<std::vector<std::unique_ptr<RE2>>> follow;  ///< by signature
};

TextMatcher::TextMatcher(const Catalog& catalog)
    : catalog_(&catalog), compiled_(std::make_unique<Compiled>()) {}
TextMatcher::TextMatcher(TextMatcher&&) noexcept = default;
TextMatcher& TextMatcher::operator=(TextMatcher&&) noexcept = default;
TextMatcher::~TextMatcher() = default;

Expected<TextMatcher> TextMatcher::build(const Catalog& catalog) {
  TextMatcher matcher(catalog);
  Compiled& c = *matcher.compiled_;
  c.follow.resize(catalog.signatures.size());
  for (std::size_t s = 0; s < catalog.signatures.size(); ++s) {
    const Signature& sig = catalog.signatures[s];
    for (const std::string& pattern : sig.patterns) {
      std::string why;
      const bool own_line = sig.fallback || anchored_to_line(pattern);
      bool added = false;
      if (sig.library >= 0) {
        const std::string literal = space_tolerant(sig.literal);
        added = c.messages.add(space_tolerant(pattern), s, why, &literal);
      } else {
        added =
            own_line ? c.line.add(pattern, s, why) : c.joined.add(space_tolerant(pattern), s, why);
      }
      if (!added) {
        Error e = make_error(
            ErrorKind::kConfig,
            fmt::format("signature `{}`: pattern does not compile: {}", sig.text.id, why));
        e.file = catalog.path;
        e.line = sig.text.line;
        return tl::unexpected(e);
      }
    }
    for (const std::string& pattern : sig.follow.patterns) {
      c.follow[s].push_back(std::make_unique<RE2>(pattern, quiet_options()));
    }
  }
  if (!c.joined.compile() || !c.line.compile() || !c.messages.compile()) {
    Error e =
        make_error(ErrorKind::kConfig, "the catalog's patterns are too large to compile together",
                   "split very long alternations into several patterns");
    e.file = catalog.path;
    return tl::unexpected(e);
  }
  return matcher;
}

void TextMatcher::match_window(std::string_view window, std::size_t seam,
                               std::vector<TextMatch>& out) const {
  const Compiled& c = *compiled_;
  thread_local std::vector<int> hits;
  const std::size_t first = out.size();
  if (c.joined.match(window, hits)) {
    for (int index : hits) {
      const std::size_t s = c.joined.owner[static_cast<std::size_t>(index)];
      if (already(out, first, s)) continue;
      TextMatch m{s, {}, 0};
      if (locate(*c.joined.patterns[static_cast<std::size_t>(index)], window, seam, m))
        out.push_back(std::move(m));
    }
  }
  const std::string_view line = window.substr(std::min(seam, window.size()));
  std::vector<std::size_t> fallbacks;
  if (c.line.match(line, hits)) {
    for (int index : hits) {
      const std::size_t s = c.line.owner[static_cast<std::size_t>(index)];
      if (already(out, first, s)) continue;
      if (catalog_->signatures[s].fallback) {
        fallbacks.push_back(static_cast<std::size_t>(index));
        continue;
      }
      TextMatch m{s, {}, 0};
      if (locate(*c.line.patterns[static_cast<std::size_t>(index)], line, 0, m)) {
        m.begin += seam;
        out.push_back(std::move(m));
      }
    }
  }
  // The libraries' messages speak only where no hand-written signature did.
  if (out.size() == first) match_messages(window, seam, out);
  if (out.size() > first) return;
  for (std::size_t index : fallbacks) {
    TextMatch m{c.line.owner[index], {}, 0};
    if (locate(*c.line.patterns[index], line, 0, m)) {
      m.begin += seam;
      out.push_back(std::move(m));
      return;
    }
  }
}

void TextMatcher::match_messages(std::string_view window, std::size_t seam,
                                 std::vector<TextMatch>& out) const {
  const Compiled& c = *compiled_;
  thread_local std::vector<int> hits;
  if (!c.messages.match(window, hits)) return;
  // Of several messages, the one with the most literal text names the line best.
  const auto& sigs = catalog_->signatures;
  std::optional<TextMatch> best;
  std::size_t best_size = 0;
  for (int index : hits) {
    const std::size_t s = c.messages.owner[static_cast<std::size_t>(index)];
    const std::size_t size = sigs[s].patterns.front().size();
    if (best && size <= best_size) continue;
    TextMatch m{s, {}, 0};
    if (!locate(*c.messages.patterns[static_cast<std::size_t>(index)], window, seam, m)) continue;
    best = std::move(m);
    best_size = size;
  }
  if (best) out.push_back(std::move(*best));
}

void TextMatcher::match_follow(std::size_t signature, std::string_view text,
                               TemplateValues& captures) const {
  for (const auto& re : compiled_->follow[signature]) {
    TextMatch found;
    if (!locate(*re, text, 0, found)) continue;
    for (auto& [name, value] : found.captures) {
      // Only named groups, and the first line that provides a value wins.
      if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0])) != 0) continue;
      captures.emplace(name, std::move(value));
    }
  }
}

}  // namespace bigmac::diagnose
