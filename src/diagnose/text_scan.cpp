#include "diagnose/text_scan.h"

#include <re2/re2.h>

#include <algorithm>
#include <cstdlib>

#include "core/checked_integer.h"
#include "diagnose/line_origin.h"

namespace bigmac::diagnose {
namespace {

constexpr std::size_t kMaxHits = 6;
constexpr std::size_t kMaxSpecificLines = 4096;
constexpr std::size_t kMaxNodes = 256;
constexpr std::int64_t kTracebackReach = 3;  ///< lines between an error line and its explanation

int parse_rank(const std::string& digits) { return parse_integer_as<int>(digits).value_or(-1); }

}  // namespace

TextScan::TextScan(const TextMatcher& matcher)
    : matcher_(matcher), tallies_(matcher.catalog().signatures.size()) {}

void TextScan::begin_file(std::string file) {
  file_ = std::move(file);
  follows_.clear();
  window_.reset();
  files_.push_back(file_);
  specific_lines_.emplace_back();
  tracebacks_.begin_file(files_.size() - 1);
}

void TextScan::note_read(const logs::TextLine& line) {
  ++read_.lines;
  context_.read(line);
  tracebacks_.read(line);
  if (!read_.first_raised && !tracebacks_.errors().empty()) {
    read_.first_raised = tracebacks_.errors().front();
    read_.first_raised_file = file_;
  }
  if (!read_.nccl_info && line.text.find("NCCL INFO") != std::string::npos) read_.nccl_info = true;
  if (read_.error_like_lines.size() >= kErrorLikeKept) return;
  // Words a failure's line carries in any library's spelling, as one pass of one automaton; a
  // line a signature explains counts too (it is what was read, not what was left over).
  static const RE2 kErrorLike(
      "Error|ERROR|error:|Traceback|Exception|FAILED|WARN|Killed|Aborted|[Ff]atal|FATAL");
  if (!RE2::PartialMatch(line.text, kErrorLike)) return;
  Evidence e{line.at.rank, file_, line.at.line, line.at.t, line.text};
  if (!read_.error_like) read_.first_error_like = e;
  read_.error_like = true;
  read_.error_like_lines.push_back(std::move(e));
}

void TextScan::add_line(const logs::TextLine& line) {
  // Lines after a multi-line opener (torchrun's "Root Cause") complete its captures.
  for (OpenFollow& f : follows_) {
    matcher_.match_follow(f.signature, line.text, tallies_[f.signature].hits[f.hit].captures);
    --f.lines_left;
  }
  std::erase_if(follows_, [](const OpenFollow& f) { return f.lines_left <= 0; });

  if (files_.empty()) begin_file(file_);
  note_read(line);
  window_.open(line);
  scratch_.clear();
  matcher_.match_window(window_.text(), window_.seam(), scratch_);
  // One message, one diagnosis per class: where a general and a specific signature of the same
  // class both match (a size-less and a sized out-of-memory pattern), the specific one speaks.
  const auto& sigs = matcher_.catalog().signatures;
  for (const TextMatch& m : scratch_) {
    const EntryText& text = sigs[m.signature].text;
    const bool outranked = std::any_of(scratch_.begin(), scratch_.end(), [&](const TextMatch& o) {
      const EntryText& other = sigs[o.signature].text;
      return o.signature != m.signature && other.klass == text.klass &&
             (other.specificity > text.specificity ||
              (other.specificity == text.specificity && o.signature < m.signature));
    });
    if (!outranked) record(m);
  }
  window_.commit();
}

void TextScan::record(const TextMatch& m) {
  const Signature& sig = matcher_.catalog().signatures[m.signature];
  const auto& pieces = window_.pieces();
  const std::size_t head = window_.piece_at(m.begin);
  const WindowPiece& first = pieces[head];
  const WindowPiece& last = pieces.back();

  Evidence evidence{first.rank, file_, first.line, first.t, *first.text};
  for (std::size_t p = head + 1; p < pieces.size(); ++p) {
    evidence.text += '\n';
    evidence.text += *pieces[p].text;
  }
  evidence.lines = static_cast<int>(pieces.size() - head);
  if (evidence.rank < 0) evidence.rank = rank_in_text(evidence.text);
  int rank = evidence.rank;
  if (!sig.rank_capture.empty()) {
    if (auto it = m.captures.find(sig.rank_capture); it != m.captures.end()) {
      if (const int named = parse_rank(it->second); named >= 0) rank = named;
    }
  }

  // A launcher's report of a failed rank explains no line near it: the rank's own error just
  // above torchrun's "failed (exitcode: 1)" is the story that report is context for.
  if (!sig.fallback && sig.library < 0 && sig.text.klass != kChildFailedClass &&
      specific_lines_.back().size() + 2 <= kMaxSpecificLines) {
    specific_lines_.back().push_back(first.line);
    if (last.line != first.line) specific_lines_.back().push_back(last.line);
  }

  Tally& tally = tallies_[m.signature];
  ++tally.matches;
  tally.ranks.add(rank);
  if (first.t > 0) {
    if (first.t < tally.earliest_t) {
      tally.earliest_t = first.t;
      tally.earliest_rank = rank;
    }
  } else {
    tally.untimed = true;
  }
  const std::size_t file_index = files_.size() - 1;
  if (tally.matches == 1) tally.first_file = file_index;
  if (file_index != tally.first_file) tally.several_files = true;
  if (tally.first_read_rank < 0) tally.first_read_rank = rank;
  if (tally.nodes.size() < kMaxNodes) {
    if (std::string host = host_in_text(evidence.text); !host.empty())
      tally.nodes.insert(std::move(host));
  }

  if (tally.hits.size() >= kMaxHits) {
    // Full: an earlier timed line takes the place of the latest one, so the evidence shows the
    // first failures even when the log is not in time order (per-rank files read one by one).
    if (evidence.t <= 0) return;
    auto latest =
        std::max_element(tally.hits.begin(), tally.hits.end(),
                         [](const Hit& a, const Hit& b) { return a.evidence.t < b.evidence.t; });
    if (latest->evidence.t <= 0 || latest->evidence.t <= evidence.t) return;
    *latest = Hit{std::move(evidence), m.captures};
    return;
  }
  tally.hits.push_back(Hit{std::move(evidence), m.captures});
  if (sig.follow.within > 0) {
    follows_.push_back(OpenFollow{m.signature, tally.hits.size() - 1, sig.follow.within});
  }
}

std::vector<Diagnosis> TextScan::finish(const LogContext& known) {
  follows_.clear();
  std::vector<Diagnosis> out;
  const Catalog& catalog = matcher_.catalog();
  LogContext context = context_;
  context.merge(known);
  for (std::size_t s = 0; s < tallies_.size(); ++s) {
    Tally& tally = tallies_[s];
    // A fallback or a library's message within a few lines of a hand-written match is part
    // of the traceback that match explains.
    if (catalog.signatures[s].fallback || catalog.signatures[s].library >= 0) drop_explained(tally);
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
    const SignatureVariant* variant = nullptr;
    for (const SignatureVariant& v : sig.when) {
      if (context.holds(v.context)) {
        variant = &v;
        break;
      }
    }
    const auto words = [&](const std::optional<std::string> SignatureVariant::*field,
                           const std::string& own) -> const std::string& {
      return variant != nullptr && (variant->*field) ? *(variant->*field) : own;
    };
    d.gate = words(&SignatureVariant::gate, sig.text.gate);
    if (variant != nullptr && variant->confidence) d.confidence = *variant->confidence;
    d.symptom = fill_template(words(&SignatureVariant::symptom, sig.text.symptom), first.captures);
    d.cause = fill_template(words(&SignatureVariant::cause, sig.text.cause), first.captures);
    d.fix = fill_template(words(&SignatureVariant::fix, sig.text.fix), first.captures);
    d.failed_rank = first.evidence.rank;
    if (!sig.rank_capture.empty()) {
      auto it = first.captures.find(sig.rank_capture);
      const int named = it != first.captures.end() ? parse_rank(it->second) : -1;
      if (named >= 0) d.failed_rank = named;
    }
    d.library_message = sig.library >= 0;
    d.matches = tally.matches;
    d.ranks = tally.ranks.values();
    // Which rank showed it first: the earliest timestamp when every match had one; else the
    // reading order, which means something only inside one (interleaved) file.
    if (!tally.untimed && tally.earliest_rank >= 0) {
      d.first_rank = tally.earliest_rank;
      d.first_by = "time";
    } else if (!tally.several_files && tally.first_read_rank >= 0) {
      d.first_rank = tally.first_read_rank;
      d.first_by = "log order";
    }
    if (d.first_rank >= 0) d.failed_rank = d.first_rank;
    d.nodes.assign(tally.nodes.begin(), tally.nodes.end());
    for (Hit& hit : tally.hits) d.evidence.push_back(std::move(hit.evidence));
    out.push_back(std::move(d));
  }
  // A library's message of a class a hand-written signature found says nothing more.
  std::set<std::string> written;
  for (const Diagnosis& d : out) {
    if (!d.library_message) written.insert(d.klass);
  }
  std::erase_if(
      out, [&](const Diagnosis& d) { return d.library_message && written.count(d.klass) > 0; });
  attach_tracebacks(out);
  tallies_.assign(tallies_.size(), Tally{});
  tracebacks_ = TracebackReader{};
  context_ = {};
  specific_lines_.clear();
  files_.clear();
  window_.reset();
  return out;
}

namespace {

constexpr std::int64_t kMessageReach = 8;  ///< lines of a message after its `Type:` line

}  // namespace

// Where each diagnosis's first line ends a traceback: where it was raised, the chain's root
// when it was raised while handling another, and which diagnosis explains that root.
void TextScan::attach_tracebacks(std::vector<Diagnosis>& out) const {
  const auto file_index = [&](const std::string& name) -> std::optional<std::size_t> {
    for (std::size_t f = 0; f < files_.size(); ++f) {
      if (files_[f] == name) return f;
    }
    return std::nullopt;
  };
  // The exception whose message the evidence line is in: its `Type:` line or a few below.
  const auto raised = [&](const Evidence& e) -> const RaisedError* {
    const auto f = file_index(e.file);
    if (!f) return nullptr;
    const RaisedError* best = nullptr;
    for (const RaisedError& r : tracebacks_.errors()) {
      if (r.file != *f || r.line > e.line || e.line - r.line > kMessageReach) continue;
      if (r.rank >= 0 && e.rank >= 0 && r.rank != e.rank) continue;
      if (best == nullptr || r.line > best->line) best = &r;
    }
    return best;
  };
  const Catalog& catalog = matcher_.catalog();
  const auto fallback = [&](const Diagnosis& d) {
    return std::any_of(catalog.signatures.begin(), catalog.signatures.end(),
                       [&](const Signature& s) { return s.fallback && s.text.id == d.id; });
  };
  for (Diagnosis& d : out) {
    if (d.evidence.empty()) continue;
    const RaisedError* error = raised(d.evidence.front());
    if (error == nullptr) continue;
    d.raised_at = error->where();
    if (error->chained_from < 0) continue;
    const RaisedError& root = tracebacks_.root_of(*error);
    d.while_handling = root.message.empty() ? root.type : root.type + ": " + root.message;
    if (!root.where().empty()) d.while_handling += " (at " + root.where() + ")";
    // The diagnosis that explains the root, if a signature other than the fallback found it.
    for (const Diagnosis& other : out) {
      if (&other == &d || other.id == d.id || fallback(other)) continue;
      const bool explains_root = std::any_of(other.evidence.begin(), other.evidence.end(),
                                             [&](const Evidence& e) { return raised(e) == &root; });
      if (explains_root) {
        d.consequence_of = other.id;
        break;
      }
    }
  }
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
