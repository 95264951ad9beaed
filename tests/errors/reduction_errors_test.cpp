// User mistakes in reductions raise ember::Error with PyTorch's wording (checked against
// torch 1.13), the op's name and the kind of Python exception PyTorch raises.
#include <gtest/gtest.h>

#include "ember/ember.h"
#include "support/error_of.h"

namespace ember {
namespace {

/// error_of, expecting PyTorch's usual kind (RuntimeError) unless the test names another.
template <typename F>
std::string error_of(F&& f, ErrorKind kind = ErrorKind::RuntimeError) {
  return testing::error_of(std::forward<F>(f), kind);
}

void expect_contains(const std::string& msg, const std::string& part) {
  EXPECT_NE(msg.find(part), std::string::npos) << msg;
}

TEST(ReductionErrors, MeanOfIntegersCannotInferDtype) {
  expect_contains(error_of([] { (void)arange(4).mean(); }),
                  "mean(): could not infer output dtype. Input dtype must be either a floating point or complex "
                  "dtype. Got: Long");
  expect_contains(error_of([] { (void)mean(ones({2}, kBool), {0}); }), "Got: Bool");
}

TEST(ReductionErrors, MeanWithIntegerDtype) {
  expect_contains(error_of([] { (void)mean(ones({2}), kInt64); }),
                  "mean(): could not infer output dtype. Optional dtype must be either a floating point or complex "
                  "dtype. Got: Long");
}

TEST(ReductionErrors, MaxOfEmptyNeedsADim) {
  const std::string msg = error_of([] { (void)max(empty({0, 3})); });
  expect_contains(msg, "max(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction "
                       "dim with the 'dim' argument.");
  expect_contains(msg, "aten::max");
  expect_contains(error_of([] { (void)min(empty({0})); }), "min(): Expected reduction dim to be specified");
  expect_contains(error_of([] { (void)amax(empty({3, 0})); }), "amax(): Expected reduction dim to be specified");
}

TEST(ReductionErrors, AmaxOverEmptyDimIsAnIndexError) {
  expect_contains(error_of([] { (void)amax(empty({0, 3}), {1, 0}); }, ErrorKind::IndexError),
                  "amax(): Expected reduction dim 0 to have non-zero size.");
  // The dim is named as the caller wrote it.
  expect_contains(error_of([] { (void)amin(empty({3, 0}), {-1}); }, ErrorKind::IndexError),
                  "amin(): Expected reduction dim -1 to have non-zero size.");
}

TEST(ReductionErrors, MaxDimOverEmptyDimIsAnIndexError) {
  expect_contains(error_of([] { (void)max(empty({0, 3}), -2); }, ErrorKind::IndexError),
                  "max(): Expected reduction dim 0 to have non-zero size.");
  expect_contains(error_of([] { (void)min(empty({0, 3}), 0); }, ErrorKind::IndexError),
                  "min(): Expected reduction dim 0 to have non-zero size.");
}

TEST(ReductionErrors, ArgmaxOfEmpty) {
  expect_contains(error_of([] { (void)argmax(empty({0, 3})); }, ErrorKind::IndexError),
                  "argmax(): Expected reduction dim to be specified for input.numel() == 0.");
  expect_contains(error_of([] { (void)argmin(empty({0, 3}), 0); }, ErrorKind::IndexError),
                  "argmin(): Expected reduction dim 0 to have non-zero size.");
}

TEST(ReductionErrors, ArgmaxOfBool) {
  expect_contains(error_of([] { (void)argmax(ones({2}, kBool)); }), "\"argmax_cpu\" not implemented for 'Bool'");
}

TEST(ReductionErrors, VarAndStdNeedFloatingInput) {
  expect_contains(error_of([] { (void)var(arange(4)); }), "std and var only support floating point and complex dtypes");
  expect_contains(error_of([] { (void)ember::std(arange(4)); }),
                  "std and var only support floating point and complex dtypes");
}

TEST(ReductionErrors, DimOutOfRangeIsAnIndexError) {
  const int line = __LINE__ + 1;
  const std::string msg = error_of([] { (void)ones({2, 3}).sum({2}); }, ErrorKind::IndexError);
  expect_contains(msg, "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
  expect_contains(msg, "reduction_errors_test.cpp:" + std::to_string(line));
  expect_contains(error_of([] { (void)cumsum(scalar_tensor(1.0), 1); }, ErrorKind::IndexError),
                  "Dimension out of range (expected to be in range of [-1, 0], but got 1)");
  expect_contains(error_of([] { (void)max(ones({2}), 1); }, ErrorKind::IndexError),
                  "Dimension out of range (expected to be in range of [-1, 0], but got 1)");
  expect_contains(error_of([] { (void)any(ones({2}), -2); }, ErrorKind::IndexError),
                  "Dimension out of range (expected to be in range of [-1, 0], but got -2)");
}

TEST(ReductionErrors, RepeatedDim) {
  expect_contains(error_of([] { (void)ones({2, 3}).sum({0, -2}); }), "dim 0 appears multiple times in the list of dims");
  expect_contains(error_of([] { (void)amax(ones({2, 3}), {1, 1}); }), "dim 1 appears multiple times in the list of dims");
  expect_contains(error_of([] { (void)var(ones({2, 3}), std::vector<int64_t>{1, -1}); }),
                  "dim 1 appears multiple times in the list of dims");
}

}  // namespace
}  // namespace ember
