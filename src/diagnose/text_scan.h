#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "diagnose/diagnosis.h"
#include "diagnose/join_window.h"
#include "diagnose/log_context.h"
#include "diagnose/message_template.h"
#include "diagnose/rank_set.h"
#include "diagnose/text_matcher.h"
#include "diagnose/traceback.h"
#include "logs/record.h"

namespace bigmac::diagnose {

/// Collects the matches of the text signatures over the lines of many files into one Diagnosis
/// per signature. Each line is searched joined with the earlier lines of its stream
/// (JoinWindow), so a message broken over lines is found where it starts. The earliest match
/// gives the captures, the first few are the evidence; every match adds its rank, so a failure
/// repeated by hundreds of ranks is summarised as ranges with the rank that showed it first.
class TextScan {
 public:
  explicit TextScan(const TextMatcher& matcher);

  /// Starts the next file; lines of one file must come in order.
  void begin_file(std::string file);
  void add_line(const logs::TextLine& line);

  /// One diagnosis per signature that matched, unranked, in the words of the first of its
  /// `when` variants whose context holds in what this scan read merged with `known` (another
  /// scan of the same run, the gate's layout).
  std::vector<Diagnosis> finish(const LogContext& known = {});

  /// What the lines read so far show of how the program ran.
  const LogContext& context() const { return context_; }
  /// The Python tracebacks read so far (until finish()).
  const TracebackReader& tracebacks() const { return tracebacks_; }

  /// What the scan read, for an honest "no diagnosis": how many lines, whether one read as an
  /// error or a warning (and the first that did), whether NCCL's INFO lines were among them.
  struct Read {
    std::int64_t lines = 0;
    bool error_like = false;
    Evidence first_error_like;  ///< valid when error_like
    bool nccl_info = false;
    /// The first exception a traceback ended with and the chain's root, when one was read.
    std::optional<RaisedError> first_raised;
    std::string first_raised_file;
    /// The first few lines that read as an error or a warning (the first is first_error_like).
    std::vector<Evidence> error_like_lines;
  };
  static constexpr std::size_t kErrorLikeKept = 8;
  const Read& read() const { return read_; }

 private:
  struct Hit {
    Evidence evidence;
    TemplateValues captures;
  };
  struct Tally {
    std::int64_t matches = 0;
    std::vector<Hit> hits;  ///< the first kMaxHits, in reading order
    RankSet ranks;
    bool untimed = false;  ///< some match had no wall time
    double earliest_t = std::numeric_limits<double>::infinity();
    int earliest_rank = -1;    ///< of the earliest timed match
    int first_read_rank = -1;  ///< of the first match read that named a rank
    std::size_t first_file = 0;
    bool several_files = false;
    std::set<std::string> nodes;
  };
  struct OpenFollow {
    std::size_t signature = 0;
    std::size_t hit = 0;
    int lines_left = 0;
  };

  void record(const TextMatch& m);
  void note_read(const logs::TextLine& line);
  void drop_explained(Tally& tally) const;
  void attach_tracebacks(std::vector<Diagnosis>& out) const;

  const TextMatcher& matcher_;
  std::string file_;
  JoinWindow window_;
  std::vector<Tally> tallies_;
  std::vector<OpenFollow> follows_;
  std::vector<TextMatch> scratch_;
  /// Per file index, the lines a hand-written, non-fallback signature matched: a fallback or
  /// library-message hit next to one is part of a traceback that signature explains. Bounded.
  std::vector<std::vector<std::int64_t>> specific_lines_;
  std::vector<std::string> files_;
  Read read_;
  LogContext context_;
  TracebackReader tracebacks_;
};

}  // namespace bigmac::diagnose
