// Differential libFuzzer target: on every line of the input, the flat JSON reader either defers
// or gives exactly the fields simdjson gives (bit for bit), and bytes readable past the line
// never change what it reads.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "bag_text.h"
#include "logs/flat_json.h"
#include "logs/json_line.h"

namespace {

using bigmac::logs::FieldBag;
using bigmac::logs::FlatJson;
using bigmac::logs::JsonLineReader;
using bigmac::logs::KeyGuess;
using bigmac::logs::read_flat_json;
using bigmac::logs::testing::bag_text;

void check(bool condition) {
  if (!condition) std::abort();
}

void check_line(std::string_view line) {
  static KeyGuess guess;  // shared across lines, as in a stream
  FieldBag flat;
  bool flat_read = read_flat_json(line, line.size(), flat, guess) == FlatJson::kRead;

  // The same line with slack that looks like more of it: digits, quotes, closers.
  std::string padded(line);
  padded += "0123456789\"]}\"0123456789,\"ev\":1}";
  FieldBag flat_padded;
  bool padded_read = read_flat_json(std::string_view(padded).substr(0, line.size()),
                                    padded.size(), flat_padded, guess) == FlatJson::kRead;
  check(padded_read == flat_read);
  if (!flat_read) return;
  check(bag_text(flat_padded) == bag_text(flat));

  static JsonLineReader reference(JsonLineReader::Path::kSimdjsonOnly);
  FieldBag bag;
  std::string error;
  check(reference.read(line, line.size(), bag, error));
  check(bag_text(bag) == bag_text(flat));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  while (!input.empty()) {
    std::size_t nl = input.find('\n');
    check_line(input.substr(0, nl));
    if (nl == std::string_view::npos) break;
    input.remove_prefix(nl + 1);
  }
  return 0;
}
