#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/data_file.h"
#include "core/error.h"
#include "diagnose/message_catalog.h"

namespace bigmac::diagnose {

/// Extra lines read after a signature matched (multi-line summaries such as torchrun's
/// ChildFailedError): their named captures join the match.
struct FollowSpec {
  int within = 0;
  std::vector<std::string> patterns;
};

/// The words every catalog entry carries (stages/diagnoses.toml).
struct EntryText {
  std::string id;
  std::string klass;
  std::string gate;  ///< single | dp | pp2 | shapes | target
  int specificity = 50;
  double confidence = 0.5;
  std::string symptom, cause, fix;  ///< templates with `{capture}` / `{value}` placeholders
  int line = 0;                     ///< where the entry starts in the catalog
};

/// Other words for a signature where the log shows a context (`[[signature.when]]`,
/// log_context.h): each field given replaces the signature's own.
struct SignatureVariant {
  std::string context;  ///< one of context_names()
  std::optional<std::string> gate, symptom, cause, fix;
  std::optional<double> confidence;
  int line = 0;
};

/// A text signature: RE2 patterns over non-record log lines.
struct Signature {
  EntryText text;
  std::vector<std::string> patterns;
  std::string rank_capture;  ///< capture naming the failed rank; empty: the line's rank
  bool fallback = false;     ///< counts only on lines no other signature matched
  FollowSpec follow;
  std::vector<SignatureVariant> when;  ///< the first whose context holds speaks
  /// Made from a library's message (Catalog::libraries[library].messages[message]): it counts
  /// only on lines no hand-written signature matched. -1: written in the catalog.
  int library = -1;
  std::size_t message = 0;
  /// For a message: its longest literal run, which the one-pass set searches for (literal
  /// alternatives keep the set's automaton small); the pattern then confirms.
  std::string literal;
};

/// The words of a metric rule; the detection is code (metric_rules.h).
struct RuleText {
  EntryText text;
};

/// Which of a gate's failed checks a failure class explains (`[[class]]`).
struct ClassSpec {
  std::string id;
  /// The class ends a rank or never lets it start (`kind = "ending"`, the default): it explains
  /// every check of Catalog::ending_explains and any failed check that judged nothing. A
  /// `records` class's cause is in what the ranks logged: it explains only `explains`.
  bool ends_a_rank = true;
  std::vector<std::string> explains;  ///< check names
  /// What a library's message of this class means (gate, confidence, cause, fix); empty cause:
  /// the class has no words for messages.
  std::string gate;
  double confidence = 0.4;
  std::string cause, fix;
  /// `[[class.when]]`: other words for the class's messages where the log shows a context (a
  /// CUDA device-ordinal message under a launcher is a rank mapping, not a device count).
  std::vector<SignatureVariant> when;
  int line = 0;  ///< where the entry starts in the catalog
};

/// The diagnosis catalog: data, so a user adds a signature with one TOML entry.
struct Catalog {
  std::string path;
  std::vector<Signature> signatures;
  std::vector<RuleText> rules;
  /// `[[class]]`: the classes with more to say than the default (ending, [ending]'s checks).
  std::vector<ClassSpec> classes;
  /// The messages the libraries print (stages/messages/), whose classified, matchable ones are
  /// signatures too (attach_messages).
  std::vector<MessageLibrary> libraries;
  /// `[ending] explains`: the checks that need what a rank would have written had it run to
  /// the end, which every class that ends a rank explains.
  std::vector<std::string> ending_explains;
  int ending_line = 0;
  /// The `[[class]]` entry of `klass`, or nullptr (the default: it ends a rank).
  const ClassSpec* class_spec(std::string_view klass) const;

  /// The rule entry named `id`, or nullptr when the catalog leaves the rule out (it then does
  /// not run).
  const RuleText* rule(std::string_view id) const;
};

/// Reads and checks a catalog: every pattern compiles, every placeholder is defined by every
/// pattern of its entry, rule ids are known (gates: unknown_gates). Errors name the entry
/// (file:line:col).
Expected<Catalog> parse_catalog(const config::DataFile& file);
/// A catalog file, with the built-in libraries' messages of the classes it gives words for.
Expected<Catalog> load_catalog(const std::filesystem::path& path);

/// Makes a signature of every classified error message of `libraries` (and of NCCL's `WARN`,
/// its report of a failing call) that has a pattern (message_pattern), with its class's words, and
/// keeps the libraries in the catalog. A message whose class has no words is an error naming its
/// file and line, or is left out when `skip_classes_without_words` (a catalog of one's own). Call
/// once, after parsing.
Expected<void> attach_messages(Catalog& catalog, std::vector<MessageLibrary> libraries,
                               bool skip_classes_without_words = false);

/// Entries whose gate to return to is none of `gate_ids` (the gate files' ids, the one list of
/// gates), one error each naming the entry and its line.
Errors unknown_gates(const Catalog& catalog, const std::vector<std::string>& gate_ids);

/// The catalog compiled into the program from stages/diagnoses.toml, with the messages of
/// stages/messages/ attached.
Expected<Catalog> builtin_catalog();

}  // namespace bigmac::diagnose
