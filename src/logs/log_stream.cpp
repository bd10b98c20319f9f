#include "logs/log_stream.h"

#include <algorithm>
#include <cstring>

#include "logs/contract_record.h"
#include "logs/field_bag.h"
#include "logs/json_line.h"
#include "logs/kv_line.h"
#include "logs/line_prefix.h"
#include "logs/metric_line.h"
#include "logs/python_dict_line.h"
#include "logs/settings_line.h"
#include "logs/step_line.h"
#include "logs/step_numbering.h"

namespace bigmac::logs {

namespace {

/// Formats that may share one stream: the two spellings of the contract go together.
enum class Family { kAny, kContract, kMegatron, kTorchtitan, kRegex, kPythonDict, kPlain };

Family family_of(LogFormat format) {
  switch (format) {
    case LogFormat::kAuto:
      return Family::kAny;
    case LogFormat::kBigmac:
    case LogFormat::kKeyValue:
      return Family::kContract;
    case LogFormat::kMegatron:
      return Family::kMegatron;
    case LogFormat::kTorchtitan:
      return Family::kTorchtitan;
    case LogFormat::kRegex:
      return Family::kRegex;
    case LogFormat::kPythonDict:
      return Family::kPythonDict;
    case LogFormat::kPlain:
      return Family::kPlain;
  }
  return Family::kAny;
}

bool looks_like_contract(std::string_view text) {
  return (!text.empty() && text.front() == '{' && text.find("\"ev\"") != std::string_view::npos) ||
         text.find(kKeyValueMarker) != std::string_view::npos;
}

}  // namespace

struct LogStream::Impl {
  Family family;
  int default_rank;
  const FieldMap* custom;
  StreamLimits limits;
  StreamStats stats;
  std::string partial;
  bool skipping = false;  // inside an oversized line, dropping bytes up to its newline
  JsonLineReader json;
  FieldBag bag;
  std::string clean;
  std::string error;
  std::int64_t steps = 0;
  StepNumbering numbering;
  std::string counter_name;  // of plain step lines, fixed by the first

  bool allows(Family f) const { return family == Family::kAny || family == f; }

  void detected(LogFormat format) {
    if (stats.detected == LogFormat::kAuto) stats.detected = format;
    if (family == Family::kAny) family = family_of(format);
  }

  void unparseable(const RecordOrigin& at, std::string reason, std::string_view text) {
    ++stats.unparseable;
    ++stats.unparseable_by_rank[at.rank];
    if (stats.unparseable_examples.size() < limits.max_examples) {
      stats.unparseable_examples.push_back(
          UnparseableLine{at.line, at.rank, std::move(reason), std::string(text.substr(0, 160))});
    }
  }

  void context(const RecordOrigin& at, std::string_view text, bool cut, std::vector<Record>& out) {
    TextLine kept;
    kept.at = at;
    kept.truncated = cut || text.size() > limits.max_text_bytes;
    kept.text.assign(text.substr(0, limits.max_text_bytes));
    ++stats.context_lines;
    out.emplace_back(std::move(kept));
  }

  void record(Record&& r, std::vector<Record>& out) {
    ++stats.records;
    if (std::holds_alternative<StepRecord>(r)) ++steps;
    out.emplace_back(std::move(r));
  }

  void contract(const RecordOrigin& at, std::string_view text, LogFormat format,
                std::vector<Record>& out) {
    switch (build_contract_record(bag, at, out)) {
      case ContractResult::kRecord:
        detected(format);
        ++stats.records;
        return;
      case ContractResult::kUnknownEvent:
        detected(format);
        ++stats.unknown_events;
        context(at, text, false, out);
        return;
      case ContractResult::kBad:
        unparseable(at, bag.error(), text);
        return;
    }
  }

  // A step-line format's verdict on a line; false when the line is not of that format.
  bool step_line(LineMatch match, const RecordOrigin& at, std::string_view text, LogFormat format,
                 StepLine& step, std::vector<Record>& out) {
    if (match == LineMatch::kNotMine) return false;
    if (match == LineMatch::kBad) {
      unparseable(at, error, text);
      return true;
    }
    detected(format);
    if (step.counter) step.record.global_step = numbering.global_step(*step.counter);
    step.record.at = at;
    record(Record(std::move(step.record)), out);
    return true;
  }

  void settings_line(const RecordOrigin& at, std::string_view text, std::vector<Record>& out) {
    SettingsRecord settings;
    if (read_settings_line(text, settings, error) == LineMatch::kBad) {
      unparseable(at, error, text);
      return;
    }
    settings.at = at;
    record(Record(std::move(settings)), out);
  }

