// Differential libFuzzer target: on every line of the input, the flat JSON reader either defers
// or gives exactly the fields simdjson gives (bit for bit); neither the line shapes it learnt
// from earlier lines nor bytes readable past the line change what it reads.
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
using bigmac::logs::FlatJsonReader;
using bigmac::logs::JsonLineReader;
using bigmac::logs::testing::bag_text;

void check(bool condition) {
  if (!condition) std::abort();
}

void check_line(std::string_view line, FlatJsonReader& seasoned) {
  // Key by key: a fresh reader remembers no line shapes.
  FlatJsonReader fresh;
  FieldBag flat;
  bool flat_read = fresh.read(line, line.size(), flat) == FlatJson::kRead;

  // By the shapes of the earlier lines, with slack past the line that looks like more of it:
  // digits, quotes, closers. Neither may change what is read.
  std::string padded(line);
  padded += "0123456789\"]}\"0123456789,\"ev\":1}";
  FieldBag shaped;
  bool shaped_read = seasoned.read(std::string_view(padded).substr(0, line.size()), padded.size(),
                                   shaped) == FlatJson::kRead;
  check(shaped_read == flat_read);
  if (!flat_read) return;
  check(bag_text(shaped) == bag_text(flat));

  static JsonLineReader reference(JsonLineReader::Path::kSimdjsonOnly);
  FieldBag bag;
  std::string error;
  check(reference.read(line, line.size(), bag, error));
  check(bag_text(bag) == bag_text(flat));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  FlatJsonReader seasoned;  // learns shapes from the input's lines, as a stream's reader does
  while (!input.empty()) {
    std::size_t nl = input.find('\n');
    check_line(input.substr(0, nl), seasoned);
    if (nl == std::string_view::npos) break;
    input.remove_prefix(nl + 1);
  }
  return 0;
}
