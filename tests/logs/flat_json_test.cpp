// The flat reader is a fast path: on every line it either gives exactly the fields simdjson
// gives, or defers. These tests hold it to that, and check that the common shape of contract
// lines does take it (else the speed it exists for is silently lost).
#include <gtest/gtest.h>

#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "bag_text.h"
#include "logs/flat_json.h"
#include "logs/json_line.h"

namespace bigmac::logs {
namespace {

using testing::bag_text;

struct Outcome {
  bool ok = false;
  std::string fields;  // or the error
};

Outcome simdjson_reads(std::string_view line) {
  JsonLineReader reader(JsonLineReader::Path::kSimdjsonOnly);
  FieldBag bag;
  std::string error;
  bool ok = reader.read(line, line.size(), bag, error);
  return {ok, ok ? bag_text(bag) : error};
}

// `slack` is appended after the line as readable bytes the reader must not use. A fresh
// reader knows no line shapes, so it reads key by key; pass one that has read earlier lines to
// try the shapes it remembers.
std::optional<std::string> flat_reads(std::string_view line, std::string_view slack = {},
                                      FlatJsonReader* reader = nullptr) {
  std::string buffer(line);
  buffer += slack;
  FieldBag bag;
  FlatJsonReader fresh;
  FlatJsonReader& r = reader != nullptr ? *reader : fresh;
  if (r.read(std::string_view(buffer).substr(0, line.size()), buffer.size(), bag) !=
      FlatJson::kRead) {
    return std::nullopt;
  }
  return bag_text(bag);
}

// Key by key, by the shapes `seasoned` remembers, and simdjson: where a flat read happens, all
// agree.
void expect_agreement(std::string_view line, FlatJsonReader& seasoned) {
  std::optional<std::string> flat = flat_reads(line);
  std::optional<std::string> shaped = flat_reads(line, {}, &seasoned);
  EXPECT_EQ(flat.has_value(), shaped.has_value()) << line;
  if (!flat && !shaped) return;
  Outcome reference = simdjson_reads(line);
  ASSERT_TRUE(reference.ok) << "flat read a line simdjson rejects (" << reference.fields
                            << "): " << line;
  if (flat) {
    EXPECT_EQ(*flat, reference.fields) << line;
  }
  if (shaped) {
    EXPECT_EQ(*shaped, reference.fields) << line;
  }
}

// Lines of the common shape: the flat reader must take them, and agree.
const char* const kFlatLines[] = {
    R"({"ev":"mb","rank":1,"t":1764412800.001000,"global_step":12,"stage":1,"mb":3,"phase":"F","start":1764412800.000500,"end":1764412800.001000})",
    R"({"ev":"step","rank":0,"t":3,"global_step":0,"loss":4.17,"grad_norm":1.93,"lr":0.0006,"samples_per_step":8,"step_ms":14.2})",
    R"({"ev": "step", "rank": 0, "global_step": 7, "loss": 2.302585092994046, "lr": 6e-05})",
    "{\t\"ev\" :\t\"heartbeat\" , \"global_step\" : 9 }  \r",
    R"({"ev":"shape","shape":[2, 32, 64],"where":"send","name":"hidden_states"})",
    R"({"ev":"layout","tied":["embed.weight","lm_head.weight"],"tied_duplicate_count":1})",
    R"({"ev":"layout","tied":[],"input_shape":[]})",
    R"({"ev":"x","shape":[1,"a"],"tied":["a",1],"input_shape":[1.5,2],"name":true,"where":null})",
    R"({"ev":"run","future_field":[1,2,"x",true,null],"other":false,"rank":-3})",
    R"({"ev":"step","loss":-0.0,"grad_norm":0,"lr":-0,"step_ms":1E3,"value":1.5e-7})",
    R"({"ev":"step","loss":0.1234567890123456789,"grad_norm":123456789012345678901234.5})",
    R"({"ev":"step","loss":0.1234567890123456789999999999999999999,"lr":1.00000000000000000001})",
    R"({"ev":"step","loss":2.2250738585072014e-308,"lr":1.7976931348623157e308})",
    R"({"ev":"step","global_step":999999999999999999,"samples_per_step":-999999999999999999})",
    R"({"ev":"step","lr":0.00060000,"loss":0.123456789012345,"grad_norm":1234.567890123,"t":-0.1})",
    R"({"ev":"step","lr":0.0000000000000001,"loss":1234.1234567890123,"step_ms":98765432.12345678})",
    R"({"ev":"step","t":17644128000010001,"step_ms":99999999999999.9999999})",
    R"({})",
    R"({"ev":"mb","phase":"","path":" ~!#$%&'()*+,-./:;<=>?@[]^_`{|}"})",
};

TEST(FlatJson, ReadsTheCommonShapeAsSimdjsonDoes) {
  FlatJsonReader seasoned;
  for (int pass = 0; pass < 3; ++pass) {  // the second and third by remembered shapes
    for (const char* line : kFlatLines) {
      SCOPED_TRACE(line);
      std::optional<std::string> flat = flat_reads(line, {}, &seasoned);
      ASSERT_TRUE(flat.has_value()) << "deferred a line of the common shape";
      Outcome reference = simdjson_reads(line);
      ASSERT_TRUE(reference.ok) << reference.fields;
      EXPECT_EQ(*flat, reference.fields);
    }
  }
}

// A remembered shape is a guess: lines of the same event that differ from it anywhere (a
// value of another kind, another key, other spacing, broken JSON) are read or deferred exactly
// as without it.
TEST(FlatJson, ShapesNeverChangeWhatIsRead) {
  const char* const kSameEvent[] = {
      R"({"ev":"mb","rank":1,"t":1.5,"stage":0,"mb":2,"phase":"F","start":1.25,"end":1.5})",
      R"({"ev":"mb","rank":12,"t":1.5,"stage":0,"mb":2,"phase":"B","start":1,"end":2.75})",
      R"({"ev":"mb","rank":"1","t":1.5,"stage":0,"mb":2,"phase":"F","start":1.25,"end":1.5})",
      R"({"ev":"mb","rank":1,"t":1.5,"stage":0,"mb":2,"phase":7,"start":1.25,"end":1.5})",
      R"({"ev":"mb","rank":1,"t":1.5,"stage":0,"mb":2,"phase":"F","start":1.25})",
      R"({"ev":"mb","rank":1,"t":1.5,"stage":0,"mb":2,"phase":"F","start":1.25,"end":1.5,"x":1})",
      R"({"ev":"mb","rank":1, "t":1.5,"stage":0,"mb":2,"phase":"F","start":1.25,"end":1.5})",
      R"({"ev":"mb","rank":1,"t":1.5,"stage":0,"mb":2,"phase":"F","start":1.25,"end":1.5} )",
      R"({"ev":"mb","rank":1,"t":1.5,"stage":0,"mb":2,"phase":"F","start":1.25,"end":1.5}x)",
      R"({"ev":"mb","rank":1,"t":1.5,"stage":0,"mb":2,"phase":"F","start":1.25,"end":1.5)",
      R"({"ev":"mb","rank":1,"t":1.5,"stage":0,"mb":2,"phase":"F","start":NaN,"end":1.5})",
      R"({"ev":"mb","rank":1,"t":1.5,"stage":0,"mb":2,"phase":"F\"","start":1,"end":1.5})",
      R"({"ev":"mb","rank":1,"t":1.5e3,"stage":0,"mb":2,"phase":"F","start":1.25,"end":1.5})",
      R"({"ev":"mb","rank":-0,"t":01,"stage":0,"mb":2,"phase":"F","start":1.25,"end":1.5})",
      R"({"ev":"mb","rank":1,"t":1.5,"stage":0,"mb":2,"phase":"F","start":[1],"end":1.5})",
      R"({"ev":"mb","rank":1,"t":1.5,"stage":0,"mb":2,"phase":"F","start":true,"end":1.5})",
      R"({"ev":"mb"})",
      R"({"ev":"mb","ev":"loss","value":1})",
      // Python's json.dumps: spaces after ':' and ','.
      R"({"ev": "mb", "rank": 1, "t": 1764412800.1234567, "phase": "F", "start": 1.25})",
      R"({"ev": "mb", "rank": 1, "t": 1764412800.1234568, "phase": "B", "start": 2.5})",
      R"({"ev": "mb", "rank": 1, "t": 1764412800.1234568, "phase": "B", "start": 2.5, "x": 1})",
      R"({"ev": "mb","rank": 1, "t": 1764412800.1234568, "phase": "B", "start": 2.5})",
  };
  FlatJsonReader seasoned;
  std::mt19937 rng(7);
  for (int i = 0; i < 2000; ++i) {
    const char* line = kSameEvent[i < 36 ? i / 2 : rng() % std::size(kSameEvent)];
    SCOPED_TRACE(line);
    expect_agreement(line, seasoned);
  }
  EXPECT_GT(seasoned.shaped_lines(), 100);

