// The calibration's dense solvers (sim/common/least_squares.hpp) on systems solved by hand.
#include <gtest/gtest.h>

#include <vector>

#include "sim/common/least_squares.hpp"

namespace modsim::sim {
namespace {

TEST(LeastSquares, OverdeterminedSystemMatchesTheNormalEquations) {
  // A = [1 0; 0 1; 1 1], b = (1, 2, 4): AᵀA = [2 1; 1 2], Aᵀb = (5, 6), so
  // x = [2 −1; −1 2] (5, 6) / 3 = (4/3, 7/3).
  const matrix A{{1, 0}, {0, 1}, {1, 1}};
  const std::vector<double> x = least_squares(A, {1, 2, 4}, {true, true});
  ASSERT_EQ(x.size(), 2u);
  EXPECT_NEAR(x[0], 4.0 / 3.0, 1e-12);
  EXPECT_NEAR(x[1], 7.0 / 3.0, 1e-12);
}

TEST(LeastSquares, InactiveColumnsStayZero) {
  // Only the first column (1, 0, 1): x0 = (1 + 4) / 2 = 2.5.
  const matrix A{{1, 0}, {0, 1}, {1, 1}};
  const std::vector<double> x = least_squares(A, {1, 2, 4}, {true, false});
  EXPECT_NEAR(x[0], 2.5, 1e-12);
  EXPECT_EQ(x[1], 0);
}

TEST(LeastSquares, ExactLineAndADependentColumn) {
  // b = 1 + 2t at t = 0, 1, 2 is recovered exactly.
  const std::vector<double> line = least_squares({{1, 0}, {1, 1}, {1, 2}}, {1, 3, 5}, {true, true});
  EXPECT_NEAR(line[0], 1, 1e-12);
  EXPECT_NEAR(line[1], 2, 1e-12);
  // The second column is twice the first: it gets 0 and the first fits b = 3 alone.
  const std::vector<double> dep = least_squares({{1, 2}, {1, 2}, {1, 2}}, {3, 3, 3}, {true, true});
  EXPECT_NEAR(dep[0], 3, 1e-12);
  EXPECT_EQ(dep[1], 0);
}

TEST(LeastSquares, NonNegativeDropsTheNegativeUnknown) {
  // Unconstrained x = (−1, 2); x0 is fixed at 0 and x1 = 2 alone.
  const std::vector<double> x = nonnegative_least_squares({{1, 0}, {0, 1}}, {-1, 2});
  EXPECT_EQ(x[0], 0);
  EXPECT_NEAR(x[1], 2, 1e-12);
  // Nothing negative: the unconstrained solution.
  const std::vector<double> y = nonnegative_least_squares({{1, 0}, {0, 1}}, {3, 2});
  EXPECT_NEAR(y[0], 3, 1e-12);
  EXPECT_NEAR(y[1], 2, 1e-12);
}

TEST(LeastSquares, HatFunctionsInterpolateBetweenKnotsAndClampAtTheEnds) {
  const std::vector<double> knots{0, 1, 3};
  EXPECT_EQ(hats(knots, -1), (std::vector<double>{1, 0, 0}));
  EXPECT_EQ(hats(knots, 0.25), (std::vector<double>{0.75, 0.25, 0}));
  // Between 1 and 3: w = (2 − 1) / (3 − 1) = 0.5.
  EXPECT_EQ(hats(knots, 2), (std::vector<double>{0, 0.5, 0.5}));
  EXPECT_EQ(hats(knots, 5), (std::vector<double>{0, 0, 1}));
  EXPECT_EQ(hats({2}, 7), (std::vector<double>{1}));
}

}  // namespace
}  // namespace modsim::sim