  // One complete line without its '\n'; `readable` bytes from line.data() may be read.
  void line(std::string_view raw, std::size_t readable, std::vector<Record>& out) {
    ++stats.lines;
    if (!raw.empty() && raw.back() == '\r') raw.remove_suffix(1);
    // A UTF-8 byte-order mark (Windows editors, PowerShell's Out-File) is no part of line 1.
    if (stats.lines == 1 && raw.starts_with("\xEF\xBB\xBF")) {
      raw.remove_prefix(3);
      readable -= 3;
    }
    // A JSON record as trainers write it has no prefix to strip: the hot path skips the call.
    LinePrefix prefix;
    if (!raw.empty() && raw.front() == '{') {
      prefix.rest = raw;
    } else {
      prefix = strip_line_prefix(raw);
    }
    std::string_view text = prefix.rest;
    RecordOrigin at{prefix.rank >= 0 ? prefix.rank : default_rank, stats.lines,
                    prefix.has_time ? prefix.t : 0};
    if (text.empty()) {
      ++stats.blank_lines;
      return;
    }
    // The contract is read whatever the format: a trainer whose step lines are its own writes
    // the events the gates need besides (run, batch, model, done) in the contract's form.
    if (text.front() == '{') {
      std::size_t offset = static_cast<std::size_t>(text.data() - raw.data());
      if (json.read(text, readable - offset, bag, error)) {
        if (bag.has(FieldKey::kEv)) {
          contract(at, text, LogFormat::kBigmac, out);
          return;
        }
      } else if (text.find("\"ev\"") != std::string_view::npos) {
        unparseable(at, error, text);
        return;
      }
    }
    if (has_escape(text)) {
      remove_ansi(text, clean);
      text = clean;
    }
    if (text.starts_with(kSettingsMarker)) {
      settings_line(at, text, out);
      return;
    }
    if (std::size_t marker = text.find(kKeyValueMarker); marker != std::string_view::npos) {
      if (read_kv_line(text.substr(marker + 7), bag, error)) {
        contract(at, text, LogFormat::kKeyValue, out);
      } else {
        unparseable(at, error, text);
      }
      return;
    }
    // The exact formats first, the user's map, then the general ones (auto tries them all).
    StepLine step;
    if (allows(Family::kMegatron) && step_line(read_megatron_line(text, step, error), at, text,
                                               LogFormat::kMegatron, step, out)) {
      return;
    }
    if (allows(Family::kTorchtitan) && step_line(read_torchtitan_line(text, step, error), at, text,
                                                 LogFormat::kTorchtitan, step, out)) {
      return;
    }
    if (allows(Family::kRegex) && custom != nullptr &&
        step_line(custom->read(text, steps, step.record, error), at, text, LogFormat::kRegex, step,
                  out)) {
      return;
    }
    if (allows(Family::kPythonDict)) {
      LineMatch match = read_python_dict_line(text, step, error);
      if (!step.counter) step.record.global_step = steps;
      if (step_line(match, at, text, LogFormat::kPythonDict, step, out)) return;
    }
    if (allows(Family::kPlain) && step_line(read_metric_line(text, counter_name, step, error), at,
                                            text, LogFormat::kPlain, step, out)) {
      return;
    }
    context(at, text, false, out);
  }

  // The head of a line longer than max_line_bytes: never parsed, only reported.
  void oversized(std::string_view head, std::vector<Record>& out) {
    ++stats.lines;
    ++stats.oversized_lines;
    LinePrefix prefix = strip_line_prefix(head);
    RecordOrigin at{prefix.rank >= 0 ? prefix.rank : default_rank, stats.lines,
                    prefix.has_time ? prefix.t : 0};
    if (looks_like_contract(prefix.rest)) {
      unparseable(at, "line longer than " + std::to_string(limits.max_line_bytes) + " bytes",
                  prefix.rest);
      return;
    }
    context(at, prefix.rest, true, out);
  }
};

LogStream::LogStream(LogFormat format, int default_rank, const FieldMap* custom,
                     StreamLimits limits)
    : impl_(std::make_unique<Impl>()) {
  impl_->family = family_of(format);
  if (format != LogFormat::kAuto) impl_->stats.detected = format;
  impl_->default_rank = default_rank;
  impl_->custom = custom;
  impl_->limits = limits;
}
LogStream::~LogStream() = default;
LogStream::LogStream(LogStream&&) noexcept = default;
LogStream& LogStream::operator=(LogStream&&) noexcept = default;

void LogStream::feed(std::string_view bytes, std::vector<Record>& out) {
  Impl& s = *impl_;
  s.stats.bytes += static_cast<std::int64_t>(bytes.size());
  const std::size_t max_line = s.limits.max_line_bytes;
  while (!bytes.empty()) {
    const void* found = std::memchr(bytes.data(), '\n', bytes.size());
    std::size_t nl = found == nullptr
                         ? std::string_view::npos
                         : static_cast<std::size_t>(static_cast<const char*>(found) - bytes.data());
    if (s.skipping) {
      if (nl == std::string_view::npos) return;
      s.skipping = false;
      bytes.remove_prefix(nl + 1);
      continue;
    }
    if (nl == std::string_view::npos) {
      // Keep at most one line's worth; past that the line is reported from its head.
      std::size_t room = max_line + 1 - std::min(s.partial.size(), max_line + 1);
      s.partial.append(bytes.substr(0, room));
      if (s.partial.size() > max_line) {
        s.oversized(s.partial, out);
        s.partial.clear();
        s.partial.shrink_to_fit();
        s.skipping = true;
      }
      return;
    }
    if (s.partial.empty()) {
      std::string_view line = bytes.substr(0, nl);
      if (line.size() > max_line) {
        s.oversized(line.substr(0, s.limits.max_text_bytes), out);
      } else {
        s.line(line, bytes.size(), out);
      }
    } else {
      if (s.partial.size() + nl > max_line) {
        s.oversized(s.partial, out);
      } else {
        s.partial.append(bytes.substr(0, nl));
        s.line(s.partial, s.partial.size(), out);
      }
      s.partial.clear();
    }
    bytes.remove_prefix(nl + 1);
  }
}

void LogStream::finish(std::vector<Record>& out) {
  Impl& s = *impl_;
  if (!s.partial.empty()) s.line(s.partial, s.partial.size(), out);
  s.partial.clear();
  s.skipping = false;
}

const StreamStats& LogStream::stats() const { return impl_->stats; }

}  // namespace bigmac::logs
