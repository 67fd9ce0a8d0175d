/*
 * Small helpers the C examples share: a monotonic clock, the examples' own
 * random generator (so that an order or an initialisation depends only on
 * --seed) and reading a scalar variable. C99, header-only (static inline
 * functions: an example that uses only some of them gets no warning).
 *
 * The including file defines _POSIX_C_SOURCE 200809L (for clock_gettime
 * under -std=c99) before its first include, and CHECK(call) (what to do when
 * a ch_* call fails) before including this one.
 */
#ifndef CHAINERC_EXAMPLES_EXAMPLE_UTIL_H
#define CHAINERC_EXAMPLES_EXAMPLE_UTIL_H

#include <ch/ch.h>
#include <stdint.h>
#include <time.h>

/* Seconds on a monotonic clock. */
static inline double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* xorshift64*; an example seeds it by mixing --seed into rng_state. */
static uint64_t rng_state = 88172645463325252ull;
static inline uint64_t rng_next(void) {
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * 2685821657736338717ull;
}

/* The first element of a variable's data (a loss, an accuracy) as a double. */
static inline double scalar_of(ch_variable* v) {
  ch_array* a;
  double value = 0;
  CHECK(ch_variable_data(&a, v));
  CHECK(ch_array_get(&value, a, 0));
  ch_array_release(a);
  return value;
}

#endif /* CHAINERC_EXAMPLES_EXAMPLE_UTIL_H */
