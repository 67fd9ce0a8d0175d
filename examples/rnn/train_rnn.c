/*
 * The seed's recurrent language model (Chainer 1.0 tutorial, section 1.2) in
 * C: EmbedID, Linear, tanh (or lstm) and softmax cross entropy, trained with
 * truncated backprop (backward and unchain_backward every --bptt steps) and
 * evaluated with volatile variables, printing perplexity per epoch.
 *
 * Corpus: a plain-text file, by default the GNU GPL version 3 as Debian's
 * base-files package installs it (/usr/share/common-licenses/GPL-3). Words
 * are lower-cased runs of letters, digits and apostrophes; each other
 * non-space character is a word of its own; line ends are "<eos>". Words seen
 * fewer than twice become "<unk>". The last tenth of the text is held out.
 *
 *   train_rnn [--corpus FILE] [--epochs 5] [--units 50] [--embed 100]
 *             [--batch 20] [--bptt 30] [--lr 1.0] [--clip 5] [--unit tanh|lstm]
 *             [--seed 1] [--threads N] [--log log.json]
 *
 * --log writes the per-epoch numbers in the format of Chainer's LogReport (a
 * JSON list: main/loss and main/perplexity, validation/main/loss and
 * validation/main/perplexity; scripts/plot_log.py draws it). On a terminal a
 * progress bar with the estimated time left runs on stderr.
 *
 * Like Chainer's PTB example, the text is read as --batch parallel streams
 * (stream b starts at b * length / batch), so each step feeds a batch of word
 * ids and the hidden state has shape (batch, units).
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, isatty */
#include <ch/ch.h>
#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../common/log_report.h"

#define CHECK(call)                                                                 \
  do {                                                                              \
    ch_status status_ = (call);                                                     \
    if (status_ != CH_OK) {                                                         \
      fprintf(stderr, "train_rnn: %s failed: %s (%s)\n", #call, ch_error_message(), \
              ch_status_name(status_));                                             \
      exit(1);                                                                      \
    }                                                                               \
  } while (0)

#include "../common/example_util.h"

typedef struct Options {
  const char* corpus;
  int epochs, units, embed, batch, bptt, threads, lstm;
  double lr, clip;
  uint64_t seed;
  const char* log; /* LogReport JSON file (NULL: none) */
} Options;

static void usage(FILE* f) {
  fprintf(f,
          "usage: train_rnn [--corpus FILE] [--epochs N] [--units N] [--embed N] [--batch N]\n"
          "                 [--bptt N] [--lr X] [--clip X] [--unit tanh|lstm] [--seed N]\n"
          "                 [--threads N] [--log FILE.json]\n");
}

static Options parse(int argc, char** argv) {
  Options o = {"/usr/share/common-licenses/GPL-3", 5, 50, 100, 20, 30, 0, 0, 1.0, 5.0, 1, NULL};
  int i;
  for (i = 1; i < argc; i += 2) {
    const char* a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--help")) {
      usage(stdout);
      exit(0);
    }
    if (!v) {
      usage(stderr);
      exit(2);
    }
    if (!strcmp(a, "--corpus"))
      o.corpus = v;
    else if (!strcmp(a, "--epochs"))
      o.epochs = atoi(v);
    else if (!strcmp(a, "--units"))
      o.units = atoi(v);
    else if (!strcmp(a, "--embed"))
      o.embed = atoi(v);
    else if (!strcmp(a, "--batch"))
      o.batch = atoi(v);
    else if (!strcmp(a, "--bptt"))
      o.bptt = atoi(v);
    else if (!strcmp(a, "--lr"))
      o.lr = atof(v);
    else if (!strcmp(a, "--clip"))
      o.clip = atof(v);
    else if (!strcmp(a, "--seed"))
      o.seed = strtoull(v, NULL, 10);
    else if (!strcmp(a, "--log"))
      o.log = v;
    else if (!strcmp(a, "--threads"))
      o.threads = atoi(v);
    else if (!strcmp(a, "--unit") && (!strcmp(v, "tanh") || !strcmp(v, "lstm")))
      o.lstm = !strcmp(v, "lstm");
    else {
      fprintf(stderr, "train_rnn: bad option %s %s\n", a, v);
      usage(stderr);
      exit(2);
    }
  }
  if (o.epochs < 0 || o.units < 1 || o.embed < 1 || o.batch < 1 || o.bptt < 1) {
    fprintf(stderr, "train_rnn: sizes must be positive\n");
    exit(2);
  }
  return o;
}

/* ---- corpus ------------------------------------------------------------------------------ */

typedef struct Vocab {
  char** words;
  int64_t* counts;
  int64_t n, cap;
} Vocab;