  // Lines as Python's json.dumps writes them take remembered shapes too.
  FlatJsonReader python;
  const std::string spaced =
      R"({"ev": "step", "rank": 0, "t": 1764412800.5, "global_step": 3, "loss": 2.25})";
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(flat_reads(spaced, {}, &python).has_value());
  EXPECT_EQ(python.shaped_lines(), 2);
}

TEST(FlatJson, ReadsNumbersExactly) {
  FieldBag bag;
  FlatJsonReader reader;
  std::string line =
      R"({"t":1764412800.0015,"loss":-2.5,"lr":6e-4,"rank":-12,"step":0,"value":0.00060000})";
  ASSERT_EQ(reader.read(line, line.size(), bag), FlatJson::kRead);
  EXPECT_EQ(bag.at(FieldKey::kT).d, 1764412800.0015);
  EXPECT_EQ(bag.at(FieldKey::kLoss).d, -2.5);
  EXPECT_EQ(bag.at(FieldKey::kLr).d, 6e-4);
  EXPECT_EQ(bag.at(FieldKey::kRank).kind, Slot::Kind::kInt);
  EXPECT_EQ(bag.at(FieldKey::kRank).i, -12);
  EXPECT_EQ(bag.at(FieldKey::kStep).i, 0);
  EXPECT_EQ(bag.at(FieldKey::kValue).d, 6e-4);
}

