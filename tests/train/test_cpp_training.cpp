// The C++ layer (<ch/ch.hpp>) for training: ch::FunctionSet, ch::Optimizer,
// ch::datasets::read_idx; errors as ch::Error.
#include <ch/ch.hpp>
#include <cmath>

#include "train_test_util.h"

using namespace train_test;

namespace {

class CppTrainingTest : public CapiTest {};

ch::Function linear(int64_t in, int64_t out, double start) {
  return ch::Function::adopt(make_linear(CH_FLOAT64, in, out, start).release());
}

TEST_F(CppTrainingTest, FunctionSetOptimizerCheckpoint) {
  ch::FunctionSet enc = ch::FunctionSet::create({{"l1", linear(2, 2, 5)}});
  ch::FunctionSet model =
      ch::FunctionSet::create({{"l2", linear(3, 2, 0)}, {"l1", linear(4, 3, 1)}});
  model.add("enc", enc);
  EXPECT_EQ(model.member_names(), (std::vector<std::string>{"enc", "l1", "l2"}));
  std::vector<ch::NamedParameter> params = model.parameters();
  ASSERT_EQ(params.size(), 6u);
  EXPECT_EQ(params[0].path, "enc/l1/W");
  EXPECT_EQ(params[5].path, "l2/b");
  EXPECT_EQ(model.function("l1").name(), "Linear");
  EXPECT_EQ(model.set("enc").parameter_count(), 2u);
  auto [ps, gs] = model.collect_parameters();
  EXPECT_EQ(ps.size(), 6u);
  EXPECT_EQ(gs.size(), 6u);

  ch::Optimizer opt = ch::Optimizer::momentum_sgd(0.1);
  EXPECT_EQ(opt.name(), "MomentumSGD");
  EXPECT_EQ(opt.hyperparam("momentum"), 0.9);
  opt.setup(model);
  for (ch::Array& g : gs) g.fill(1.0);
  EXPECT_DOUBLE_EQ(opt.compute_grads_norm(), std::sqrt(4.0 + 2 + 12 + 3 + 6 + 2));
  opt.update();
  EXPECT_EQ(opt.t(), 1);
  EXPECT_TRUE(AllClose(values(ps[5].get()), {-1.1, -2.1}, 1e-15));
  auto state = opt.state();
  ASSERT_EQ(state.size(), 6u);
  EXPECT_EQ(state[0].first, "enc/l1/W/v");

  std::string mpath = temp_path("cpp_model.npz"), opath = temp_path("cpp_opt.npz");
  model.save_npz(mpath, true);
  opt.save_npz(opath);
  ch::FunctionSet copy = ch::FunctionSet::create({
      {"l2", linear(3, 2, 9)},
      {"l1", linear(4, 3, 9)},
  });
  copy.add("enc", ch::FunctionSet::create({{"l1", linear(2, 2, 9)}}));
  copy.load_npz(mpath);
  ch::Optimizer opt2 = ch::Optimizer::momentum_sgd(0.1).setup(copy);
  opt2.load_npz(opath);
  EXPECT_EQ(opt2.t(), 1);
  for (size_t i = 0; i < 6; ++i)
    EXPECT_EQ(values(copy.parameters()[i].param.get()), values(params[i].param.get())) << i;

  // Errors become ch::Error with the status and message.
  try {
    copy.add("l3", ch::FunctionSet::create()).load_npz(temp_path("missing.npz"));
    ADD_FAILURE() << "no exception";
  } catch (const ch::Error& e) {
    EXPECT_EQ(e.status(), CH_ERR_IO);
    EXPECT_TRUE(contains(e.what(), "missing.npz")) << e.what();
  }
  EXPECT_THROW(model.to_gpu(), ch::Error);
  EXPECT_THROW(ch::Optimizer::adam().hyperparam("lr"), ch::Error);
  // Chainer 7's Adam and NesterovAG through the C++ layer.
  ch_adam_options adamw = CH_ADAM_OPTIONS_INIT;
  adamw.weight_decay_rate = 0.01;
  EXPECT_EQ(ch::Optimizer::adam(adamw).hyperparam("weight_decay_rate"), 0.01);
  adamw.amsgrad = 3;
  EXPECT_THROW(ch::Optimizer::adam(adamw), ch::Error);
  EXPECT_EQ(ch::Optimizer::nesterov_ag().name(), "NesterovAG");
  EXPECT_THROW(ch::datasets::read_idx(temp_path("missing.idx")), ch::Error);
}

}  // namespace
