#include "diagnose/text_matcher.h"

#include <fmt/format.h>
#include <re2/re2.h>
#include <re2/set.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>

namespace bigmac::diagnose {
namespace {

constexpr std::size_t kMaxHits = 6;
constexpr std::size_t kMaxSpecificLines = 4096;
constexpr std::int64_t kTracebackReach = 3;  ///< lines between an error line and its explanation

RE2::Options quiet_options() {
  RE2::Options options;
  options.set_log_errors(false);
  return options;
}

// Fills `captures` from one regex match: numbered groups and named groups.
bool capture(const RE2& re, std::string_view text, TemplateValues& captures) {
  const int groups = re.NumberOfCapturingGroups();
  std::vector<re2::StringPiece> pieces(static_cast<std::size_t>(groups) + 1);
  if (!re.Match(text, 0, text.size(), RE2::UNANCHORED, pieces.data(), groups + 1)) return false;
  for (int n = 1; n <= groups; ++n) {
    const auto& piece = pieces[static_cast<std::size_t>(n)];
    if (piece.data() != nullptr)
      captures[std::to_string(n)] = std::string(piece.data(), piece.size());
  }
  for (const auto& [name, index] : re.NamedCapturingGroups()) {
    const auto& piece = pieces[static_cast<std::size_t>(index)];
    if (piece.data() != nullptr) captures[name] = std::string(piece.data(), piece.size());
  }
  return true;
}

}  // namespace

struct TextMatcher::Compiled {
  RE2::Set set{quiet_options(), RE2::UNANCHORED};
  std::vector<std::unique_ptr<RE2>> patterns;             ///< by set index
  std::vector<std::size_t> owner;                         ///< set index → signature
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
      if (c.set.Add(pattern, &why) < 0) {
        Error e = make_error(
            ErrorKind::kConfig,
            fmt::format("signature `{}`: pattern does not compile: {}", sig.text.id, why));
        e.file = catalog.path;
        e.line = sig.text.line;
        return tl::unexpected(e);
      }
      c.patterns.push_back(std::make_unique<RE2>(pattern, quiet_options()));
      c.owner.push_back(s);
    }
    for (const std::string& pattern : sig.follow.patterns) {
      c.follow[s].push_back(std::make_unique<RE2>(pattern, quiet_options()));
    }
  }
  if (!c.set.Compile()) {
    Error e =
        make_error(ErrorKind::kConfig, "the catalog's patterns are too large to compile together",
                   "split very long alternations into several patterns");
    e.file = catalog.path;
    return tl::unexpected(e);
  }
  return matcher;
}

void TextMatcher::match(std::string_view text, std::vector<TextMatch>& out) const {
  const Compiled& c = *compiled_;
  if (c.patterns.empty()) return;
  std::vector<int> hits;
  if (!c.set.Match(text, &hits)) return;
  std::sort(hits.begin(), hits.end());
  const std::size_t first = out.size();
  std::vector<std::size_t> fallbacks;
  for (int index : hits) {
    const std::size_t s = c.owner[static_cast<std::size_t>(index)];
    const bool seen = std::any_of(out.begin() + static_cast<std::ptrdiff_t>(first), out.end(),
                                  [&](const TextMatch& m) { return m.signature == s; });
    if (seen) continue;
    if (catalog_->signatures[s].fallback) {
      fallbacks.push_back(static_cast<std::size_t>(index));
      continue;
    }
    TextMatch m{s, {}};
    if (capture(*c.patterns[static_cast<std::size_t>(index)], text, m.captures))
      out.push_back(std::move(m));
  }
  if (out.size() > first) return;
  for (std::size_t index : fallbacks) {
    TextMatch m{c.owner[index], {}};
    if (capture(*c.patterns[index], text, m.captures)) {
      out.push_back(std::move(m));
      return;
    }
  }
}

void TextMatcher::match_follow(std::size_t signature, std::string_view text,
                               TemplateValues& captures) const {
  for (const auto& re : compiled_->follow[signature]) {
    TemplateValues found;
    if (!capture(*re, text, found)) continue;
    for (auto& [name, value] : found) {
      // Only named groups, and the first line that provides a value wins.
      if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0])) != 0) continue;
      captures.emplace(name, std::move(value));
    }
  }
}

