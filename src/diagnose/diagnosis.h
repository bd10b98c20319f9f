#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace bigmac::diagnose {

/// One log line (or record) that supports a diagnosis.
struct Evidence {
  int rank = -1;          ///< -1 when the line carries no rank
  std::string file;       ///< log file; empty for facts from the launcher
  std::int64_t line = 0;  ///< 1-based; 0 when not from a file
  double t = 0;           ///< wall time when the line carried one, else 0
  std::string text;       ///< the line as read (launcher prefixes removed)
  int lines = 1;          ///< lines of a message broken over several (joined by '\n' in text)
};

/// The failure class of a master port another process holds: infrastructure, not the trainer.
inline constexpr std::string_view kPortInUseClass = "port_in_use";

/// The failure class of a launcher's report that a rank failed (torchrun's summary): context
/// for the rank's own error, ranked below it where that error was read (ranking.h).
inline constexpr std::string_view kChildFailedClass = "child_failed";

/// The failure class of a peer that closed its connection: a consequence of another rank's
/// exit, ranked after every other diagnosis.
inline constexpr std::string_view kPeerExitedClass = "peer_exited";

/// What went wrong, why, what to change and which gate to return to. Produced by text
/// signatures and metric rules of the catalog (stages/diagnoses.toml); the gate engine, the
/// `diagnose` command and the reports all print this one type.
struct Diagnosis {
  std::string id;     ///< catalog entry (`nccl_duplicate_gpu`, `loss_non_finite`)
  std::string klass;  ///< failure class (`port_in_use`); several ids may share one
  std::string symptom;
  std::string cause;
  std::string fix;
  std::string gate;                ///< route back: single | dp | pp2 | shapes | target
  double confidence = 0;           ///< 0..1
  int specificity = 0;             ///< 1..100, ranking weight
  int failed_rank = -1;            ///< the rank this diagnosis blames, -1 when unknown
  std::vector<Evidence> evidence;  ///< earliest first, bounded
  std::int64_t matches = 0;        ///< lines that matched (evidence keeps only the first few)
  /// Every rank whose lines showed this failure, ascending (not only the evidence's).
  std::vector<int> ranks;
  int first_rank = -1;             ///< the rank that showed it first; -1 when the logs cannot say
  std::string first_by;            ///< how first_rank was decided: "time" or "log order"
  std::vector<std::string> nodes;  ///< hosts named by the matching lines (NCCL's host:pid:tid)
  /// The failed checks of the gate this diagnosis explains (diagnose/check_explanation.h);
  /// empty outside a gate.
  std::vector<std::string> explains;
  /// Found by a library's message (stages/messages/), not a hand-written signature.
  bool library_message = false;
  /// Where the exception that ends the evidence's Python traceback was raised: the program's
  /// innermost frame (`train.py:88 in main`), else the library's; empty when the evidence ends
  /// no traceback (diagnose/traceback.h).
  std::string raised_at;
  /// When that exception was raised while handling another (or from it), the first of the
  /// chain: `OSError: [Errno 98] Address already in use (at train.py:20 in setup)`.
  std::string while_handling;
  /// The id of the diagnosis of that first exception, when another signature explains it:
  /// this one is its consequence and ranks after it.
  std::string consequence_of;
};

/// The text form: symptom, evidence (rank, file:line), cause, fix, and the gate to go back to.
/// `index` (1-based) numbers several diagnoses; 0 prints no number.
void print_diagnosis(std::ostream& out, const Diagnosis& diagnosis, int index = 0);

/// All diagnoses, best first, or a line saying none was found.
void print_diagnoses(std::ostream& out, const std::vector<Diagnosis>& diagnoses);

nlohmann::json to_json(const Diagnosis& diagnosis);
nlohmann::json to_json(const std::vector<Diagnosis>& diagnoses);

}  // namespace bigmac::diagnose
