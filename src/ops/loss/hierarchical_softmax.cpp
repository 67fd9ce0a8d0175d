// BinaryHierarchicalSoftmax: the seed's chainer.functions.BinaryHierarchicalSoftmax
// (Chainer 1.0.1). For a word t with path ((e_1, b_1), ..., (e_m, b_m)) from
// the root, loss(x, t) = sum_k log(1 + exp(-b_k * W[e_k] . x)); forward returns
// the 0-d sum over the batch. As Chainer's TreeParser, b = +1 when the path
// goes to the left child and -1 to the right. W (n_internal, in_size) ~
// U(-1, 1) as Chainer 1.0.1. Backward gives gx and accumulates gW.
//
// The tree is a flat array of child codes: tree[2k] / tree[2k + 1] are the
// left / right child of internal node k (row k of W); a code c >= 0 is
// internal node c, c < 0 the leaf of word -c - 1. Node 0 is the root.
#include <algorithm>
#include <climits>
#include <cmath>
#include <queue>
#include <sstream>
#include <tuple>

#include "core/random.h"
#include "kernels/loss.h"
#include "ops/op_util.h"
#include "ops/ops.h"

namespace chainerc::ops {
namespace {

constexpr const char* kWho = "BinaryHierarchicalSoftmax";
// Word ids below max(kHsmMinIdBound, kHsmIdsPerWord * words) are accepted:
// at most 16 MiB of id tables for any tree, 16 * 64 bytes per word beyond.
constexpr int64_t kHsmMinIdBound = int64_t{1} << 20;
constexpr int64_t kHsmIdsPerWord = 64;

using Paths = kernels::HsmPaths;

Paths parse_tree(const int32_t* tree, int64_t n_internal, const char* who) {
  if (n_internal <= 0)
    fail(CH_ERR_INVALID_ARGUMENT, who, ": the tree has ", n_internal,
         " internal nodes; at least 1 (two words) required");
  if (!tree) fail(CH_ERR_INVALID_ARGUMENT, who, ": tree is NULL");
  // Child codes are int32: more internal nodes could not all be reached.
  if (n_internal > INT32_MAX)
    fail(CH_ERR_INVALID_ARGUMENT, who, ": the tree has ", n_internal,
         " internal nodes; at most 2^31 - 1 can be numbered by int32 codes");
  int32_t max_word = -1;
  for (int64_t j = 0; j < 2 * n_internal; ++j) {
    const int32_t c = tree[j];
    if (c >= n_internal)
      fail(CH_ERR_INVALID_ARGUMENT, who, ": child ", j % 2 ? "right" : "left", " of node ", j / 2,
           " is internal node ", c, " but the tree has ", n_internal, " internal nodes");
    if (c < 0) max_word = std::max(max_word, -(c + 1));
    if (c == 0)
      fail(CH_ERR_INVALID_ARGUMENT, who, ": node ", j / 2, " has the root (node 0) as a child");
  }
  // The tables are indexed by word id, so they take an entry per id up to the
  // largest: bounded by what the tree justifies (its n_internal + 1 words),
  // not by an id, which may be any int32 (-INT32_MAX - 1 is word 2^31 - 1).
  const int64_t words = n_internal + 1;
  const int64_t max_id = std::max<int64_t>(kHsmMinIdBound, kHsmIdsPerWord * words) - 1;
  if (max_word > max_id)
    fail(CH_ERR_INVALID_ARGUMENT, who, ": word id ", max_word, " is larger than a tree of ", words,
         " words allows (ids up to ", max_id, ", the larger of ", kHsmMinIdBound, " and ",
         kHsmIdsPerWord, " per word, minus 1): number the words more densely");
  Paths p;
  p.start.assign(static_cast<size_t>(max_word) + 1, -1);
  p.length.assign(static_cast<size_t>(max_word) + 1, 0);
  std::vector<char> seen(static_cast<size_t>(n_internal), 0);
  // Iterative pre-order walk (Huffman trees can be as deep as the vocabulary).
  struct Frame {
    int32_t node;
    int side;  // 0: go left next, 1: go right next, 2: done
  };
  std::vector<Frame> stack{{0, 0}};
  std::vector<int32_t> path_nodes;
  std::vector<int8_t> path_codes;
  seen[0] = 1;
  path_nodes.push_back(0);
  path_codes.push_back(1);
  while (!stack.empty()) {
    Frame& fr = stack.back();
    if (fr.side == 2) {
      stack.pop_back();
      path_nodes.pop_back();
      path_codes.pop_back();
      continue;
    }
    const int side = fr.side++;
    path_codes.back() = side == 0 ? 1 : -1;
    const int32_t child = tree[2 * static_cast<int64_t>(fr.node) + side];
    if (child < 0) {
      const int32_t w = -(child + 1);
      if (p.start[static_cast<size_t>(w)] >= 0)
        fail(CH_ERR_INVALID_ARGUMENT, who, ": word ", w, " is a leaf of the tree more than once");
      p.start[static_cast<size_t>(w)] = static_cast<int64_t>(p.nodes.size());
      p.length[static_cast<size_t>(w)] = static_cast<int64_t>(path_nodes.size());
      p.max_length = std::max(p.max_length, static_cast<int64_t>(path_nodes.size()));
      p.nodes.insert(p.nodes.end(), path_nodes.begin(), path_nodes.end());
      p.codes.insert(p.codes.end(), path_codes.begin(), path_codes.end());
    } else {
      if (seen[static_cast<size_t>(child)])
        fail(CH_ERR_INVALID_ARGUMENT, who, ": internal node ", child,
             " is reached twice (a node may have one parent; the tree may have no cycle)");
      seen[static_cast<size_t>(child)] = 1;
      stack.push_back(Frame{child, 0});
      path_nodes.push_back(child);
      path_codes.push_back(1);
    }
  }
  for (int64_t k = 0; k < n_internal; ++k)
    if (!seen[static_cast<size_t>(k)])
      fail(CH_ERR_INVALID_ARGUMENT, who, ": internal node ", k,
           " is not reachable from the root (node 0)");
  return p;
}

class BinaryHierarchicalSoftmax final : public Function {
 public:
  BinaryHierarchicalSoftmax(int64_t in_size, std::shared_ptr<const Paths> paths,
                            std::shared_ptr<Parameters> params)
      : in_size_(in_size), paths_(std::move(paths)) {
    parameters = std::move(params);
  }
  const char* name() const override { return kWho; }
  FuncPtr clone() const override {
    return std::make_shared<BinaryHierarchicalSoftmax>(in_size_, paths_, parameters);
  }

