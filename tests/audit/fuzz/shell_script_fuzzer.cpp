// libFuzzer target for the launch-script reader: any bytes are tokenized and read without a
// crash, a hang or undefined behaviour, and every place it reports lies on a line of the input.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "audit/shell_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  bigmac::audit::ProjectFacts facts;
  bigmac::audit::read_shell_script(text, "fuzz.sh", facts);
  const auto lines = 1 + std::count(text.begin(), text.end(), '\n');
  for (const bigmac::audit::Place& p : facts.places) {
    if (p.line < 1 || p.line > lines) std::abort();
  }
  for (const bigmac::audit::FileReference& r : facts.references) {
    if (r.line < 1 || r.line > lines) std::abort();
  }
  return 0;
}
