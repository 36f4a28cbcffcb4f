// The tools' progress line: what it draws, and that it draws nothing when it should not.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "progress_line.h"

namespace braid::tools {
namespace {

std::string drawn(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string s;
  char buf[512];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) s.append(buf, n);
  return s;
}

TEST(ProgressLine, DrawsEachPhaseOnOneLineAndSaysHowLongItTook) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    ProgressLine line(f, true, 0);
    line.report({"recovery: checkpoint", "records", 0, 3000});
    line.report({"recovery: checkpoint", "records", 1500, 3000});
    line.report({"recovery: checkpoint", "records", 3000, 3000});
    line.report({"recovery: log", "bytes", 0, 3 << 20});
    line.report({"recovery: log", "bytes", 1 << 20, 3 << 20});
  }  // the unfinished phase's line is ended by the destructor
  const std::string s = drawn(f);
  std::fclose(f);
  EXPECT_NE(s.find("\rrecovery: checkpoint: 1,500 of 3,000 records (50.0%)"), std::string::npos)
      << s;
  EXPECT_NE(s.find("\rrecovery: checkpoint: 3,000 of 3,000 records (100.0%)"), std::string::npos)
      << s;
  EXPECT_NE(s.find("took"), std::string::npos) << s;
  EXPECT_NE(s.find("\rrecovery: log: 1.0 of 3.0 MiB (33.3%)"), std::string::npos) << s;
  EXPECT_NE(s.find("ETA"), std::string::npos) << s;
  // One line per phase: the checkpoint's ends before the log's starts, and the last is ended.
  EXPECT_LT(s.find('\n'), s.find("recovery: log")) << s;
  ASSERT_FALSE(s.empty());
  EXPECT_EQ(s.back(), '\n');
  EXPECT_EQ(std::count(s.begin(), s.end(), '\n'), 2);
}

TEST(ProgressLine, ShortPhasesAndNonTerminalsGetNothing) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    ProgressLine quiet(f, true, 3600);  // no phase here lasts an hour
    quiet.report({"load", "records", 0, 10});
    quiet.report({"load", "records", 5, 10});
    quiet.report({"load", "records", 10, 10});
    ProgressLine off(f, false, 0);  // stderr is not a terminal
    off.report({"load", "records", 5, 10});
    off.report({"load", "records", 10, 10});
  }
  EXPECT_EQ(drawn(f), "");
  std::fclose(f);
}

}  // namespace
}  // namespace braid::tools