  Arrays forward(const Arrays& in) override {
    if (in.size() != 2)
      fail(CH_ERR_INVALID_ARGUMENT, kWho, ": expects 2 inputs (x, t), got ", in.size());
    const Array& x = in[0];
    const Array& t = in[1];
    const Array& W = (*parameters)[0].param;
    check_float(kWho, x);
    if (x.dtype() != W.dtype())
      fail(CH_ERR_DTYPE, kWho, ": x is a ", x.describe(), " but W is ", dtype_name(W.dtype()));
    if (t.device() != x.device() || W.device() != x.device())
      fail(CH_ERR_DEVICE, kWho, ": x is on ", x.device().to_string(), ", t on ",
           t.device().to_string(), " and W on ", W.device().to_string(), "; one device expected");
    if (x.ndim() != 2 || x.shape()[1] != in_size_)
      fail(CH_ERR_SHAPE, kWho, ": x is ", x.shape().to_string(), "; (N, ", in_size_, ") expected");
    if (t.dtype() != DType::Int32)
      fail(CH_ERR_DTYPE, kWho, ": t is a ", t.describe(), "; int32 expected");
    if (t.ndim() != 1 || t.shape()[0] != x.shape()[0])
      fail(CH_ERR_SHAPE, kWho, ": t is ", t.shape().to_string(), " but x is ",
           x.shape().to_string(), "; t must be (", x.shape()[0], ",)");
    auto describe = [](int64_t index, int64_t value) {
      std::ostringstream os;
      os << kWho << ": label " << value << " at position " << index
         << " is not a leaf (word) of the tree";
      return os.str();
    };
    // On CUDA checked on the device and reported at the next synchronisation
    // (the kernels skip bad labels); elsewhere at once.
    if (kernels::hsm_defer_bad_label.implemented_for(t.device().type)) {
      kernels::hsm_defer_bad_label(t, *paths_, describe);
    } else {
      const kernels::BadLabel bad = kernels::hsm_find_bad_label(t, *paths_);
      if (bad.index >= 0) fail(CH_ERR_INVALID_ARGUMENT, describe(bad.index, bad.value));
    }
    Array y = Array::empty(x.dtype(), Shape{}, x.device());
    kernels::hsm(x, t, W, *paths_, y);
    return {y};
  }

  Arrays backward(const Arrays& in, const Arrays& gy) override {
    const Array& x = in[0];
    const Array& t = in[1];
    Parameter& p = (*parameters)[0];
    Array gx = Array::zeros_like(x);
    kernels::hsm_grad(x, t, p.param, *paths_, gy[0], gx, p.grad);
    return {gx, Array()};
  }

