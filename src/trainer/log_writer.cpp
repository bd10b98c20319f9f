#include "trainer/log_writer.h"

#include <fmt/format.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>

#include "core/file_creation.h"

namespace bigmac::trainer {

std::string format_json_double(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "Infinity" : "-Infinity";
  std::string text = fmt::format("{}", value);
  if (text.find_first_of(".eE") == std::string::npos) text += ".0";
  return text;
}

double wall_time_s() {
  auto now = std::chrono::system_clock::now().time_since_epoch();
  return std::chrono::duration<double>(now).count();
}

LogEvent::LogEvent(EventKind ev, int rank, double wall_time) {
  text_ = fmt::format("{{{}:{},{}:{},{}:{:.6f}", quote_json(key_name(FieldKey::kEv)),
                      quote_json(event_kind_name(ev)), quote_json(key_name(FieldKey::kRank)), rank,
                      quote_json(key_name(FieldKey::kT)), wall_time);
}

void LogEvent::key(FieldKey name) {
  text_ += ',';
  text_ += quote_json(key_name(name));
  text_ += ':';
}

LogEvent& LogEvent::field(FieldKey name, std::int64_t value) {
  key(name);
  text_ += std::to_string(value);
  return *this;
}

LogEvent& LogEvent::field(FieldKey name, double value) {
  key(name);
  text_ += format_json_double(value);
  return *this;
}

LogEvent& LogEvent::field(FieldKey name, std::string_view value) {
  key(name);
  text_ += quote_json(value);
  return *this;
}

LogEvent& LogEvent::field(FieldKey name, const std::vector<std::int64_t>& values) {
  key(name);
  text_ += fmt::format("[{}]", fmt::join(values, ","));
  return *this;
}

LogEvent& LogEvent::field(FieldKey name, const std::vector<std::string>& values) {
  key(name);
  text_ += '[';
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i > 0) text_ += ',';
    text_ += quote_json(values[i]);
  }
  text_ += ']';
  return *this;
}

Expected<LogWriter> LogWriter::open(const std::string& path, int rank) {
  if (path.empty() || path == "-") return LogWriter(stdout, false, rank);
  // Appended to, never through a planted link, FIFO or hard link (core/file_creation).
  auto fd = create_file(path, Existing::kAppend);
  if (!fd) {
    Error error = fd.error();
    error.message = "cannot open log file: " + error.message;
    if (error.hint.empty()) error.hint = "check that the directory exists and is writable";
    return tl::unexpected(error);
  }
  std::FILE* file = ::fdopen(fd->get(), "a");
  if (file == nullptr) {
    Error error = make_error(ErrorKind::kInput,
                             fmt::format("cannot open log file: {}", std::strerror(errno)));
    error.file = path;
    return tl::unexpected(error);
  }
  fd->release();  // the FILE owns it now
  return LogWriter(file, true, rank);
}

LogWriter::LogWriter(LogWriter&& other) noexcept
    : file_(other.file_), owned_(other.owned_), rank_(other.rank_) {
  other.file_ = nullptr;
  other.owned_ = false;
}

LogWriter::~LogWriter() {
  if (owned_ && file_ != nullptr) std::fclose(file_);
}

void LogWriter::write(const LogEvent& event) {
  std::string text = event.line();
  text += '\n';
  // One fwrite per line keeps lines whole even when stdout is shared with other writers.
  std::fwrite(text.data(), 1, text.size(), file_);
  std::fflush(file_);
}

}  // namespace bigmac::trainer
