/*
 * The examples' training log in the format of Chainer's LogReport extension:
 * a JSON list with one object per epoch, e.g.
 *
 *   [{"epoch": 1, "iteration": 600, "main/loss": 0.61, "main/accuracy": 0.79,
 *     "validation/main/loss": 0.48, "validation/main/accuracy": 0.83,
 *     "elapsed_time": 4.2}, ...]
 *
 * The whole file is written again after each epoch (as LogReport does), to a
 * temporary file renamed over the old one, so a reader never sees half a
 * list. Non-finite values are written as null (JSON has no NaN).
 * scripts/plot_log.py draws such a file. Header-only; C and C++.
 */
#ifndef CH_EXAMPLES_LOG_REPORT_H
#define CH_EXAMPLES_LOG_REPORT_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct LogReport {
  const char* path; /* NULL: no log */
  char* text;       /* the entries so far, without the brackets */
  size_t len, cap;
} LogReport;

static void log_report_append(LogReport* log, const char* s) {
  size_t n = strlen(s);
  if (log->len + n + 1 > log->cap) {
    size_t cap = log->cap ? log->cap * 2 : 1024;
    char* p;
    while (cap < log->len + n + 1) cap *= 2;
    p = (char*)realloc(log->text, cap);
    if (!p) {
      fprintf(stderr, "log: out of memory\n");
      exit(1);
    }
    log->text = p;
    log->cap = cap;
  }
  memcpy(log->text + log->len, s, n + 1);
  log->len += n;
}

/* One epoch's entry: epoch, iteration, then n (key, value) pairs, then
 * elapsed_time; rewrites the file. Exits with a message if it cannot write. */
static void log_report_add(LogReport* log, int epoch, long long iteration, const char* const* keys,
                           const double* values, int n, double elapsed_time) {
  char buf[256], tmp[4096];
  FILE* f;
  int i;
  if (!log->path) return;
  snprintf(buf, sizeof buf, "%s\n  {\"epoch\": %d, \"iteration\": %lld", log->len ? "," : "", epoch,
           iteration);
  log_report_append(log, buf);
  for (i = 0; i < n; ++i) {
    if (isfinite(values[i]))
      snprintf(buf, sizeof buf, ", \"%s\": %.10g", keys[i], values[i]);
    else
      snprintf(buf, sizeof buf, ", \"%s\": null", keys[i]);
    log_report_append(log, buf);
  }
  snprintf(buf, sizeof buf, ", \"elapsed_time\": %.6g}", elapsed_time);
  log_report_append(log, buf);
  snprintf(tmp, sizeof tmp, "%s.tmp", log->path);
  f = fopen(tmp, "w");
  if (!f || fprintf(f, "[%s\n]\n", log->text) < 0 || fclose(f) != 0 || rename(tmp, log->path)) {
    fprintf(stderr, "log: cannot write %s\n", log->path);
    exit(1);
  }
}

static void log_report_free(LogReport* log) {
  free(log->text);
  log->text = NULL;
  log->len = log->cap = 0;
}

/* "1:05:09" / "3:07" for a number of seconds (the progress bars' estimates). */
static const char* log_report_hms(double seconds, char* buf, size_t size) {
  long s = seconds > 0 && seconds < 1e9 ? (long)(seconds + 0.5) : 0;
  if (s >= 3600)
    snprintf(buf, size, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
  else
    snprintf(buf, size, "%ld:%02ld", s / 60, s % 60);
  return buf;
}

#endif /* CH_EXAMPLES_LOG_REPORT_H */
