// Python tracebacks read for their structure. The two chains are what CPython 3.11 printed for
// a small program (a socket bound twice, re-raised `from` it; torch 1.13's torch.load of a
// missing file, and a NameError while handling it), copied unchanged.

#include "diagnose/traceback.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "diagnose/diagnoser.h"
#include "diagnose/ranking.h"
#include "diagnose/text_scan.h"
#include "logs/log_stream.h"

namespace bigmac::diagnose {
namespace {

const std::string kFromCause = R"(Traceback (most recent call last):
  File "/tmp/tb/train.py", line 15, in setup
    bind(port)
  File "/tmp/tb/train.py", line 10, in bind
    t.bind(("127.0.0.1", port))
OSError: [Errno 98] Address already in use

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File "/tmp/tb/train.py", line 35, in <module>
    main()
  File "/tmp/tb/train.py", line 30, in main
    setup(29123)
  File "/tmp/tb/train.py", line 17, in setup
    raise RuntimeError("could not start the store") from e
RuntimeError: could not start the store
)";

const std::string kWhileHandling = R"(Traceback (most recent call last):
  File "/tmp/tb/train.py", line 22, in load
    torch.load("missing.pt")
  File "/usr/lib/python3/dist-packages/torch/serialization.py", line 771, in load
    with _open_file_like(f, 'rb') as opened_file:
         ^^^^^^^^^^^^^^^^^^^^^^^^
  File "/usr/lib/python3/dist-packages/torch/serialization.py", line 251, in __init__
    super(_open_file, self).__init__(open(name, mode))
                                     ^^^^^^^^^^^^^^^^
FileNotFoundError: [Errno 2] No such file or directory: 'missing.pt'

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "/tmp/tb/train.py", line 35, in <module>
    main()
  File "/tmp/tb/train.py", line 24, in load
    restore()
    ^^^^^^^
NameError: name 'restore' is not defined
)";

std::vector<logs::TextLine> lines_of(const std::string& text) {
  logs::LogStream stream;
  std::vector<logs::Record> records;
  stream.feed(text, records);
  stream.finish(records);
  std::vector<logs::TextLine> lines;
  for (const auto& r : records) {
    if (const auto* line = std::get_if<logs::TextLine>(&r)) lines.push_back(*line);
  }
  return lines;
}

TracebackReader read_all(const std::string& text) {
  TracebackReader reader;
  reader.begin_file(0);
  for (const logs::TextLine& line : lines_of(text)) {
    reader.read(line);
  }
  return reader;
}

TEST(Traceback, ReadsTheExceptionItsFramesAndARaiseFrom) {
  const TracebackReader r = read_all(kFromCause);
  ASSERT_EQ(r.errors().size(), 2u);
  const RaisedError& os = r.errors()[0];
  EXPECT_EQ(os.type, "OSError");
  EXPECT_EQ(os.message, "[Errno 98] Address already in use");
  EXPECT_EQ(os.line, 6);
  EXPECT_EQ(os.program_frame, "/tmp/tb/train.py:10 in bind");
  EXPECT_EQ(os.chained_from, -1);
  const RaisedError& wrapper = r.errors()[1];
  EXPECT_EQ(wrapper.type, "RuntimeError");
  EXPECT_EQ(wrapper.where(), "/tmp/tb/train.py:17 in setup");
  EXPECT_EQ(wrapper.chained_from, 0);
  EXPECT_TRUE(wrapper.direct_cause);
  EXPECT_EQ(&r.root_of(wrapper), &os);
  EXPECT_EQ(r.at(0, 17), &wrapper);
  EXPECT_EQ(r.at(0, 16), nullptr);
}

TEST(Traceback, NamesTheProgramsFrameAndTheLibrarysWhereItWasRaised) {
  const TracebackReader r = read_all(kWhileHandling);
  ASSERT_EQ(r.errors().size(), 2u);
  const RaisedError& missing = r.errors()[0];
  EXPECT_EQ(missing.type, "FileNotFoundError");
  EXPECT_EQ(missing.program_frame, "/tmp/tb/train.py:22 in load");
  EXPECT_EQ(missing.raised_in, "torch/serialization.py:251 in __init__");
  const RaisedError& name = r.errors()[1];
  EXPECT_EQ(name.type, "NameError");
  EXPECT_EQ(name.chained_from, 0);
  EXPECT_FALSE(name.direct_cause);
}

TEST(Traceback, InterleavedRanksAreReadEachOnItsOwn) {
  // torchrun's `[rankN]:` prefixes, the two ranks' lines alternating.
  const std::vector<logs::TextLine> a = lines_of(kWhileHandling);
  const std::vector<logs::TextLine> b = lines_of(kFromCause);
  std::string text;
  for (std::size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
    if (i < a.size()) text += "[rank0]:" + a[i].text + "\n";
    if (i < b.size()) text += "[rank1]:" + b[i].text + "\n";
  }
  const TracebackReader r = read_all(text);
  ASSERT_EQ(r.errors().size(), 4u);
  int rank0 = 0;
  for (const RaisedError& e : r.errors()) {
    if (e.rank == 0) {
      ++rank0;
      EXPECT_TRUE(e.type == "FileNotFoundError" || e.type == "NameError") << e.type;
    } else {
      EXPECT_EQ(e.rank, 1);
      EXPECT_TRUE(e.type == "OSError" || e.type == "RuntimeError") << e.type;
    }
    if (e.chained_from >= 0) {
      EXPECT_EQ(r.errors()[static_cast<std::size_t>(e.chained_from)].rank, e.rank);
    }
  }
  EXPECT_EQ(rank0, 2);
}

