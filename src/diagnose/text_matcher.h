#pragma once

#include <cstddef>
#include <memory>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "diagnose/catalog.h"
#include "diagnose/message_template.h"

namespace bigmac::diagnose {

/// One signature matching, with the captures of the pattern that matched.
struct TextMatch {
  std::size_t signature = 0;  ///< index into Catalog::signatures
  TemplateValues captures;    ///< `1`, `2`... and named groups
  std::size_t begin = 0;      ///< where the match starts in the searched text
};

/// Every pattern of the catalog compiled into RE2::Sets: a text is searched once for all
/// signatures (linear time); only the patterns that hit run again, as single RE2s, for their
/// position and captures. Patterns are searched in a space-tolerant form (wrapped_pattern.h) so
/// that a message broken over lines matches in the lines joined; patterns anchored to a line
/// (`^`, `$`) and fallbacks are searched in the current line alone, as written. Signatures made
/// from the libraries' messages count only where no hand-written signature matched, one per
/// line, and like any match they silence the fallbacks.
class TextMatcher {
 public:
  /// `catalog` must outlive the matcher.
  static Expected<TextMatcher> build(const Catalog& catalog);

  TextMatcher(TextMatcher&&) noexcept;
  TextMatcher& operator=(TextMatcher&&) noexcept;
  ~TextMatcher();

  /// Appends the signatures matching one line on its own.
  void match(std::string_view text, std::vector<TextMatch>& out) const {
    match_window(text, 0, out);
  }

  /// Appends the signatures with a match that ends in the current line, `window[seam:]`, of a
  /// window that starts with earlier lines of the same stream (JoinWindow). A match that ends
  /// before the seam is left out: it was reported with an earlier line. At most one match per
  /// signature (its first pattern that matches); fallback signatures count only when no other
  /// signature matched.
  void match_window(std::string_view window, std::size_t seam, std::vector<TextMatch>& out) const;

  /// Adds the named captures of signature `signature`'s follow patterns found in `text`.
  void match_follow(std::size_t signature, std::string_view text, TemplateValues& captures) const;

  const Catalog& catalog() const { return *catalog_; }

 private:
  struct Compiled;
  explicit TextMatcher(const Catalog& catalog);
  /// Appends the library message that matches the window best, if any (its own set).
  void match_messages(std::string_view window, std::size_t seam, std::vector<TextMatch>& out) const;

  const Catalog* catalog_;
  std::unique_ptr<Compiled> compiled_;
};

}  // namespace bigmac::diagnose
