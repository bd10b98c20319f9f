#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "diagnose/catalog.h"
#include "diagnose/diagnosis.h"
#include "diagnose/message_template.h"
#include "logs/record.h"

namespace re2 {
class RE2;
}

namespace bigmac::diagnose {

/// One signature matching one line, with the captures of the pattern that matched.
struct TextMatch {
  std::size_t signature = 0;  ///< index into Catalog::signatures
  TemplateValues captures;    ///< `1`, `2`... and named groups
};

/// Every pattern of the catalog compiled into one RE2::Set: a line is searched once for all
/// signatures; only the patterns that hit run again (as single RE2s) for their captures.
class TextMatcher {
 public:
  /// `catalog` must outlive the matcher.
  static Expected<TextMatcher> build(const Catalog& catalog);

  TextMatcher(TextMatcher&&) noexcept;
  TextMatcher& operator=(TextMatcher&&) noexcept;
  ~TextMatcher();

  /// Appends the signatures matching `text` (at most one match per signature: its first
  /// matching pattern). Fallback signatures count only when no other signature matched.
  void match(std::string_view text, std::vector<TextMatch>& out) const;

  /// Adds the named captures of signature `signature`'s follow patterns found in `text`.
  void match_follow(std::size_t signature, std::string_view text, TemplateValues& captures) const;

  const Catalog& catalog() const { return *catalog_; }

 private:
  struct Compiled;
  explicit TextMatcher(const Catalog& catalog);

  const Catalog* catalog_;
  std::unique_ptr<Compiled> compiled_;
};

/// Collects matches over the lines of many files into one Diagnosis per signature: the
/// earliest match gives the captures, the first few matches are the evidence.
class TextScan {
 public:
  explicit TextScan(const TextMatcher& matcher);

  /// Starts the next file; lines of one file must come in order.
  void begin_file(std::string file);
  void add_line(const logs::TextLine& line);

  /// One diagnosis per signature that matched, unranked.
  std::vector<Diagnosis> finish();

 private:
  struct Hit {
    Evidence evidence;
    TemplateValues captures;
  };
  struct Tally {
    std::int64_t matches = 0;
    std::vector<Hit> hits;  ///< the first kMaxHits, in reading order
  };
  struct OpenFollow {
    std::size_t signature = 0;
    std::size_t hit = 0;
    int lines_left = 0;
  };

  void drop_explained(Tally& tally) const;

  const TextMatcher& matcher_;
  std::string file_;
  std::vector<Tally> tallies_;
  std::vector<OpenFollow> follows_;
  std::vector<TextMatch> scratch_;
  /// Per file index, the lines a specific (non-fallback) signature matched: a fallback hit
  /// next to one is part of a traceback that signature already explains. Bounded.
  std::vector<std::vector<std::int64_t>> specific_lines_;
  std::vector<std::string> files_;
};

}  // namespace bigmac::diagnose
