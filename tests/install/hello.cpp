// Built outside the repository against the installed libchainerc-dev
// (scripts/packaging.sh), shared and --static: the header-only C++ layer.
// y = x*x - 2x + 1 at x = 5: y = 16, dy/dx = 2x - 2 = 8.
#include <ch/ch.hpp>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

int main() {
  ch::Variable x(ch::Array(std::vector<float>{5}, {1}));
  ch::Variable y = x * x - 2 * x + 1;
  y.backward();
  float yv = y.data().to_vector<float>()[0];
  float g = x.grad().to_vector<float>()[0];
  bool bad = std::fabs(yv - 16.0f) > 1e-5f || std::fabs(g - 8.0f) > 1e-5f;
  try {  // bad input throws ch::Error with the library's message
    ch::Array wrong(std::vector<float>{1, 2, 3}, {2});  // 3 values for 2 elements
    bad = true;
  } catch (const ch::Error& e) {
    bad = bad || std::string(e.what()).empty();
  }
  std::printf("y=%g grad=%g%s\n", yv, g, bad ? " WRONG" : "");
  return bad ? 1 : 0;
}
