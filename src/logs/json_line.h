#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "logs/field_bag.h"

namespace bigmac::logs {

/// Reads one bigmac-log JSON object into a FieldBag with simdjson On-Demand. Bare `NaN`,
/// `Infinity`, `-Infinity` (Python's json) and `nan`/`inf` (printf) are not JSON; a line that
/// fails to parse and holds such a word outside strings is retried with the word quoted, so the
/// common path pays nothing for them.
class JsonLineReader {
 public:
  JsonLineReader();
  ~JsonLineReader();
  JsonLineReader(JsonLineReader&&) noexcept;
  JsonLineReader& operator=(JsonLineReader&&) noexcept;

  /// `readable` is how many bytes starting at line.data() may be read (at least line.size());
  /// with enough slack past the line the parser reads in place, otherwise it copies.
  /// False with `error` set when the line is not one well-formed JSON object.
  bool read(std::string_view line, std::size_t readable, FieldBag& bag, std::string& error);

  /// Reads consecutive lines that each hold one object in one simdjson pass (iterate_many),
  /// which saves the per-document setup on the hot path. `text` holds the lines; line i ends
  /// with the '\n' at offset `line_ends[i]`; each line is shorter than kBatchBytes. `readable` as
  /// for read() and at least text.size() + padding(). Calls `on_line(i)` with the bag filled
  /// for each line read, in order, and returns how many were read: it stops at the first line
  /// it cannot vouch for, which the caller then passes to read() (NaN words, bad JSON, ...).
  std::size_t read_lines(std::string_view text, std::size_t readable,
                         std::span<const std::size_t> line_ends, FieldBag& bag,
                         const std::function<void(std::size_t)>& on_line);

  /// The stage-1 window of read_lines; lines must be shorter. Small, so that a retry after a
  /// bad line costs little.
  static constexpr std::size_t kBatchBytes = std::size_t{1} << 16;

  /// Bytes of readable slack the parser needs past a line to avoid a copy.
  static std::size_t padding();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace bigmac::logs