// Not the common shape, or not JSON: never judged here.
const char* const kDeferredLines[] = {
    R"({"ev":"a\"b"})",
    R"({"path":"\u00e9t\u00e9"})",
    "{\"path\":\"\xc3\xa9t\xc3\xa9\"}",
    "{\"path\":\"\xff\xfe\"}",
    "{\"path\":\"tab\there\"}",
    R"({"ev":"x","o":{"a":1}})",
    R"({"ev":"x","l":[[1]]})",
    R"({"ev":"x","l":[{}]})",
    R"({"loss":NaN})",
    R"({"loss":nan})",
    R"({"loss":-Infinity})",
    R"({"loss":01})",
    R"({"loss":1.})",
    R"({"loss":.5})",
    R"({"loss":-})",
    R"({"loss":1e})",
    R"({"loss":1e+})",
    R"({"loss":+1})",
    R"({"loss":1e400})",
    R"({"loss":1e0000000000000000000000000000000000000000})",
    R"({"global_step":1234567890123456789})",
    R"({"global_step":18446744073709551616})",
    R"({"loss":1,})",
    R"({"loss" 1})",
    R"({"loss":1 2})",
    R"({"loss":1}x)",
    R"({"loss":1} {"lr":2})",
    R"({"loss":tru})",
    R"({"loss":truex})",
    R"({"loss":nul})",
    R"({"ev":"x)",
    R"({"ev":"x")",
    R"({"ev")",
    R"({)",
    R"([1,2])",
    R"("ev")",
    R"({,})",
    R"({"l":[1,]})",
    R"({"l":[,1]})",
    R"({"l":[1 2]})",
    "",
    " ",
};

TEST(FlatJson, DefersWhatItDoesNotHandle) {
  for (const char* line : kDeferredLines) {
    EXPECT_FALSE(flat_reads(line).has_value()) << line;
  }
}