TextScan::TextScan(const TextMatcher& matcher)
    : matcher_(matcher), tallies_(matcher.catalog().signatures.size()) {}

void TextScan::begin_file(std::string file) {
  file_ = std::move(file);
  follows_.clear();
  files_.push_back(file_);
  specific_lines_.emplace_back();
}

void TextScan::add_line(const logs::TextLine& line) {
  // Lines after a multi-line opener (torchrun's "Root Cause") complete its captures.
  for (OpenFollow& f : follows_) {
    matcher_.match_follow(f.signature, line.text, tallies_[f.signature].hits[f.hit].captures);
    --f.lines_left;
  }
  std::erase_if(follows_, [](const OpenFollow& f) { return f.lines_left <= 0; });

  scratch_.clear();
  matcher_.match(line.text, scratch_);
  if (files_.empty()) begin_file(file_);
  for (TextMatch& m : scratch_) {
    const Signature& sig = matcher_.catalog().signatures[m.signature];
    if (!sig.fallback && specific_lines_.back().size() < kMaxSpecificLines) {
      specific_lines_.back().push_back(line.at.line);
    }
    Tally& tally = tallies_[m.signature];
    ++tally.matches;
    if (tally.hits.size() >= kMaxHits) continue;
    Evidence evidence{line.at.rank, file_, line.at.line, line.at.t, line.text};
    tally.hits.push_back(Hit{std::move(evidence), std::move(m.captures)});
    if (sig.follow.within > 0) {
      follows_.push_back(OpenFollow{m.signature, tally.hits.size() - 1, sig.follow.within});
    }
  }
}

std::vector<Diagnosis> TextScan::finish() {
  follows_.clear();
  std::vector<Diagnosis> out;
  const Catalog& catalog = matcher_.catalog();
  for (std::size_t s = 0; s < tallies_.size(); ++s) {
    Tally& tally = tallies_[s];
    if (catalog.signatures[s].fallback) drop_explained(tally);
    if (tally.hits.empty()) continue;
    // Earliest first: by wall time where both lines have one, else in reading order.
    const bool timed = std::all_of(tally.hits.begin(), tally.hits.end(),
                                   [](const Hit& h) { return h.evidence.t > 0; });
    if (timed) {
      std::stable_sort(tally.hits.begin(), tally.hits.end(),
                       [](const Hit& a, const Hit& b) { return a.evidence.t < b.evidence.t; });
    }
    const Signature& sig = catalog.signatures[s];
    const Hit& first = tally.hits.front();
    Diagnosis d;
    d.id = sig.text.id;
    d.klass = sig.text.klass;
    d.gate = sig.text.gate;
    d.confidence = sig.text.confidence;
    d.specificity = sig.text.specificity;
    d.symptom = fill_template(sig.text.symptom, first.captures);
    d.cause = fill_template(sig.text.cause, first.captures);
    d.fix = fill_template(sig.text.fix, first.captures);
    d.failed_rank = first.evidence.rank;
    if (!sig.rank_capture.empty()) {
      auto it = first.captures.find(sig.rank_capture);
      int rank = -1;
      if (it != first.captures.end()) {
        std::from_chars(it->second.data(), it->second.data() + it->second.size(), rank);
      }
      if (rank >= 0) d.failed_rank = rank;
    }
    d.matches = tally.matches;
    for (Hit& hit : tally.hits) d.evidence.push_back(std::move(hit.evidence));
    out.push_back(std::move(d));
  }
  tallies_.assign(tallies_.size(), Tally{});
  specific_lines_.clear();
  files_.clear();
  return out;
}

void TextScan::drop_explained(Tally& tally) const {
  const std::size_t before = tally.hits.size();
  std::erase_if(tally.hits, [&](const Hit& hit) {
    for (std::size_t f = 0; f < files_.size(); ++f) {
      if (files_[f] != hit.evidence.file) continue;
      for (std::int64_t line : specific_lines_[f]) {
        if (std::abs(line - hit.evidence.line) <= kTracebackReach) return true;
      }
    }
    return false;
  });
  tally.matches -= static_cast<std::int64_t>(before - tally.hits.size());
}

}  // namespace bigmac::diagnose
