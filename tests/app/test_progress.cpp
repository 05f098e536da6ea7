// The progress line (app/progress.cpp): it must end at total/total, whatever came between.
#include <gtest/gtest.h>

#include <sstream>

#include "app/progress.h"

namespace infer::app {
namespace {

// The text after the last carriage return: what the terminal shows last.
std::string last_drawn(const std::string& text) { return text.substr(text.rfind('\r') + 1); }

TEST(Progress, EndsAtTheTotalOnceShown) {
  std::ostringstream err;
  {
    Progress progress(err, 10, true, std::chrono::milliseconds(0));
    progress.update(0);
    progress.update(8);  // within 100 ms of the last: not drawn
    progress.finish();   // stopped short of 10/10 before: the last update said 0/10
  }
  EXPECT_EQ(last_drawn(err.str()), "infer: 10/10 images\n");
}

TEST(Progress, EndsAtTheTotalAfterAnErrorLineClearedIt) {
  std::ostringstream err;
  Progress progress(err, 3, true, std::chrono::milliseconds(0));
  progress.update(1);
  progress.clear();
  err << "infer: x.png: not a supported image\n";
  progress.finish();
  EXPECT_EQ(err.str().substr(err.str().rfind("\n", err.str().size() - 2) + 1), "\rinfer: 3/3 images\n");
}

TEST(Progress, ShowsNothingWhenDisabledOrBeforeTheDelay) {
  std::ostringstream err;
  {
    Progress off(err, 5, false, std::chrono::milliseconds(0));
    off.update(2);
    Progress early(err, 5, true, std::chrono::hours(1));
    early.update(2);
  }
  EXPECT_EQ(err.str(), "");
}

}  // namespace
}  // namespace infer::app
