#include "diagnose/traceback.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <optional>

namespace bigmac::diagnose {
namespace {

constexpr std::string_view kTraceback = "Traceback (most recent call last):";
constexpr std::string_view kDuringHandling =
    "During handling of the above exception, another exception occurred:";
constexpr std::string_view kDirectCause =
    "The above exception was the direct cause of the following exception:";
constexpr std::size_t kMaxText = 300;  ///< of a message or a frame kept

std::size_t indent_of(std::string_view text) {
  const std::size_t n = text.find_first_not_of(" \t");
  return n == std::string_view::npos ? text.size() : n;
}

struct Frame {
  std::string_view path;
  std::string_view line;
  std::string_view function;
};

// `File "/x/train.py", line 88, in main` (already without its indentation).
std::optional<Frame> parse_frame(std::string_view text) {
  if (!text.starts_with("File \"")) return std::nullopt;
  text.remove_prefix(6);
  const std::size_t close = text.find("\", line ");
  if (close == std::string_view::npos) return std::nullopt;
  Frame f;
  f.path = text.substr(0, close);
  text.remove_prefix(close + 8);
  const std::size_t digits = text.find_first_not_of("0123456789");
  f.line = text.substr(0, digits);
  if (f.line.empty()) return std::nullopt;
  text.remove_prefix(f.line.size());
  if (text.starts_with(", in ")) f.function = text.substr(5);
  return f;
}

// `RuntimeError: message`, `torch.distributed.DistBackendError: message`, `KeyboardInterrupt`:
// a dotted identifier, then the end of the line or `:` and the message.
bool parse_error_line(std::string_view text, std::string_view& type, std::string_view& message) {
  std::size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (std::isalnum(c) == 0 && c != '_' && c != '.') break;
    ++i;
  }
  if (i == 0 || std::isalpha(static_cast<unsigned char>(text[0])) == 0 || text[i - 1] == '.')
    return false;
  type = text.substr(0, i);
  if (i == text.size()) {
    message = {};
    return true;
  }
  if (text[i] != ':') return false;
  message = text.substr(i + 1);
  if (!message.empty() && message.front() == ' ') message.remove_prefix(1);
  return true;
}

std::string clipped(std::string_view text) { return std::string(text.substr(0, kMaxText)); }

}  // namespace

std::string_view shown_path(std::string_view path) {
  for (std::string_view marker : {"site-packages/", "dist-packages/"}) {
    if (const std::size_t at = path.rfind(marker); at != std::string_view::npos)
      return path.substr(at + marker.size());
  }
  if (const std::size_t at = path.find("/lib/python3"); at != std::string_view::npos) {
    const std::size_t slash = path.find('/', at + 12);
    if (slash != std::string_view::npos) return path.substr(slash + 1);
  }
  return path;
}

bool program_path(std::string_view path) {
  return path.find("site-packages/") == std::string_view::npos &&
         path.find("dist-packages/") == std::string_view::npos &&
         path.find("/lib/python3") == std::string_view::npos && !path.starts_with("<frozen");
}

void TracebackReader::begin_file(std::size_t file) {
  file_ = file;
  open_.clear();
}

TracebackReader::Open& TracebackReader::open_for(int rank) {
  for (Open& o : open_) {
    if (o.rank == rank) return o;
  }
  open_.push_back(Open{});
  open_.back().rank = rank;
  return open_.back();
}

void TracebackReader::read(const logs::TextLine& line) {
  const std::string_view text = line.text;
  const std::string_view word = text.substr(indent_of(text));
  // Most lines are in no traceback and start none: one look at the first letter each.
  const bool starts = !word.empty() && word.front() == 'T' && word.starts_with(kTraceback);
  if (!starts && std::none_of(open_.begin(), open_.end(),
                              [](const Open& o) { return o.phase != Phase::kNone; })) {
    return;
  }
  if (open_.size() > 64 && !starts) return;  // a log of very many ranks: only their starts count
  Open& open = open_for(line.at.rank);
  if (starts) {
    const bool chained = open.phase == Phase::kAfterError && open.chain_to >= 0;
    const int chain_to = chained ? open.chain_to : -1;
    const bool direct = chained && open.direct;
    const int last = open.last;
    open = Open{};
    open.rank = line.at.rank;
    open.phase = Phase::kFrames;
    open.last = last;
    open.chain_to = chain_to;
    open.direct = direct;
    return;
  }
  if (open.phase == Phase::kAfterError) {
    if (word == kDuringHandling || word == kDirectCause) {
      open.chain_to = open.last;
      open.direct = word == kDirectCause;
    }
    return;  // a message's further lines, blank lines, or the rank's next output
  }
  if (open.phase != Phase::kFrames) return;
  if (const auto frame = parse_frame(word)) {
    const std::string shown =
        clipped(fmt::format("{}:{}{}{}", shown_path(frame->path), frame->line,
                            frame->function.empty() ? "" : " in ", frame->function));
    open.innermost = shown;
    if (program_path(frame->path)) open.program_frame = shown;
    // A frame's source line follows it, unless Python has none (`<frozen runpy>`, `<string>`).
    open.source_next = !frame->path.starts_with("<");
    return;
  }
  // The log may have taken the indentation: a frame's source line is the line after it, and
  // carets (`^^^^`) and `[Previous line repeated N more times]` are no traceback's end.
  if (open.source_next) {
    open.source_next = false;
    return;
  }
  if (word.empty() || word.find_first_not_of("^~ ") == std::string_view::npos ||
      (word.front() == '[' && word.find("Previous line repeated") != std::string_view::npos)) {
    return;
  }
  std::string_view type;
  std::string_view message;
  if (parse_error_line(word, type, message)) {
    finish_error(open, line, type, message);
  } else {
    open.phase = Phase::kNone;  // not a traceback's end: other output broke it
  }
}

void TracebackReader::finish_error(Open& open, const logs::TextLine& line, std::string_view type,
                                   std::string_view message) {
  const int chained_from = open.chain_to;
  open.phase = Phase::kAfterError;
  open.chain_to = -1;
  if (errors_.size() >= kMaxErrors) {
    ++dropped_;
    open.last = -1;
    return;
  }
  RaisedError e;
  e.rank = line.at.rank;
  e.file = file_;
  e.line = line.at.line;
  e.t = line.at.t;
  e.type = clipped(type);
  e.message = clipped(message);
  e.program_frame = std::move(open.program_frame);
  e.raised_in = std::move(open.innermost);
  e.chained_from = chained_from;
  e.direct_cause = chained_from >= 0 && open.direct;
  open.last = static_cast<int>(errors_.size());
  errors_.push_back(std::move(e));
}

const RaisedError* TracebackReader::at(std::size_t file, std::int64_t line) const {
  for (const RaisedError& e : errors_) {
    if (e.file == file && e.line == line) return &e;
  }
  return nullptr;
}

const RaisedError& TracebackReader::root_of(const RaisedError& error) const {
  const RaisedError* e = &error;
  // Each link points at an earlier exception, so the walk ends; bounded all the same.
  for (std::size_t hops = 0; e->chained_from >= 0 && hops < errors_.size(); ++hops)
    e = &errors_[static_cast<std::size_t>(e->chained_from)];
  return *e;
}

}  // namespace bigmac::diagnose