TEST(Traceback, OutputThatBreaksATracebackEndsIt) {
  const std::string text =
      "Traceback (most recent call last):\n"
      "  File \"/tmp/tb/train.py\", line 35, in <module>\n"
      "    main()\n"
      "epoch 3 loss 0.25\n"
      "ValueError: not the end of that traceback\n";
  EXPECT_TRUE(read_all(text).errors().empty());
  // A repeated frame's note is not its end.
  const TracebackReader deep = read_all(
      "Traceback (most recent call last):\n"
      "  File \"/tmp/a.py\", line 2, in f\n"
      "    f()\n"
      "  [Previous line repeated 996 more times]\n"
      "RecursionError: maximum recursion depth exceeded\n");
  ASSERT_EQ(deep.errors().size(), 1u);
  EXPECT_EQ(deep.errors()[0].type, "RecursionError");
  EXPECT_EQ(deep.errors()[0].program_frame, "/tmp/a.py:2 in f");
}

TEST(Traceback, PathsOfInstalledPackagesFromThePackageOn) {
  EXPECT_EQ(shown_path("/opt/conda/lib/python3.10/site-packages/torch/serialization.py"),
            "torch/serialization.py");
  EXPECT_EQ(shown_path("/usr/lib/python3.11/multiprocessing/spawn.py"), "multiprocessing/spawn.py");
  EXPECT_EQ(shown_path("/home/me/train.py"), "/home/me/train.py");
  EXPECT_FALSE(program_path("/usr/lib/python3.11/runpy.py"));
  EXPECT_FALSE(program_path("<frozen runpy>"));
  EXPECT_TRUE(program_path("train.py"));
}

const TextMatcher& matcher() {
  static const Catalog catalog = *builtin_catalog();
  static const TextMatcher m = *TextMatcher::build(catalog);
  return m;
}

std::vector<Diagnosis> diagnose_text(const std::string& text) {
  TextScan scan(matcher());
  scan.begin_file("rank0.log");
  for (const logs::TextLine& line : lines_of(text)) scan.add_line(line);
  std::vector<Diagnosis> found = scan.finish();
  rank_diagnoses(found);
  return found;
}

TEST(Traceback, AnExceptionRaisedFromAnExplainedOneComesAfterIt) {
  const std::vector<Diagnosis> found = diagnose_text(kFromCause);
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].klass, "port_in_use");
  EXPECT_EQ(found[0].raised_at, "/tmp/tb/train.py:10 in bind");
  EXPECT_TRUE(found[0].while_handling.empty());
  EXPECT_EQ(found[1].id, "python_exception");
  EXPECT_EQ(found[1].raised_at, "/tmp/tb/train.py:17 in setup");
  EXPECT_EQ(found[1].while_handling,
            "OSError: [Errno 98] Address already in use (at /tmp/tb/train.py:10 in bind)");
  EXPECT_EQ(found[1].consequence_of, found[0].id);
}

TEST(Traceback, TheRootOfAChainIsNamedWhereNoSignatureExplainsIt) {
  const std::vector<Diagnosis> found = diagnose_text(kWhileHandling);
  ASSERT_FALSE(found.empty());
  const Diagnosis& last = found.front();
  // Both are the fallback's; the first in the log is the chain's root.
  EXPECT_EQ(last.id, "python_exception");
  EXPECT_EQ(last.raised_at, "/tmp/tb/train.py:22 in load");
  ASSERT_GE(last.evidence.size(), 2u);
  EXPECT_NE(last.evidence[0].text.find("FileNotFoundError"), std::string::npos);
}

// torchrun's report of the failed rank, three lines below that rank's own error, explains
// nothing near it: the rank's error is the headline (lines from
// https://github.com/ultralytics/ultralytics/issues/19917, torch 2.x).
TEST(Traceback, ALaunchersReportJustBelowARanksErrorLeavesItTheHeadline) {
  const std::vector<Diagnosis> found = diagnose_text(
      "[rank1]:   File \"/env/lib/python3.11/site-packages/torch/__init__.py\", line 2003, in "
      "__getattr__\n"
      "[rank1]:     raise AttributeError(f\"module '{__name__}' has no attribute '{name}'\")\n"
      "[rank1]: AttributeError: module 'torch' has no attribute 'OutOfMemoryError'\n"
      "W0328 18:18:18.154000 140217767576768 torch/distributed/elastic/multiprocessing/api.py:851] "
      "Sending process 3274844 closing signal SIGTERM\n"
      "E0328 18:18:48.413000 140217767576768 torch/distributed/elastic/multiprocessing/api.py:826] "
      "failed (exitcode: 1) local_rank: 1 (pid: 3274845) of binary: /env/bin/python\n");
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].id, "python_exception");
  EXPECT_EQ(found[0].failed_rank, 1);
  EXPECT_EQ(found[1].klass, "child_failed");
}

}  // namespace
}  // namespace bigmac::diagnose
