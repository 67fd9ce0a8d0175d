// bench/distributed: samples/s of data-parallel training with libchainerc_mpi,
// the peer of ddp_train.py (PyTorch DistributedDataParallel on gloo).
//
// The models of bench/train (bench/chainerc_net.h): the MNIST MLP 784-H-H-10
// or the convnet conv(20, 5x5)-maxpool(2)-conv(50, 5x5)-maxpool(2)-
// linear(500)-ReLU-linear(10); float32, SGD lr 0.01, softmax cross entropy.
// The data is bench/train's synthetic set (pixels uniform in [0, 1), labels
// uniform in 0..9, the same on every rank); rank r of N trains on the
// contiguous share [r S / N, (r + 1) S / N) of the S samples of an epoch, in
// batches of B / N (B: the global batch), so a step of N ranks computes what
// one process computes on B samples. Every step: forward, backward,
// ch_optimizer_update on the multi-node optimizer (the gradients averaged over
// the ranks in one flat allreduce, then SGD). Nothing is read back per step.
//
// One warm-up epoch, then --repeats timed epochs, each between barriers; rank
// 0 prints one line per timed epoch and the best:
//   chainerc model mlp ranks 2 threads 1 batch 100: 123456 samples/s (best of 3)
//
//   mpirun -np N train_mpi [--model mlp|convnet] [--hidden 100] [--batch 100]
//       [--samples 20000] [--threads 1] [--repeats 3] [--local]
//
// --local trains without the allreduce (each rank alone, plain SGD): the
// difference to the normal run is the communication's cost. --phases prints
// each rank's median time per phase of a step; --reduce-loop N times N calls
// of ch_communicator_allreduce_grads alone (after the training).
#include <ch/ch.h>
#include <ch/distributed.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "../bench_util.h"
#include "../chainerc_net.h"

namespace {

struct Options {
  std::string model = "mlp";
  int64_t hidden = 100, batch = 100, samples = 20000;
  int threads = 1, repeats = 3, reduce_loop = 0;
  bool local = false, phases = false, huge_pages = true;
};

[[noreturn]] void usage(int code) {
  std::fprintf(code ? stderr : stdout,
               "usage: mpirun -np N train_mpi [--model mlp|convnet] [--hidden H] [--batch B]\n"
               "           [--samples S] [--threads T] [--repeats R] [--local] [--phases]\n"
               "           [--reduce-loop N] [--no-huge-pages]\n");
  std::exit(code);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") usage(0);
    if (a == "--local") {
      o.local = true;
      continue;
    }
    if (a == "--phases") {
      o.phases = true;
      continue;
    }
    if (a == "--no-huge-pages") {
      o.huge_pages = false;
      continue;
    }
    if (i + 1 >= argc) usage(2);
    const char* v = argv[++i];
    if (a == "--model")
      o.model = v;
    else if (a == "--hidden")
      o.hidden = std::atoll(v);
    else if (a == "--batch")
      o.batch = std::atoll(v);
    else if (a == "--samples")
      o.samples = std::atoll(v);
    else if (a == "--threads")
      o.threads = std::atoi(v);
    else if (a == "--repeats")
      o.repeats = std::atoi(v);
    else if (a == "--reduce-loop")
      o.reduce_loop = std::atoi(v);
    else
      usage(2);
  }
  if ((o.model != "mlp" && o.model != "convnet") || o.hidden < 1 || o.batch < 1 ||
      o.samples < o.batch || o.threads < 1 || o.repeats < 1)
    usage(2);
  return o;
}

