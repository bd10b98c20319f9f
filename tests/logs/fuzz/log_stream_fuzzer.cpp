// libFuzzer target for one LogStream format (BIGMAC_FUZZ_FORMAT). Whatever the bytes, the
// stream must not crash, hang or grow without bound, and must yield the same records however
// the input is split.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "logs/field_map.h"
#include "logs/log_stream.h"

namespace {

using bigmac::logs::FieldMap;
using bigmac::logs::LogFormat;
using bigmac::logs::LogStream;
using bigmac::logs::Record;
using bigmac::logs::StreamLimits;

const FieldMap* custom_map() {
  static const auto map = FieldMap::compile({{"step", R"(step[ =:]+(\d+))"},
                                             {"loss", R"(loss[ =:]+(\S+))"},
                                             {"lr", R"(lr[ =:]+([0-9.eE+-]+))"}});
  return map ? &*map : nullptr;
}

void check(bool condition) {
  if (!condition) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  StreamLimits limits;
  limits.max_line_bytes = 4096;  // small, so the oversized-line path is reached too
  const FieldMap* custom = BIGMAC_FUZZ_FORMAT == LogFormat::kRegex ? custom_map() : nullptr;

  LogStream whole(BIGMAC_FUZZ_FORMAT, -1, custom, limits);
  std::vector<Record> a;
  whole.feed(input, a);
  whole.finish(a);

  // The same bytes split at a point chosen by the input itself.
  std::size_t split = size == 0 ? 0 : data[0] % (size + 1);
  LogStream pieces(BIGMAC_FUZZ_FORMAT, -1, custom, limits);
  std::vector<Record> b;
  pieces.feed(input.substr(0, split), b);
  pieces.feed(input.substr(split), b);
  pieces.finish(b);

  const auto& stats = whole.stats();
  check(a.size() == b.size());
  check(stats.records + stats.context_lines == static_cast<std::int64_t>(a.size()));
  check(stats.records + stats.context_lines + stats.unparseable + stats.blank_lines <= stats.lines);
  check(stats.unparseable == pieces.stats().unparseable);
  for (std::size_t i = 0; i < a.size(); ++i) check(a[i].index() == b[i].index());
  return 0;
}