 private:
  int64_t in_size_;
  std::shared_ptr<const Paths> paths_;
};

}  // namespace

FuncPtr binary_hierarchical_softmax_new(int64_t in_size, const int32_t* tree, int64_t n_internal,
                                        DType dtype, const Array* initial_W) {
  const char* who = "ch_functions_binary_hierarchical_softmax_new";
  if (in_size <= 0) fail(CH_ERR_INVALID_ARGUMENT, who, ": in_size ", in_size, " must be positive");
  if (!is_floating(dtype))
    fail(CH_ERR_DTYPE, who, ": dtype ", dtype_name(dtype), " given; float32 or float64 expected");
  auto paths = std::make_shared<const Paths>(parse_tree(tree, n_internal, who));
  const Shape shape{n_internal, in_size};
  Array W;
  if (initial_W) {
    if (initial_W->dtype() != dtype || initial_W->shape() != shape)
      fail(CH_ERR_SHAPE, who, ": initial_W is a ", initial_W->describe(), "; a ", dtype_name(dtype),
           " array of shape ", shape.to_string(), " expected");
    W = initial_W->copy();
  } else {
    W = Array::empty(dtype, shape);
    random::fill_uniform(W, -1.0, 1.0);  // Chainer 1.0.1: numpy.random.uniform(-1, 1, (n, in_size))
  }
  auto params = std::make_shared<Parameters>();
  params->push_back(Parameter{"W", W, Array::zeros_like(W)});
  return std::make_shared<BinaryHierarchicalSoftmax>(in_size, std::move(paths), std::move(params));
}

std::vector<int32_t> hsm_create_huffman_tree(const double* counts, int64_t n_words) {
  const char* who = "ch_functions_binary_hierarchical_softmax_create_huffman_tree";
  if (n_words < 2)
    fail(CH_ERR_INVALID_ARGUMENT, who, ": ", n_words, " words given; at least 2 needed for a tree");
  if (n_words > INT32_MAX)
    fail(CH_ERR_INVALID_ARGUMENT, who, ": ", n_words, " words exceed int32 ids");
  if (!counts) fail(CH_ERR_INVALID_ARGUMENT, who, ": counts is NULL");
  for (int64_t w = 0; w < n_words; ++w)
    if (std::isnan(counts[w]))
      fail(CH_ERR_INVALID_ARGUMENT, who, ": the count of word ", w, " is NaN");
  // Chainer's algorithm: a min-queue of (count, uid, node); pop two, the first
  // becomes the left child, push (sum, min uid). Nodes here: code >= 0 is a
  // merged pair (index into `pairs`), < 0 a word leaf.
  using Entry = std::tuple<double, int64_t, int64_t>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> q;
  for (int64_t w = 0; w < n_words; ++w) q.emplace(counts[w], w, -(w + 1));
  std::vector<std::pair<int64_t, int64_t>> pairs;
  while (q.size() >= 2) {
    auto [c1, id1, n1] = q.top();
    q.pop();
    auto [c2, id2, n2] = q.top();
    q.pop();
    pairs.emplace_back(n1, n2);
    q.emplace(c1 + c2, std::min(id1, id2), static_cast<int64_t>(pairs.size()) - 1);
  }
  // Number the merged pairs in pre-order from the root (the last pair).
  std::vector<int32_t> tree(static_cast<size_t>(2 * (n_words - 1)));
  std::vector<int64_t> number(pairs.size(), -1);
  std::vector<int64_t> stack{static_cast<int64_t>(pairs.size()) - 1};
  int32_t next = 0;
  while (!stack.empty()) {
    const int64_t pr = stack.back();
    stack.pop_back();
    number[static_cast<size_t>(pr)] = next++;
    // Right pushed first so the left subtree is numbered first.
    for (int64_t child :
         {pairs[static_cast<size_t>(pr)].second, pairs[static_cast<size_t>(pr)].first})
      if (child >= 0) stack.push_back(child);
  }
  for (size_t pr = 0; pr < pairs.size(); ++pr) {
    const int64_t k = number[pr];
    const auto code = [&](int64_t child) {
      return static_cast<int32_t>(child < 0 ? child : number[static_cast<size_t>(child)]);
    };
    tree[static_cast<size_t>(2 * k)] = code(pairs[pr].first);
    tree[static_cast<size_t>(2 * k + 1)] = code(pairs[pr].second);
  }
  return tree;
}

}  // namespace chainerc::ops
