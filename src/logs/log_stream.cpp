#include "logs/log_stream.h"

namespace bigmac::logs {

struct LogStream::Impl {
  LogFormat format;
  int default_rank;
  const FieldMap* custom;
  StreamLimits limits;
  StreamStats stats;
  std::string partial;

  void line(std::string_view text, std::vector<Record>& out) {
    ++stats.lines;
    if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
    if (text.empty()) {
      ++stats.blank_lines;
      return;
    }
    TextLine kept;
    kept.at.rank = default_rank;
    kept.at.line = stats.lines;
    kept.truncated = text.size() > limits.max_text_bytes;
    kept.text = std::string(text.substr(0, limits.max_text_bytes));
    ++stats.context_lines;
    out.emplace_back(std::move(kept));
  }
};

LogStream::LogStream(LogFormat format, int default_rank, const FieldMap* custom,
                     StreamLimits limits)
    : impl_(std::make_unique<Impl>(Impl{format, default_rank, custom, limits, {}, {}})) {}
LogStream::~LogStream() = default;
LogStream::LogStream(LogStream&&) noexcept = default;
LogStream& LogStream::operator=(LogStream&&) noexcept = default;

void LogStream::feed(std::string_view bytes, std::vector<Record>& out) {
  impl_->stats.bytes += static_cast<std::int64_t>(bytes.size());
  while (!bytes.empty()) {
    std::size_t nl = bytes.find('\n');
    if (nl == std::string_view::npos) {
      impl_->partial.append(bytes);
      return;
    }
    impl_->partial.append(bytes.substr(0, nl));
    impl_->line(impl_->partial, out);
    impl_->partial.clear();
    bytes.remove_prefix(nl + 1);
  }
}

void LogStream::finish(std::vector<Record>& out) {
  if (!impl_->partial.empty()) impl_->line(impl_->partial, out);
  impl_->partial.clear();
}

const StreamStats& LogStream::stats() const { return impl_->stats; }

}  // namespace bigmac::logs
