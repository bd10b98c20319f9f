#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>

#include "audit/config_entries.h"

namespace bigmac::audit {
namespace {

/// Finds the line of each object key: SAX reports keys in the order they are written, so the
/// n-th key event is the n-th string token followed by ':' in the text.
class KeyLines {
 public:
  explicit KeyLines(const std::string& text) : s_(text) {}

  int next() {
    while (pos_ < s_.size()) {
      const char c = s_[pos_++];
      if (c == '\n') ++line_;
      if (c != '"') continue;
      const int line = line_;
      while (pos_ < s_.size() && s_[pos_] != '"') pos_ += s_[pos_] == '\\' ? 2 : 1;
      ++pos_;
      std::size_t after = pos_;
      while (after < s_.size() && std::isspace(static_cast<unsigned char>(s_[after]))) {
        if (s_[after] == '\n') ++line_;
        ++after;
      }
      pos_ = after;
      if (after < s_.size() && s_[after] == ':') return line;
    }
    return 0;
  }

 private:
  const std::string& s_;
  std::size_t pos_ = 0;
  int line_ = 1;
};

class EntryCollector final : public nlohmann::json_sax<nlohmann::json> {
 public:
  EntryCollector(const std::string& text, std::vector<ConfigEntry>& out)
      : lines_(text), out_(out) {}

  bool null() override { return scalar("null"); }
  bool boolean(bool v) override { return scalar(v ? "true" : "false"); }
  bool number_integer(number_integer_t v) override { return scalar(std::to_string(v)); }
  bool number_unsigned(number_unsigned_t v) override { return scalar(std::to_string(v)); }
  bool number_float(number_float_t v, const string_t& raw) override {
    (void)v;
    return scalar(raw);
  }
  bool string(string_t& v) override { return scalar(v); }
  bool binary(binary_t&) override { return scalar("<binary>"); }

  bool start_object(std::size_t) override {
    open_element();
    frames_.emplace_back();
    return true;
  }
  bool key(string_t& k) override {
    frames_.back().key = k;
    frames_.back().line = lines_.next();
    return true;
  }
  bool end_object() override {
    frames_.pop_back();
    close_element();
    return true;
  }
  bool start_array(std::size_t) override {
    open_element();
    frames_.emplace_back();
    frames_.back().is_array = true;
    frames_.back().line = frames_.size() > 1 ? frames_[frames_.size() - 2].line : 0;
    return true;
  }
  bool end_array() override {
    Frame done = std::move(frames_.back());
    frames_.pop_back();
    if (done.scalars && !frames_.empty() && !frames_.back().is_array) {
      out_.push_back(ConfigEntry{keys(), SettingValue::from_text(done.list + "]"), done.line});
    }
    close_element();
    return true;
  }
  bool parse_error(std::size_t position, const std::string&,
                   const nlohmann::detail::exception& e) override {
    error_position = position;
    error_message = e.what();
    return false;
  }

  std::size_t error_position = 0;
  std::string error_message;

 private:
  struct Frame {
    bool is_array = false;
    std::string key;
    int line = 0;
    std::size_t index = 0;
    bool scalars = true;
    std::string list = "[";
  };

  /// The keys leading to the current value; array elements are "[i]".
  std::vector<std::string> keys() const {
    std::vector<std::string> out;
    for (const Frame& f : frames_) {
      out.push_back(f.is_array ? "[" + std::to_string(f.index) + "]" : f.key);
    }
    return out;
  }

  void open_element() {
    if (!frames_.empty() && frames_.back().is_array) frames_.back().scalars = false;
  }

  void close_element() {
    if (!frames_.empty() && frames_.back().is_array) ++frames_.back().index;
  }

  bool scalar(const std::string& text) {
    if (frames_.empty()) return true;
    Frame& top = frames_.back();
    if (top.is_array) {
      if (top.scalars) top.list += (top.index ? ", " : "") + text;
      ++top.index;
      return true;
    }
    out_.push_back(ConfigEntry{keys(), SettingValue::from_text(text), top.line});
    return true;
  }

  KeyLines lines_;
  std::vector<ConfigEntry>& out_;
  std::vector<Frame> frames_;
};

}  // namespace

Expected<std::vector<ConfigEntry>> json_entries(const std::string& text, const std::string& file) {
  std::vector<ConfigEntry> out;
  EntryCollector collector(text, out);
  if (!nlohmann::json::sax_parse(text, &collector)) {
    Error error = make_error(ErrorKind::kInput, "JSON: " + collector.error_message,
                             "fix the JSON syntax there");
    error.file = file;
    const std::size_t end = std::min(collector.error_position, text.size());
    error.line =
        1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<long>(end), '\n'));
    const auto last_newline = text.rfind('\n', end == 0 ? 0 : end - 1);
    error.column =
        static_cast<int>(end - (last_newline == std::string::npos ? 0 : last_newline + 1));
    return tl::unexpected(error);
  }
  return out;
}

}  // namespace bigmac::audit
