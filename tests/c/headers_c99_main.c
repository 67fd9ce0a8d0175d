/* The public C API as a strict C99 program meets it: <ch/ch.h> compiles with
 * -std=c99 -pedantic -Wall -Wextra -Werror (each header alone is compiled by
 * the generated alone_*.c files linked into this program), links, and the
 * run-time version agrees with the header's. */
#include <ch/ch.h>

#include <stdio.h>
#include <string.h>

static int failures = 0;

#define EXPECT(cond)                                                  \
  do {                                                                \
    if (!(cond)) {                                                    \
      fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond); \
      failures++;                                                     \
    }                                                                 \
  } while (0)

int main(void) {
  char expected[32];
  ch_device cpu = ch_device_cpu();

  EXPECT(ch_version() == CH_VERSION);
  snprintf(expected, sizeof expected, "%d.%d.%d", CH_VERSION_MAJOR, CH_VERSION_MINOR,
           CH_VERSION_PATCH);
  EXPECT(ch_version_string() != NULL);
  EXPECT(ch_version_string() != NULL && strcmp(ch_version_string(), expected) == 0);

  /* Values fixed by the ABI. */
  EXPECT(CH_OK == 0);
  EXPECT(ch_status_name(CH_ERR_SHAPE) != NULL);
  EXPECT(ch_dtype_size(CH_FLOAT32) == 4);
  EXPECT(ch_dtype_size(CH_FLOAT64) == 8);
  EXPECT(ch_dtype_size(CH_INT32) == 4);
  EXPECT(cpu.type == CH_DEVICE_CPU && cpu.index == 0);

  /* Every *_release(NULL) is a no-op returning CH_OK. */
  EXPECT(ch_array_release(NULL) == CH_OK);
  EXPECT(ch_variable_release(NULL) == CH_OK);
  EXPECT(ch_function_release(NULL) == CH_OK);

  if (failures != 0) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf("chainerc %s (CH_VERSION %d): C99 header check ok\n", ch_version_string(), CH_VERSION);
  return 0;
}