static int64_t vocab_find(const Vocab* v, const char* w) {
  int64_t i;
  for (i = 0; i < v->n; ++i)
    if (!strcmp(v->words[i], w)) return i;
  return -1;
}

static int64_t vocab_add(Vocab* v, const char* w) {
  int64_t i = vocab_find(v, w);
  if (i >= 0) {
    v->counts[i]++;
    return i;
  }
  if (v->n == v->cap) {
    v->cap = v->cap ? 2 * v->cap : 256;
    v->words = (char**)realloc(v->words, sizeof(char*) * (size_t)v->cap);
    v->counts = (int64_t*)realloc(v->counts, sizeof(int64_t) * (size_t)v->cap);
    if (!v->words || !v->counts) {
      fprintf(stderr, "train_rnn: out of memory\n");
      exit(1);
    }
  }
  v->words[v->n] = (char*)malloc(strlen(w) + 1);
  strcpy(v->words[v->n], w);
  v->counts[v->n] = 1;
  return v->n++;
}

/* Reads the corpus into word ids (ids of rare words become <unk>, id 0). */
static int32_t* read_corpus(const char* path, int64_t* length, int64_t* vocab_size) {
  FILE* f = fopen(path, "r");
  Vocab raw = {0}, kept = {0};
  int64_t *ids = NULL, n = 0, cap = 0, i;
  int32_t* out;
  char word[256];
  size_t wl = 0;
  int c;
  if (!f) {
    fprintf(stderr, "train_rnn: cannot open the corpus %s\n", path);
    exit(1);
  }
#define EMIT(str)                                                  \
  do {                                                             \
    if (n == cap) {                                                \
      cap = cap ? 2 * cap : 4096;                                  \
      ids = (int64_t*)realloc(ids, sizeof(int64_t) * (size_t)cap); \
      if (!ids) exit(1);                                           \
    }                                                              \
    ids[n++] = vocab_add(&raw, (str));                             \
  } while (0)
  while ((c = fgetc(f)) != EOF) {
    if (isalnum(c) || c == '\'') {
      if (wl + 1 < sizeof word) word[wl++] = (char)tolower(c);
      continue;
    }
    if (wl) {
      word[wl] = '\0';
      EMIT(word);
      wl = 0;
    }
    if (c == '\n') {
      EMIT("<eos>");
    } else if (!isspace(c)) {
      word[0] = (char)c;
      word[1] = '\0';
      EMIT(word);
    }
  }
  if (wl) {
    word[wl] = '\0';
    EMIT(word);
  }
#undef EMIT
  fclose(f);
  vocab_add(&kept, "<unk>");
  out = (int32_t*)malloc(sizeof(int32_t) * (size_t)(n ? n : 1));
  for (i = 0; i < n; ++i) {
    const char* w = raw.words[ids[i]];
    out[i] = raw.counts[ids[i]] >= 2
                 ? (int32_t)(vocab_find(&kept, w) >= 0 ? vocab_find(&kept, w) : vocab_add(&kept, w))
                 : 0;
  }
  *length = n;
  *vocab_size = kept.n;
  for (i = 0; i < raw.n; ++i) free(raw.words[i]);
  for (i = 0; i < kept.n; ++i) free(kept.words[i]);
  free(raw.words);
  free(raw.counts);
  free(kept.words);
  free(kept.counts);
  free(ids);
  return out;
}

/* ---- model ------------------------------------------------------------------------------- */

typedef struct Model {
  ch_function_set* set;
  ch_function *embed, *x_to_h, *h_to_h, *h_to_y;
  int lstm;
  int64_t units;
} Model;

static ch_function* linear(int64_t in, int64_t out) {
  ch_function* f;
  CHECK(ch_functions_linear_new(&f, in, out, CH_FLOAT32, 1.0, 0.0, 0, NULL, NULL));
  return f;
}

static Model make_model(const Options* o, int64_t vocab) {
  Model m;
  const int64_t gates = o->lstm ? 4 : 1; /* lstm takes the four gates' inputs at once */
  m.lstm = o->lstm;
  m.units = o->units;
  CHECK(ch_functions_embed_id_new(&m.embed, vocab, o->embed, CH_FLOAT32, NULL));
  m.x_to_h = linear(o->embed, gates * o->units);
  m.h_to_h = linear(o->units, gates * o->units);
  m.h_to_y = linear(o->units, vocab);
  CHECK(ch_function_set_new(&m.set));
  CHECK(ch_function_set_add_function(m.set, "embed", m.embed));
  CHECK(ch_function_set_add_function(m.set, "x_to_h", m.x_to_h));
  CHECK(ch_function_set_add_function(m.set, "h_to_h", m.h_to_h));
  CHECK(ch_function_set_add_function(m.set, "h_to_y", m.h_to_y));
  return m;
}

