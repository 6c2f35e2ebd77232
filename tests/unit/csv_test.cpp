#include <gtest/gtest.h>

#include <cmath>

#include "core/errors.h"
#include "data/bars.h"
#include "test_support.h"

using namespace nanscope;

namespace {
const char* kHeader = "timestamp,open,high,low,close,volume\n";

std::string load_error(const std::string& body, bool keep = false) {
  auto dir = test::temp_dir("csv");
  auto path = test::write_file(dir / "bars.csv", body);
  try {
    load_csv_bars(path, keep);
  } catch (const DataError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST(Csv, LoadsValidRows) {
  auto dir = test::temp_dir("csv_ok");
  auto path = test::write_file(dir / "bars.csv", std::string(kHeader) +
                                                     "1,10,11,9,10.5,100\n"
                                                     "2,10.5,10.9,10.1,10.2,50\n");
  BarSeries s = load_csv_bars(path, false);
  ASSERT_EQ(s.bars.size(), 2u);
  EXPECT_DOUBLE_EQ(s.bars[1].close, 10.2);
  EXPECT_DOUBLE_EQ(s.bars[0].volume, 100);
}

TEST(Csv, BadNumberNamesFileLineAndColumn) {
  std::string msg = load_error(std::string(kHeader) + "1,10,11,9,10.5,100\n2,10,11,abc,10,5\n");
  EXPECT_NE(msg.find("bars.csv:3"), std::string::npos) << msg;
  EXPECT_NE(msg.find("column 4 (low)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("abc"), std::string::npos) << msg;
}

TEST(Csv, MissingAndExtraColumns) {
  EXPECT_NE(load_error(std::string(kHeader) + "1,10,11,9\n").find("bars.csv:2"), std::string::npos);
  EXPECT_NE(load_error(std::string(kHeader) + "1,10,11,9,10,5,7\n").find("extra column"),
            std::string::npos);
}

TEST(Csv, NonFiniteRejectedUnlessKept) {
  std::string body = std::string(kHeader) + "1,10,11,9,10,5\n2,10,11,9,nan,5\n";
  std::string msg = load_error(body);
  EXPECT_NE(msg.find("bars.csv:3"), std::string::npos) << msg;
  EXPECT_NE(msg.find("close"), std::string::npos) << msg;
  EXPECT_NE(msg.find("keep_bad_rows"), std::string::npos) << msg;
  auto dir = test::temp_dir("csv_keep");
  BarSeries s = load_csv_bars(test::write_file(dir / "b.csv", body), true);
  ASSERT_EQ(s.bars.size(), 2u);
  EXPECT_TRUE(std::isnan(s.bars[1].close));
}

TEST(Csv, InconsistentBarsAndHeader) {
  EXPECT_NE(load_error(std::string(kHeader) + "1,10,9,8,10,5\n").find("high"), std::string::npos);
  EXPECT_NE(load_error(std::string(kHeader) + "1,10,11,9,10,-5\n").find("volume"),
            std::string::npos);
  EXPECT_NE(
      load_error(std::string(kHeader) + "2,10,11,9,10,5\n1,10,11,9,10,5\n").find("timestamps"),
      std::string::npos);
  EXPECT_NE(load_error("time,open,high,low,close,volume\n").find("header"), std::string::npos);
  EXPECT_NE(load_error(std::string(kHeader)).find("no data rows"), std::string::npos);
  EXPECT_THROW(load_csv_bars("/nonexistent/bars.csv", false), MissingInputError);
}

TEST(Csv, SampleFileShipsAndLoads) {
  BarSeries s =
      load_csv_bars(std::string(NANSCOPE_SOURCE_DIR) + "/resources/sample_bars.csv", false);
  EXPECT_GE(s.bars.size(), 300u);
}
