#include "audit/python_helper.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "audit/python_reader.h"
#include "proc/posix_process_runner.h"
#include "testing/fake_process_runner.h"

namespace bigmac::audit {
namespace {

using ::testing::HasSubstr;

TEST(PythonHelper, FoundBesideTheProgram) {
  auto helper = PythonHelper::locate(BIGMAC_BIN_DIR, "python3");
  ASSERT_TRUE(helper) << helper.error().format();
  EXPECT_EQ(helper->script.filename(), "audit_python.py");
  EXPECT_TRUE(std::filesystem::exists(helper->script));
}

TEST(PythonHelper, NoInterpreterIsAnErrorThatSaysWhatToDo) {
  auto helper = PythonHelper::locate(BIGMAC_BIN_DIR, "/nonexistent/python3");
  ASSERT_FALSE(helper);
  EXPECT_EQ(helper.error().kind, ErrorKind::kInput);
  EXPECT_THAT(helper.error().message, HasSubstr("/nonexistent/python3"));
  EXPECT_THAT(helper.error().hint, HasSubstr("--python"));
}

TEST(PythonHelper, ASyntaxErrorNamesTheFileAndLine) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("bigmac-audit-py-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto good = (dir / "good.py").string();
  const auto bad = (dir / "bad.py").string();
  std::ofstream(good) << "MICRO_BATCH_SIZE = 4\n";
  std::ofstream(bad) << "x = 1\ndef broken(:\n    pass\n";
  auto helper = PythonHelper::locate(BIGMAC_BIN_DIR, "python3");
  ASSERT_TRUE(helper) << helper.error().format();
  proc::PosixProcessRunner runner;
  auto json = helper->run(runner, {good, bad});
  ASSERT_TRUE(json) << json.error().format();
  ProjectFacts facts;
  Errors errors = read_python_facts(*json, facts);
  std::filesystem::remove_all(dir);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].file, bad);
  EXPECT_EQ(errors[0].line, 2);
  EXPECT_THAT(errors[0].message, HasSubstr("syntax error"));
  ASSERT_EQ(facts.places.size(), 1u);  // the good file is still read
  EXPECT_EQ(facts.places[0].setting, Setting::kMicroBatchSize);
  EXPECT_EQ(facts.places[0].value->text, "4");
}

TEST(PythonHelper, AFailingHelperIsAnInfrastructureErrorQuotingItsStderr) {
  testing::FakeProcessRunner runner;
  runner.emit_error_line(0, "SyntaxError: invalid syntax (audit_python.py, line 1)");
  runner.exit(0, 1);
  PythonHelper helper{"/usr/bin/python3", "audit_python.py"};
  auto json = helper.run(runner, {"train.py"});
  ASSERT_FALSE(json);
  EXPECT_EQ(json.error().kind, ErrorKind::kInfrastructure);
  EXPECT_THAT(json.error().message, HasSubstr("exit code 1"));
  EXPECT_THAT(json.error().message, HasSubstr("invalid syntax"));
  ASSERT_EQ(runner.spawned().size(), 1u);
  EXPECT_THAT(runner.spawned()[0].argv,
              ::testing::ElementsAre("/usr/bin/python3", "-I", "audit_python.py", "train.py"));
}

TEST(PythonHelper, OutputThatIsNotItsJsonIsAnError) {
  ProjectFacts facts;
  Errors errors = read_python_facts("Traceback (most recent call last):", facts);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].kind, ErrorKind::kInfrastructure);
}

}  // namespace
}  // namespace bigmac::audit