static void free_model(Model* m) {
  ch_function_release(m->embed);
  ch_function_release(m->x_to_h);
  ch_function_release(m->h_to_h);
  ch_function_release(m->h_to_y);
  ch_function_set_release(m->set);
}

static ch_variable* apply(ch_function* f, ch_variable* x) {
  ch_variable* y;
  CHECK(ch_function_apply(f, &x, 1, &y, 1, NULL));
  return y;
}

/* The recurrent state: h, and c for lstm. */
typedef struct State {
  ch_variable *h, *c;
} State;

static ch_variable* zeros(int64_t batch, int64_t units, int is_volatile) {
  ch_array* a;
  ch_variable* v;
  const int64_t shape[2] = {batch, units};
  CHECK(ch_array_new_full(&a, CH_FLOAT32, shape, 2, 0.0, ch_device_cpu()));
  CHECK(ch_variable_new(&v, a, is_volatile));
  ch_array_release(a);
  return v;
}

static ch_variable* ids_var(const int32_t* ids, int64_t batch, int is_volatile) {
  ch_array* a;
  ch_variable* v;
  CHECK(ch_array_new(&a, CH_INT32, &batch, 1, ids, ch_device_cpu()));
  CHECK(ch_variable_new(&v, a, is_volatile));
  ch_array_release(a);
  return v;
}

/* The seed's forward_one_step: updates *s and returns the step's loss. */
static ch_variable* forward_one_step(const Model* m, State* s, const int32_t* cur,
                                     const int32_t* next, int64_t batch, int is_volatile) {
  ch_variable *word = ids_var(cur, batch, is_volatile), *t = ids_var(next, batch, is_volatile);
  ch_variable *e = apply(m->embed, word), *x, *a, *b, *pre, *y, *loss;
  CHECK(ch_functions_tanh(&x, e));
  a = apply(m->x_to_h, x);
  b = apply(m->h_to_h, s->h);
  CHECK(ch_functions_add(&pre, a, b));
  ch_variable_release(s->h);
  if (m->lstm) {
    ch_variable* c;
    CHECK(ch_functions_lstm(&c, &s->h, s->c, pre));
    ch_variable_release(s->c);
    s->c = c;
  } else {
    CHECK(ch_functions_tanh(&s->h, pre));
  }
  y = apply(m->h_to_y, s->h);
  CHECK(ch_functions_softmax_cross_entropy(&loss, y, t));
  ch_variable_release(word);
  ch_variable_release(t);
  ch_variable_release(e);
  ch_variable_release(x);
  ch_variable_release(a);
  ch_variable_release(b);
  ch_variable_release(pre);
  ch_variable_release(y);
  return loss;
}

/* Word ids at position `step` of each of the `batch` streams over data[0, n). */
static void gather(const int32_t* data, int64_t n, int64_t batch, int64_t step, int32_t* cur,
                   int32_t* next) {
  const int64_t span = n / batch;
  int64_t b;
  for (b = 0; b < batch; ++b) {
    cur[b] = data[b * span + step];
    next[b] = data[b * span + step + 1];
  }
}

/* Mean loss per word over data with volatile variables (no graph). */
static double evaluate(const Model* m, const int32_t* data, int64_t n, int64_t batch) {
  State s;
  int32_t *cur = (int32_t*)malloc(sizeof(int32_t) * (size_t)batch),
          *next = (int32_t*)malloc(sizeof(int32_t) * (size_t)batch);
  const int64_t steps = n / batch - 1;
  double total = 0;
  int64_t step;
  s.h = zeros(batch, m->units, 1);
  s.c = zeros(batch, m->units, 1);
  for (step = 0; step < steps; ++step) {
    ch_variable* loss;
    gather(data, n, batch, step, cur, next);
    loss = forward_one_step(m, &s, cur, next, batch, 1);
    total += scalar_of(loss);
    ch_variable_release(loss);
  }
  ch_variable_release(s.h);
  ch_variable_release(s.c);
  free(cur);
  free(next);
  return steps > 0 ? total / (double)steps : 0;
}

/* The bar, the speed, and the time left in this epoch and in the run
 * (`epochs_after` more epochs of `total` steps follow this one). */
