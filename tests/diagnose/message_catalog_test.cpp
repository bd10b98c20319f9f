// The messages the libraries print (stages/messages/*.toml, collected from their sources by
// scripts/collect-messages): that every file reads, every pattern made from a message compiles,
// and that lines real users posted, in spellings no hand-written signature was written for,
// are found by the library's own message.

#include "diagnose/message_catalog.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "builtin_diagnoser.h"
#include "diagnose/text_matcher.h"

namespace bigmac::diagnose {
namespace {

using ::testing::HasSubstr;
using ::testing::Optional;

const std::vector<MessageLibrary>& libraries() {
  return test_support::builtin_diagnoser().catalog().libraries;
}

TEST(MessageCatalog, EveryLibraryOfTheDistributedStackIsCollectedWithItsSource) {
  std::map<std::string, const MessageLibrary*> by_name;
  for (const MessageLibrary& l : libraries()) by_name[l.name] = &l;
  // What the issue lists: PyTorch (c10d, elastic, the DataLoader, serialization), NCCL, Gloo,
  // CUDA, the kernel and shell, DeepSpeed, accelerate, Lightning (and transformers' Trainer).
  for (const char* name : {"pytorch", "nccl", "gloo", "cuda", "system", "deepspeed", "accelerate",
                           "lightning", "transformers"}) {
    ASSERT_TRUE(by_name.count(name)) << name << " has no stages/messages file";
    const MessageLibrary& l = *by_name[name];
    EXPECT_FALSE(l.from.empty()) << name;
    EXPECT_FALSE(l.versions.empty()) << name << ": which versions were scanned?";
    EXPECT_GT(l.classified(), 10u) << name;
    EXPECT_GT(matchable(l), l.messages.size() / 2) << name;
    for (const Message& m : l.messages) {
      ASSERT_FALSE(m.where.empty()) << l.path << ":" << m.line << " names no source file";
      ASSERT_FALSE(m.versions.empty()) << l.path << ":" << m.line;
    }
  }
  // Across versions: PyTorch from Debian's 1.13 to the virtualenv's 2.x, NCCL over its releases.
  EXPECT_GE(by_name["pytorch"]->versions.size(), 3u);
  EXPECT_GE(by_name["nccl"]->versions.size(), 10u);
}

TEST(MessageCatalog, EveryMessageSignatureCompilesAndHasItsClassWords) {
  const Catalog& catalog = test_support::builtin_diagnoser().catalog();
  std::size_t from_messages = 0;
  for (const Signature& s : catalog.signatures) {
    if (s.library < 0) continue;
    ++from_messages;
    const ClassSpec* spec = catalog.class_spec(s.text.klass);
    ASSERT_NE(spec, nullptr) << s.text.id;
    EXPECT_EQ(s.text.gate, spec->gate) << s.text.id;
    EXPECT_FALSE(s.text.cause.empty());
  }
  EXPECT_GT(from_messages, 1000u);
  // The matcher compiled them all (builtin_diagnoser asserts the build); the DFA must not
  // have given up on the set: a line that none matches is still answered.
  auto matcher = TextMatcher::build(catalog);
  ASSERT_TRUE(matcher);
  std::vector<TextMatch> out;
  matcher->match("step 10 loss 2.5", out);
  EXPECT_TRUE(out.empty());
}

TEST(MessageCatalog, AClassWithoutWordsIsAnErrorNamingTheMessage) {
  Catalog catalog;
  catalog.path = "stages/diagnoses.toml";
  MessageLibrary library;
  library.name = "nccl";
  library.path = "stages/messages/nccl.toml";
  library.messages.push_back(Message{"unhandled system error", "src/init.cc", "2.4.8..2.30.7",
                                     "error", "return", "x", 12});
  auto attached = attach_messages(catalog, {library});
  ASSERT_FALSE(attached);
  EXPECT_EQ(attached.error().file, "stages/messages/nccl.toml");
  EXPECT_EQ(attached.error().line, 12);
  EXPECT_THAT(attached.error().format(), HasSubstr("class `x`"));
}

TEST(MessageCatalog, NcclsWarnIsSearchedWithTheWordsNcclPrintsBeforeIt) {
  const Message warn{"Cuda failure '{}'",
                     "src/include/checks.h",
                     "v2.4.8-1..v2.30.7-1",
                     "warning",
                     "WARN",
                     "nccl_cuda_error",
                     1};
  EXPECT_EQ(printed_text(warn), "NCCL WARN Cuda failure '{}'");
  EXPECT_EQ(message_pattern(warn.text), std::nullopt) << "two words alone name nothing";
  EXPECT_TRUE(message_pattern(printed_text(warn)).has_value());
  const Message error{"unhandled system error", "src/init.cc", "2.4.8", "error", "return", "", 2};
  EXPECT_EQ(printed_text(error), "unhandled system error");
}

// A class's messages take other words where the log shows a context ([[class.when]]), with
// the source of the message still named.
TEST(MessageCatalog, AClassesWhenGivesItsMessagesWordsInContext) {
  Catalog catalog;
  catalog.path = "stages/diagnoses.toml";
  ClassSpec spec;
  spec.id = "nccl_no_device";
  spec.gate = "single";
  spec.cause = "no GPU";
  spec.fix = "make one visible";
  SignatureVariant ranks;
  ranks.context = "parallel";
  ranks.gate = "dp";
  ranks.cause = "more ranks than GPUs";
  spec.when.push_back(ranks);
  catalog.classes.push_back(spec);
  MessageLibrary library;
  library.name = "cuda";
  library.path = "stages/messages/cuda.toml";
  library.messages.push_back(Message{"CUDA error: invalid device ordinal", "cudaGetErrorString",
                                     "CUDA 13.0", "error", "cudaError", "nccl_no_device", 3});
  ASSERT_TRUE(attach_messages(catalog, {library}));
  ASSERT_EQ(catalog.signatures.size(), 1u);
  const Signature& s = catalog.signatures[0];
  ASSERT_EQ(s.when.size(), 1u);
  EXPECT_EQ(s.when[0].gate, "dp");
  EXPECT_THAT(s.when[0].cause.value_or(""), HasSubstr("more ranks than GPUs (the error of cuda"));
  EXPECT_FALSE(s.when[0].fix.has_value()) << "a field not given stays the class's";
  // Its gate is checked with the class's, once, not once per message.
  catalog.classes[0].when[0].gate = "dpp";
  const Errors errors = unknown_gates(catalog, {"single", "dp"});
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_THAT(errors[0].message, HasSubstr("entry `nccl_no_device`: unknown gate `dpp`"));
}

TEST(MessagePattern, LiteralWordsWithValuesBetween) {
  EXPECT_THAT(message_pattern("cuda runtime error ({}) : invalid device ordinal"),
              Optional(std::string(
                  R"(cuda\s+runtime\s+error\s+\(.*?\)\s+\:\s+invalid\s+device\s+ordinal)")));
  // What the one-pass set searches for: the longest literal run.
  EXPECT_THAT(message_literal("cuda runtime error ({}) : invalid device ordinal"),
              Optional(std::string(R"(\)\s+\:\s+invalid\s+device\s+ordinal)")));
  // Values at the ends are left out; `{{` is a brace.
  EXPECT_THAT(message_pattern("{}: unexpected keys {{{}}} in the state"),
              Optional(std::string(R"(\:\s+unexpected\s+keys\s+\{.*?\}\s+in\s+the\s+state)")));
  // Too little text to name a message by itself.
  EXPECT_EQ(message_pattern("{} != {}"), std::nullopt);
  EXPECT_EQ(message_pattern("invalid usage"), std::nullopt);
  // One identifier that names a failure.
  EXPECT_THAT(message_pattern("CUBLAS_STATUS_EXECUTION_FAILED"),
              Optional(std::string(R"(\bCUBLAS_STATUS_EXECUTION_FAILED\b)")));
  // Of several lines, the most specific.
  EXPECT_THAT(message_pattern("Error:\nDataLoader worker (pid {}) exited unexpectedly"),
              Optional(HasSubstr("exited\\s+unexpectedly")));
}

struct RealLine {
  const char* line;
  const char* klass;
  bool by_message;  ///< found by a library's message, not a hand-written signature
};

// Lines in spellings the hand-written catalog had no signature for (issue 29), each found now
// by the message of the library that prints it.
TEST(MessageCatalog, OtherSpellingsOfKnownFailuresAreFoundByTheLibrarysMessage) {
  const RealLine lines[] = {
      // nccl-tests printing ncclGetErrorString (its src/common.cu NCCLCHECK), as issue 29's
      // log has it: no hand-written signature knows this form.
      {"ip-10-0-1-1: Test NCCL failure common.cu:1279 'unhandled system error (run with "
       "NCCL_DEBUG=INFO for details)'",
       "nccl_system_error", true},
      // NCCL's WARN in src/misc/socket.cc (socketStartConnect), an address that aborted.
      {"node1:1234:1300 [0] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to "
       "10.1.2.3<45678> failed : Software caused connection abort",
       "nccl_network_error", true},
      // NCCL's WARN in src/graph/xml.cc, which a hand-written signature reads for the file.
      {"node1:1234:1300 [0] graph/xml.cc:654 NCCL WARN Could not open XML topology file "
       "/opt/topo.xml : No such file or directory",
       "nccl_topology", false},
      // NCCL's WARN in src/graph/xml.cc for a topology file with too many nodes.
      {"node1:1234:1300 [0] graph/xml.cc:400 NCCL WARN Error : XML parser is limited to 1024 "
       "nodes",
       "nccl_topology", true},
      // The Gloo connect error of a host name resolving to 127.0.1.1 (gloo/transport/tcp).
      {"RuntimeError: [enforce fail at ../third_party/gloo/gloo/transport/tcp/pair.cc:799] "
       "connect [127.0.1.1]:29500: Connection refused",
       "connection_refused", false},
      // NCCL's WARN of a failing CUDA call (src/include/checks.h): `Cuda failure '{}'` is too
      // little to search for alone, with the `NCCL WARN` before it enough (pytorch/pytorch#130414).
      {"iZmj7cfy2ysqwfo0nrci4pZ:2532579:2532579 [0] enqueue.cc:336 NCCL WARN Cuda failure "
       "'invalid resource handle'",
       "nccl_cuda_error", true},
      // The THC spelling of CUDA's invalid device ordinal (torch 1.x).
      {"RuntimeError: cuda runtime error (10) : invalid device ordinal at "
       "/pytorch/torch/csrc/cuda/Module.cpp:33",
       "nccl_no_device", true},
      // CUDA's error string (cudaGetErrorString), which a hand-written signature knows.
      {"RuntimeError: CUDA error: no kernel image is available for execution on the device",
       "cuda_setup", false},
  };
  const Diagnoser& d = test_support::builtin_diagnoser();
  auto built = TextMatcher::build(d.catalog());
  ASSERT_TRUE(built);
  for (const RealLine& real : lines) {
    std::vector<TextMatch> out;
    built->match(real.line, out);
    ASSERT_FALSE(out.empty()) << real.line;
    const Signature& found = d.catalog().signatures[out[0].signature];
    EXPECT_EQ(found.text.klass, real.klass) << real.line << " (" << found.text.id << ")";
    EXPECT_EQ(found.library >= 0, real.by_message) << real.line << " (" << found.text.id << ")";
  }
}

}  // namespace
}  // namespace bigmac::diagnose
