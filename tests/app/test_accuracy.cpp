// The accuracy goal through `infer --device cpu` (accuracy.h).
#include "tests/support/accuracy.h"

namespace infer::test {
namespace {

TEST(Accuracy, TestSetThroughInferCpu) {
  double accuracy = 0.0;
  const ProcessResult r = classify_test_set("cpu", accuracy);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  RecordProperty("accuracy", std::to_string(accuracy));
  EXPECT_GE(accuracy, kRequiredAccuracy);
}

}  // namespace
}  // namespace infer::test