static void progress(int64_t done, int64_t total, double t0, int epochs_after, int64_t batch) {
  const int width = 30;
  int fill = (int)(width * done / (total ? total : 1)), i;
  char bar[64], eta[32], run[32];
  double dt = now_s() - t0, rate = dt > 0 ? (double)done / dt : 0.0;
  double left = rate > 0 ? (double)(total - done) / rate : 0.0;
  double run_left = rate > 0 ? left + (double)epochs_after * (double)total / rate : 0.0;
  for (i = 0; i < width; ++i) bar[i] = i < fill ? '=' : (i == fill ? '>' : ' ');
  bar[width] = '\0';
  fprintf(stderr, "\r  [%s] %lld/%lld  %.0f words/s  eta %s (run %s) ", bar, (long long)done,
          (long long)total, rate * (double)batch, log_report_hms(left, eta, sizeof eta),
          log_report_hms(run_left, run, sizeof run));
  if (done == total) fprintf(stderr, "\r%*s\r", width + 70, "");
  fflush(stderr);
}

int main(int argc, char** argv) {
  Options o = parse(argc, argv);
  int64_t length, vocab, n_train, n_valid, steps, step;
  int32_t* words;
  int32_t *cur, *next;
  Model m;
  ch_optimizer* opt;
  int epoch;
  const int show_bar = isatty(2);
  LogReport log = {NULL, NULL, 0, 0};
  long long iteration = 0;
  double start;
  static const char* log_keys[4] = {"main/loss", "main/perplexity", "validation/main/loss",
                                    "validation/main/perplexity"};
  log.path = o.log;

  if (o.threads > 0) CHECK(ch_config_set_num_threads(o.threads));
  ch_config_seed(o.seed);
  words = read_corpus(o.corpus, &length, &vocab);
  n_valid = length / 10;
  n_train = length - n_valid;
  if (n_train / o.batch < 2 || n_valid / o.batch < 2) {
    fprintf(stderr, "train_rnn: the corpus (%lld words) is too short for batch %d\n",
            (long long)length, o.batch);
    return 1;
  }
  printf("corpus %s: %lld words, vocabulary %lld; %s units %d, embed %d; batch %d, bptt %d\n",
         o.corpus, (long long)length, (long long)vocab, o.lstm ? "lstm" : "tanh", o.units, o.embed,
         o.batch, o.bptt);

  m = make_model(&o, vocab);
  CHECK(ch_optimizer_sgd_new(&opt, o.lr));
  CHECK(ch_optimizer_setup(opt, m.set));
  cur = (int32_t*)malloc(sizeof(int32_t) * (size_t)o.batch);
  next = (int32_t*)malloc(sizeof(int32_t) * (size_t)o.batch);
  steps = n_train / o.batch - 1;

  start = now_s();
  for (epoch = 1; epoch <= o.epochs; ++epoch) {
    State s;
    ch_variable* acc = NULL; /* loss accumulated since the last truncation */
    double total = 0, t0 = now_s();
    s.h = zeros(o.batch, o.units, 0);
    s.c = zeros(o.batch, o.units, 0);
    for (step = 0; step < steps; ++step) {
      ch_variable* loss;
      gather(words, n_train, o.batch, step, cur, next);
      loss = forward_one_step(&m, &s, cur, next, o.batch, 0);
      total += scalar_of(loss);
      if (acc) {
        ch_variable* sum;
        CHECK(ch_functions_add(&sum, acc, loss));
        ch_variable_release(acc);
        ch_variable_release(loss);
        acc = sum;
      } else {
        acc = loss;
      }
      if ((step + 1) % o.bptt == 0 || step + 1 == steps) {
        /* The seed's truncated backprop: backward, cut the history, update. */
        CHECK(ch_optimizer_zero_grads(opt));
        CHECK(ch_variable_backward(acc, 0));
        CHECK(ch_variable_unchain_backward(acc));
        if (o.clip > 0) CHECK(ch_optimizer_clip_grads(opt, o.clip));
        CHECK(ch_optimizer_update(opt));
        ch_variable_release(acc);
        acc = NULL;
        ++iteration;
      }
      if (show_bar && (step % 50 == 0 || step + 1 == steps))
        progress(step + 1, steps, t0, o.epochs - epoch, o.batch);
    }
    ch_variable_release(s.h);
    ch_variable_release(s.c);
    {
      const double train_loss = total / (double)steps, dt = now_s() - t0;
      const double valid_loss = evaluate(&m, words + n_train, n_valid, o.batch);
      const double values[4] = {train_loss, exp(train_loss), valid_loss, exp(valid_loss)};
      printf("epoch %d  train perplexity %.2f  valid perplexity %.2f  %.0f words/s\n", epoch,
             values[1], values[3], (double)(steps * o.batch) / dt);
      fflush(stdout);
      log_report_add(&log, epoch, iteration, log_keys, values, 4, now_s() - start);
    }
  }

  if (o.log)
    printf("wrote the training log to %s (plot it: scripts/plot_log.py %s)\n", o.log, o.log);
  log_report_free(&log);
  free(cur);
  free(next);
  free(words);
  ch_optimizer_release(opt);
  free_model(&m);
  return 0;
}