// Whole words are loaded past the line when the buffer allows; what lies there must never count.
TEST(FlatJson, NeverUsesBytesPastTheLine) {
  struct Case {
    const char* line;
    const char* slack;
  };
  const Case cases[] = {
      {R"({"rank":12)", "34}\n"},
      {R"({"rank":12.5)", "00}\n"},
      {R"({"t":1764412800)", ".5}\n"},
      {R"({"t":1764412800.00)", "0001}"},
      {R"({"ev":"mb)", "\"}\n{\"ev\":\"step\"}"},
      {R"({"ev":"mb","glo)", "bal_step\":1}"},
      {R"({"ev":"mb","global_step)", "\":1}"},
      {R"({"ev":"mb")", ",\"rank\":1}"},
      {R"({"l":[1,2)", "]}"},
  };
  for (const Case& c : cases) {
    EXPECT_FALSE(flat_reads(c.line, c.slack).has_value()) << c.line << " + " << c.slack;
  }
  // And with a complete line, slack changes nothing.
  for (const char* line : kFlatLines) {
    EXPECT_EQ(flat_reads(line, "9999999999999999\"\"\"\"\"\"\"\"\"\"\"}]]]]"), flat_reads(line))
        << line;
  }
}

// Random lines near the common shape, and random damage to them: wherever the flat reader
// reads, simdjson reads the same.
TEST(FlatJson, AgreesWithSimdjsonOnRandomLines) {
  std::mt19937_64 rng(20261129);
  auto pick = [&](std::size_t n) { return static_cast<std::size_t>(rng() % n); };
  const char* const keys[] = {"ev", "rank", "t", "global_step", "loss", "lr", "shape",
                              "tied", "phase", "x", "mb", "value"};
  const char* const alphabet = "0123456789-+.eE";
  auto number = [&] {
    std::string n;
    std::size_t len = 1 + pick(26);
    for (std::size_t i = 0; i < len; ++i) n += alphabet[pick(pick(4) == 0 ? 15 : 10)];
    if (pick(3) == 0) n = "-" + n;
    return n;
  };
  auto value = [&]() -> std::string {
    switch (pick(6)) {
      case 0:
        return "\"" + std::string(pick(12), static_cast<char>('a' + pick(26))) + "\"";
      case 1:
        return "[" + number() + "," + number() + "]";
      case 2:
        return pick(2) == 0 ? "true" : "null";
      default:
        return number();
    }
  };
  int flat_read = 0;
  FlatJsonReader seasoned;
  for (int i = 0; i < 40000; ++i) {
    std::string line = "{";
    if (pick(2) == 0) {
      // One of four events with its own fixed keys: shapes recur with other values.
      std::size_t event = pick(4);
      line += R"("ev":"e)" + std::to_string(event) + "\"";
      for (std::size_t f = 0; f < 3 + event; ++f) {
        line += ",\"" + std::string(keys[(event * 3 + f) % std::size(keys)]) + "\":";
        if (pick(6) == 0) {
          line += pick(2) == 0 ? value() : number();
        } else if (pick(2) == 0) {
          line += std::to_string(static_cast<std::int64_t>(rng() % 200000) - 1000);
        } else {
          line += std::to_string(rng() % 100000) + "." + std::to_string(rng() % 1000000);
        }
      }
    } else {
      std::size_t fields = pick(6);
      for (std::size_t f = 0; f < fields; ++f) {
        if (f > 0) line += pick(8) == 0 ? " , " : ",";
        line += "\"" + std::string(keys[pick(std::size(keys))]) + "\":" + value();
      }
    }
    line += "}";
    for (std::size_t damage = pick(4) == 0 ? 1 + pick(3) : 0; damage > 0; --damage) {
      line[pick(line.size())] = "{}[]\",:0 .e-x\\"[pick(14)];
    }
    SCOPED_TRACE(line);
    expect_agreement(line, seasoned);
    if (flat_reads(line)) ++flat_read;
  }
  // The generator must reach the fast path, and its shapes, often, or this test checks little.
  EXPECT_GT(flat_read, 10000);
  EXPECT_GT(seasoned.shaped_lines(), 5000);
}

}  // namespace
}  // namespace bigmac::logs