// The data set (188 MB for the MLP's 60,000 samples): 2 MB aligned and, with
// huge_pages, madvise(MADV_HUGEPAGE) (transparent huge pages on request,
// Debian's default mode): a step reads a new 313 KB of it, 77 pages of 4 KB,
// whose TLB misses cost a two-level page walk in a VM.
struct HugeBuffer {
  void* data = nullptr;
  HugeBuffer(size_t bytes, bool huge) {
    const size_t kHuge = size_t{2} << 20;
    const size_t rounded = (bytes + kHuge - 1) / kHuge * kHuge;
    data = std::aligned_alloc(kHuge, rounded);
    if (!data) bench::die("out of memory for the data set");
#ifdef MADV_HUGEPAGE
    if (huge) madvise(data, rounded, MADV_HUGEPAGE);
#else
    (void)huge;
#endif
  }
  ~HugeBuffer() { std::free(data); }
  HugeBuffer(const HugeBuffer&) = delete;
  HugeBuffer& operator=(const HugeBuffer&) = delete;
};

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  ch_communicator* comm = nullptr;
  CH_BENCH_CHECK(ch_communicator_new_mpi(&comm));
  const int rank = ch_communicator_rank(comm), size = ch_communicator_size(comm);
  if (o.batch % size != 0) bench::die("--batch must be a multiple of the number of ranks");
  const int64_t local_batch = o.batch / size;
  const int64_t steps = o.samples / o.batch;
  CH_BENCH_CHECK(ch_config_set_num_threads(o.threads));
  ch_config_seed(1);

  // bench/train's data set; this rank's share is the contiguous block
  // [rank * steps * local_batch, ...): `steps` batches of local_batch.
  const int64_t n = steps * o.batch;
  const size_t x_count = static_cast<size_t>(n) * 784;
  HugeBuffer x_buf(x_count * sizeof(float), o.huge_pages);
  float* const x = static_cast<float*>(x_buf.data);
  std::vector<int32_t> t(static_cast<size_t>(n));
  {
    std::mt19937 gen(1234);
    std::uniform_real_distribution<float> u(0.f, 1.f);
    for (size_t i = 0; i < x_count; ++i) x[i] = u(gen);
    for (int32_t& v : t) v = static_cast<int32_t>(gen() % 10);
  }
  const int64_t begin = rank * steps * local_batch;

  const bool conv = o.model == "convnet";
  bench::ChainercNet net(conv, o.hidden, 0.01, ch_device_cpu());
  ch_optimizer* mn = nullptr;
  if (!o.local) {
    CH_BENCH_CHECK(ch_optimizer_new_multi_node(&mn, net.opt, comm));
    CH_BENCH_CHECK(ch_communicator_bcast_data(comm, net.set));
  }

  // --phases: each rank's time per phase of a step (forward, zero_grads,
  // backward, update: the allreduce and SGD), medians over the timed epochs.
  const char* const kPhases[] = {"forward", "zero_grads", "backward", "update"};
  std::vector<double> phase_us[4];
  double phase_t0 = 0;
  bool timing = false;
  if (o.phases)
    net.on_phase = [&](const char* what) {
      const double now = bench::now_s();
      const std::string w = what;
      const int k = w == "loss"         ? 0
                    : w == "zero_grads" ? 1
                    : w == "backward"   ? 2
                    : w == "update"     ? 3
                                        : -1;
      if (k < 0) return;  // a layer of the forward pass
      if (timing) phase_us[k].push_back((now - phase_t0) * 1e6);
      phase_t0 = now;
    };

  auto step = [&](int64_t s) {
    phase_t0 = bench::now_s();
    const int64_t off = begin + s * local_batch;
    const int64_t conv_shape[4] = {local_batch, 1, 28, 28};
    const int64_t flat_shape[2] = {local_batch, 784};
    ch_array *xa, *ta;
    CH_BENCH_CHECK(ch_array_wrap(&xa, CH_FLOAT32, conv ? conv_shape : flat_shape, conv ? 4 : 2,
                                 x + off * 784, ch_device_cpu(), nullptr, nullptr));
    CH_BENCH_CHECK(ch_array_wrap(&ta, CH_INT32, &local_batch, 1, t.data() + off, ch_device_cpu(),
                                 nullptr, nullptr));
    ch_variable *xv, *tv;
    CH_BENCH_CHECK(ch_variable_new(&xv, xa, 0));
    CH_BENCH_CHECK(ch_variable_new(&tv, ta, 0));
    CH_BENCH_CHECK(ch_variable_set_requires_grad(xv, 0));
    CH_BENCH_CHECK(ch_variable_set_requires_grad(tv, 0));
    ch_array_release(xa);
    ch_array_release(ta);
    ch_variable* loss = net.train_step(xv, tv);  // the multi-node update when not --local
    for (ch_variable* v : {loss, xv, tv}) ch_variable_release(v);
  };

  std::vector<double> rates;
  for (int e = 0; e <= o.repeats; ++e) {
    CH_BENCH_CHECK(ch_communicator_barrier(comm));
    timing = e > 0;
    const double t0 = bench::now_s();
    for (int64_t s = 0; s < steps; ++s) step(s);
    CH_BENCH_CHECK(ch_communicator_barrier(comm));
    const double dt = bench::now_s() - t0;
    if (e == 0) continue;  // warm-up
    rates.push_back(static_cast<double>(n) / dt);
    if (rank == 0)
      std::printf("  epoch %d: %.0f samples/s (%.1f us per step)\n", e, rates.back(),
                  dt / static_cast<double>(steps) * 1e6);
  }
  if (rank == 0)
    std::printf("chainerc model %s ranks %d threads %d batch %lld%s: %.0f samples/s (best of %d)\n",
                o.model.c_str(), size, ch_config_num_threads(), static_cast<long long>(o.batch),
                o.local ? " local" : "", *std::max_element(rates.begin(), rates.end()), o.repeats);
  if (o.reduce_loop > 0) {
    // The reduction alone: ch_communicator_allreduce_grads on this model's
    // gradients (those of the last step), N times between barriers.
    std::vector<double> us;
    for (int i = 0; i < o.reduce_loop; ++i) {
      CH_BENCH_CHECK(ch_communicator_barrier(comm));
      const double t0 = bench::now_s();
      CH_BENCH_CHECK(ch_communicator_allreduce_grads(comm, net.set));
      us.push_back((bench::now_s() - t0) * 1e6);
    }
    std::sort(us.begin(), us.end());
    if (rank == 0)
      std::printf(
          "allreduce_grads alone, %d ranks: median %.1f us, quartiles %.1f-%.1f us (%d calls)\n",
          size, us[us.size() / 2], us[us.size() / 4], us[us.size() * 3 / 4], o.reduce_loop);
  }
  if (o.phases) {
    for (int r = 0; r < size; ++r) {
      CH_BENCH_CHECK(ch_communicator_barrier(comm));
      if (r != rank) continue;
      std::printf("  rank %d per step, median (mean) us:", rank);
      for (int k = 0; k < 4; ++k) {
        std::vector<double>& v = phase_us[k];
        if (v.empty()) continue;
        double mean = 0;
        for (double x : v) mean += x;
        mean /= static_cast<double>(v.size());
        std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
        std::printf(" %s %.1f (%.1f)", kPhases[k], v[v.size() / 2], mean);
      }
      std::printf("\n");
      std::fflush(stdout);
    }
  }
  if (mn) ch_optimizer_release(mn);
  CH_BENCH_CHECK(ch_communicator_release(comm));
  return 0;
}
