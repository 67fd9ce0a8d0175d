// The public headers as a strict C++17 program meets them: <ch/ch.h> and
// <ch/ch.hpp> compile with -std=c++17 -pedantic -Wall -Wextra -Werror (each
// header alone is compiled by the generated alone_*.cpp files linked into this
// program), the C declarations have C linkage, and the version agrees.
#include <ch/ch.h>
#include <ch/ch.hpp>

#include <cstdio>
#include <cstring>
#include <type_traits>

static_assert(CH_VERSION == CH_VERSION_MAJOR * 10000 + CH_VERSION_MINOR * 100 + CH_VERSION_PATCH,
              "CH_VERSION is a constant expression");
static_assert(std::is_standard_layout<ch_device>::value, "ch_device is a C struct");
static_assert(std::is_trivially_copyable<ch_memory_stats>::value, "ch_memory_stats is a C struct");
static_assert(std::is_same<ch_status, int32_t>::value, "ch_status is int32_t");

int main() {
  int failures = 0;
  if (ch_version() != CH_VERSION) {
    std::fprintf(stderr, "ch_version() = %d, CH_VERSION = %d\n", static_cast<int>(ch_version()),
                 CH_VERSION);
    failures++;
  }
  char expected[32];
  std::snprintf(expected, sizeof expected, "%d.%d.%d", CH_VERSION_MAJOR, CH_VERSION_MINOR,
                CH_VERSION_PATCH);
  const char* version = ch_version_string();
  if (version == nullptr || std::strcmp(version, expected) != 0) {
    std::fprintf(stderr, "ch_version_string() = %s, expected %s\n",
                 version != nullptr ? version : "(null)", expected);
    failures++;
  }
  if (failures != 0) return 1;
  std::printf("chainerc %s: C++17 header check ok\n", version);
  return 0;
}
