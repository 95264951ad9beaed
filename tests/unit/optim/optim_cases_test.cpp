// Optimizers against PyTorch 1.13: the same pattern parameters and gradients (built on
// both sides from ((i*a) % m - s) / d), four steps, parameters compared after each step.
// Expected values printed by gen_optim_cases.py; plus grad skipping, zero_grad, state, errors.
#include <gtest/gtest.h>

#include <functional>
#include <memory>

#include "ember/ember.h"
#include "support/error_of.h"

namespace ember {
namespace {

Tensor pattern(int64_t n, int a, int m, int s, double d, ScalarType dtype) {
  std::vector<double> values;
  for (int64_t i = 0; i < n; ++i) values.push_back(static_cast<double>((i * a) % m - s) / d);
  return tensor(values).to(dtype);
}

void expect_close(const Tensor& t, const std::vector<double>& expected, ScalarType dtype) {
  const double atol = dtype == kFloat ? 1e-5 : 1e-7, rtol = dtype == kFloat ? 1.3e-6 : 1e-7;
  ASSERT_TRUE(t.defined());
  std::vector<double> got = t.to_vector<double>();
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], expected[i], atol + rtol * std::abs(expected[i])) << i;
}

using Make = std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor>)>;

void run_and_compare(const Make& make, ScalarType dtype, const std::vector<std::vector<double>>& expected) {
  Tensor p = pattern(6, 7, 11, 5, 4.0, dtype);
  p.requires_grad_();
  auto opt = make({p});
  for (size_t k = 0; k < expected.size(); ++k) {
    p.mutable_grad() = pattern(6, 5 + static_cast<int>(k), 13, 6, 3.0 + static_cast<double>(k), dtype);
    opt->step();
    SCOPED_TRACE("step " + std::to_string(k + 1));
    expect_close(p, expected[k], dtype);
    EXPECT_EQ(p.dtype(), dtype);
    EXPECT_TRUE(p.is_leaf());
    EXPECT_TRUE(p.requires_grad());
  }
}

using ember::testing::error_of;

TEST(Optim, SgdPlainFloat32) {
  run_and_compare([](std::vector<Tensor> ps) -> std::unique_ptr<optim::Optimizer> { return std::make_unique<optim::SGD>(ps, optim::SGDOptions{.lr = 0.1}); }, kFloat,
                  {{-1.0499999523162842, 0.5333333611488342, -0.6333333253860474, 1.3833333253860474, 0.21666666865348816, -0.949999988079071},
{-0.8999999761581421, 0.5333333611488342, -0.7833333015441895, 1.4083333015441895, 0.09166666865348816, -0.8999999761581421},
{-0.7799999713897705, 0.5133333802223206, -0.6833332777023315, 1.368333339691162, 0.17166666686534882, -0.9599999785423279},
{-0.6799999475479126, 0.4800000488758087, -0.6333332657814026, 1.284999966621399, 0.17166666686534882, -0.8766666650772095}});
}

TEST(Optim, SgdPlainFloat64) {
  run_and_compare([](std::vector<Tensor> ps) -> std::unique_ptr<optim::Optimizer> { return std::make_unique<optim::SGD>(ps, optim::SGDOptions{.lr = 0.1}); }, kDouble,
                  {{-1.05, 0.5333333333333333, -0.6333333333333333, 1.3833333333333333, 0.21666666666666667, -0.95},
{-0.9, 0.5333333333333333, -0.7833333333333333, 1.4083333333333332, 0.09166666666666667, -0.8999999999999999},
{-0.78, 0.5133333333333333, -0.6833333333333333, 1.3683333333333332, 0.1716666666666667, -0.96},
{-0.68, 0.48, -0.6333333333333333, 1.285, 0.1716666666666667, -0.8766666666666666}});
}

TEST(Optim, SgdMomentumDampeningWdFloat32) {
  run_and_compare([](std::vector<Tensor> ps) -> std::unique_ptr<optim::Optimizer> { return std::make_unique<optim::SGD>(ps, optim::SGDOptions{.lr = 0.05, .momentum = 0.9, .dampening = 0.3, .weight_decay = 0.01}); }, kFloat,
                  {{-1.1493749618530273, 0.5164166688919067, -0.5664166808128357, 1.3160417079925537, 0.2332083284854889, -0.8496249914169312},
{-1.0059101581573486, 0.5310109257698059, -0.6784934401512146, 1.3837685585021973, 0.17426420748233795, -0.9214901328086853},
{-0.8344398140907288, 0.5369598865509033, -0.7441250681877136, 1.4302384853363037, 0.14915350079536438, -1.0068461894989014},
{-0.6448244452476501, 0.5304593443870544, -0.7854330539703369, 1.4423941373825073, 0.12650166451931, -1.0541476011276245}});
}

TEST(Optim, SgdMomentumDampeningWdFloat64) {
  run_and_compare([](std::vector<Tensor> ps) -> std::unique_ptr<optim::Optimizer> { return std::make_unique<optim::SGD>(ps, optim::SGDOptions{.lr = 0.05, .momentum = 0.9, .dampening = 0.3, .weight_decay = 0.01}); }, kDouble,
                  {{-1.149375, 0.5164166666666666, -0.5664166666666667, 1.3160416666666668, 0.23320833333333332, -0.849625},
{-1.00591021875, 0.5310109208333333, -0.6784934208333333, 1.3837685520833334, 0.17426421041666665, -0.92149013125},
{-0.8344398470484374, 0.5369598957610416, -0.7441250268860417, 1.4302384299651043, 0.14915350731802082, -1.0068462278290624},
{-0.6448244585705643, 0.5304593705657961, -0.785433028574069, 1.4423940699415436, 0.12650167080167826, -1.0541476519038118}});
}

TEST(Optim, SgdNesterovMaximizeFloat32) {
  run_and_compare([](std::vector<Tensor> ps) -> std::unique_ptr<optim::Optimizer> { return std::make_unique<optim::SGD>(ps, optim::SGDOptions{.lr = 0.1, .momentum = 0.8, .weight_decay = 0.1, .nesterov = true, .maximize = true}); }, kFloat,
                  {{-1.587499976158142, 0.4309999942779541, -0.25099998712539673, 0.987500011920929, 0.30550000071525574, -0.3764999806880951},
{-1.9489250183105469, 0.39870864152908325, 0.11205136030912399, 0.8313916921615601, 0.5447343587875366, -0.3269229829311371},
{-2.3116843700408936, 0.4051468074321747, 0.09846752136945724, 0.791439950466156, 0.4847606122493744, -0.13638874888420105},
{-2.6598730087280273, 0.450194388628006, 0.07672443985939026, 0.8698837757110596, 0.49641379714012146, -0.18212175369262695}});
}

TEST(Optim, SgdNesterovMaximizeFloat64) {
  run_and_compare([](std::vector<Tensor> ps) -> std::unique_ptr<optim::Optimizer> { return std::make_unique<optim::SGD>(ps, optim::SGDOptions{.lr = 0.1, .momentum = 0.8, .weight_decay = 0.1, .nesterov = true, .maximize = true}); }, kDouble,
                  {{-1.5875, 0.431, -0.25099999999999995, 0.9874999999999999, 0.3055, -0.37649999999999995},
{-1.948925, 0.39870866666666666, 0.11205133333333342, 0.8313916666666665, 0.5447343333333333, -0.3269229999999999},
{-2.31168435, 0.405146844, 0.09846747600000008, 0.7914399499999999, 0.484760582, -0.13638878599999987},
{-2.6598729117000004, 0.45019441200800003, 0.07672438623200008, 0.8698837908999999, 0.496413765124, -0.18212180065199987}});
}

TEST(Optim, AdamWDefaultFloat32) {
  run_and_compare([](std::vector<Tensor> ps) -> std::unique_ptr<optim::Optimizer> { return std::make_unique<optim::AdamW>(ps); }, kFloat,
                  {{-1.2489874362945557, 0.5009949803352356, -0.5009949803352356, 1.2509875297546387, 0.2489974945783615, -0.750992476940155},
{-1.2479923963546753, 0.5016600489616394, -0.501991331577301, 1.2517707347869873, 0.24810341000556946, -0.7514544129371643},
{-1.247018575668335, 0.5017701387405396, -0.5023939609527588, 1.2521673440933228, 0.2478509396314621, -0.7519739866256714},
{-1.2460681200027466, 0.5014581084251404, -0.5025882124900818, 1.252148151397705, 0.24764367938041687, -0.7521584033966064}});
}

TEST(Optim, AdamWDefaultFloat64) {
  run_and_compare([](std::vector<Tensor> ps) -> std::unique_ptr<optim::Optimizer> { return std::make_unique<optim::AdamW>(ps); }, kDouble,
                  {{-1.2489875000050001, 0.5009949999700001, -0.5009949999925, 1.2509874999925, 0.24899750003, -0.7509924999950001},
{-1.2479924350541003, 0.5016600482457017, -0.5019913256776091, 1.2517707627087908, 0.24810340682898505, -0.7514544582379868},
{-1.2470187046912882, 0.5017701496843882, -0.5023939421640619, 1.252167383648505, 0.24785094105694194, -0.7519740348340682},
{-1.2460682873080517, 0.5014581265857903, -0.5025881997868826, 1.252148187838951, 0.24764369026164137, -0.7521584269342122}});
}

TEST(Optim, AdamWAmsgradFloat32) {
  run_and_compare([](std::vector<Tensor> ps) -> std::unique_ptr<optim::Optimizer> { return std::make_unique<optim::AdamW>(ps, optim::AdamWOptions{.lr = 0.01, .betas = {0.8, 0.9}, .eps = 1e-6, .weight_decay = 0.1, .amsgrad = true}); }, kFloat,
                  {{-1.2387499809265137, 0.5094999670982361, -0.5095000267028809, 1.2587499618530273, 0.23975002765655518, -0.7592499852180481},
{-1.2276962995529175, 0.5151166915893555, -0.519007682800293, 1.2650532722473145, 0.23050260543823242, -0.7627025246620178},
{-1.216880202293396, 0.5148510932922363, -0.5218518972396851, 1.2670941352844238, 0.22836413979530334, -0.7669324278831482},
{-1.2063217163085938, 0.5100921988487244, -0.5223488211631775, 1.2645068168640137, 0.22671455144882202, -0.7672485709190369}});
}

TEST(Optim, AdamWAmsgradFloat64) {
  run_and_compare([](std::vector<Tensor> ps) -> std::unique_ptr<optim::Optimizer> { return std::make_unique<optim::AdamW>(ps, optim::AdamWOptions{.lr = 0.01, .betas = {0.8, 0.9}, .eps = 1e-6, .weight_decay = 0.1, .amsgrad = true}); }, kDouble,
                  {{-1.2387500049999975, 0.50949997000009, -0.5094999925000057, 1.2587499925000056, 0.23975002999991, -0.7592499950000025},
{-1.227696311387715, 0.5151166885866792, -0.5190076175714354, 1.2650533169912992, 0.23050259589062919, -0.7627025347764764},
{-1.2168802851223683, 0.5148510657779086, -0.5218517858133572, 1.2670941686255406, 0.22836413568044472, -0.7669324254472502},
{-1.2063218381089045, 0.510092179963254, -0.5223486672794228, 1.264506809106706, 0.2267145441722784, -0.7672485566701082}});
}

TEST(Optim, AdamWMaximizeNoWdFloat32) {
  run_and_compare([](std::vector<Tensor> ps) -> std::unique_ptr<optim::Optimizer> { return std::make_unique<optim::AdamW>(ps, optim::AdamWOptions{.lr = 0.02, .weight_decay = 0.0, .maximize = true}); }, kFloat,
                  {{-1.2699999809265137, 0.47999998927116394, -0.47999998927116394, 1.2300000190734863, 0.27000001072883606, -0.7300000190734863},
{-1.2896515130996704, 0.46659883856773376, -0.4599732756614685, 1.2140846252441406, 0.2878320813179016, -0.7206106781959534},
{-1.3088765144348145, 0.46429648995399475, -0.4518205523490906, 1.205901861190796, 0.29283177852630615, -0.7100688815116882},
{-1.327635407447815, 0.47043660283088684, -0.44783490896224976, 1.2060353755950928, 0.29692721366882324, -0.706230640411377}});
}

TEST(Optim, AdamWMaximizeNoWdFloat64) {
  run_and_compare([](std::vector<Tensor> ps) -> std::unique_ptr<optim::Optimizer> { return std::make_unique<optim::AdamW>(ps, optim::AdamWOptions{.lr = 0.02, .weight_decay = 0.0, .maximize = true}); }, kDouble,
                  {{-1.2699999999, 0.4800000006, -0.48000000015, 1.23000000015, 0.2699999994, -0.7300000001},
{-1.2896515014179952, 0.46659883608597474, -0.45997328744782157, 1.2140845483241818, 0.2878320639202935, -0.7206106367402669},
{-1.3088765101872284, 0.46429647530259555, -0.45182055945363186, 1.2059017753773578, 0.29283175867979017, -0.7100688139269927},
{-1.3276354541110231, 0.47043658324461546, -0.44783492820878373, 1.2060352580917066, 0.29692720439758985, -0.7062305771171469}});
}

TEST(Optim, SgdMomentumFromBackwardSkipsParamsWithoutGrad) {
  Tensor w = tensor({0.5, -1.0, 2.0}).to(kFloat);
  Tensor b = tensor({0.25}).to(kFloat);
  Tensor unused = tensor({3.0, 4.0}).to(kFloat);
  w.requires_grad_();
  b.requires_grad_();
  unused.requires_grad_();
  Tensor x = tensor({1.0, 2.0, -3.0}).to(kFloat);
  optim::SGD opt({w, b, unused}, {.lr = 0.1, .momentum = 0.9});
  const std::vector<std::vector<double>> ew = {{1.9500000476837158, 1.9000000953674316, -2.3500001430511475},
                                               {0.35499995946884155, -1.290000081062317, 2.43500018119812},
                                               {0.804500162601471, -0.3909997045993805, 1.0864996910095215}};
  const std::vector<double> eb = {1.7000000476837158, 0.10499994456768036, 0.5545001029968262};
  for (size_t k = 0; k < 3; ++k) {
    opt.zero_grad();
    Tensor loss = ((w * x).sum() + b).pow(2).sum();
    loss.backward();
    opt.step();
    expect_close(w, ew[k], kFloat);
    expect_close(b, {eb[k]}, kFloat);
    expect_close(unused, {3.0, 4.0}, kFloat);
  }
  expect_close(opt.state(0).momentum_buffer, {-4.495001792907715, -8.99000358581543, 13.485004425048828}, kFloat);
  EXPECT_FALSE(opt.state(2).momentum_buffer.defined());
  EXPECT_FALSE(unused.grad().defined());
}

TEST(Optim, AdamWFromBackwardWithZeroFilledGrads) {
  Tensor w = tensor({0.5, -1.0, 2.0}).to(kFloat);
  w.requires_grad_();
  Tensor x = tensor({1.0, 2.0, -3.0}).to(kFloat);
  optim::AdamW opt({w}, {.lr = 0.1});
  const std::vector<std::vector<double>> ew = {{0.3995000123977661, -0.8990000486373901, 2.0980000495910645},
                                               {0.3002978563308716, -0.7985190749168396, 2.195997953414917},
                                               {0.20371240377426147, -0.6989112496376038, 2.294053316116333}};
  for (size_t k = 0; k < 3; ++k) {
    opt.zero_grad(/*set_to_none=*/false);
    if (k > 0) expect_close(w.grad(), {0.0, 0.0, 0.0}, kFloat);
    Tensor loss = (w * w * x).sum();
    loss.backward();
    opt.step();
    expect_close(w, ew[k], kFloat);
  }
  EXPECT_EQ(opt.state(0).step.item<double>(), 3.0);
  EXPECT_EQ(opt.state(0).step.dtype(), kFloat);
  expect_close(opt.state(0).exp_avg, {0.212969571352005, -0.9670476317405701, -3.4225189685821533}, kFloat);
  expect_close(opt.state(0).exp_avg_sq, {0.001996478997170925, 0.039088428020477295, 0.47561806440353394}, kFloat);
  EXPECT_FALSE(opt.state(0).max_exp_avg_sq.defined());
}

TEST(Optim, ZeroGradSetToNoneClearsGrad) {
  Tensor p = tensor({1.0, 2.0}).to(kFloat);
  p.requires_grad_();
  p.mutable_grad() = tensor({0.5, 0.5}).to(kFloat);
  optim::SGD opt({p}, {.lr = 0.1});
  opt.zero_grad();
  EXPECT_FALSE(p.grad().defined());
  opt.step();  // no grad: nothing changes
  expect_close(p, {1.0, 2.0}, kFloat);
}

TEST(Optim, AdamWStateStartsAtFirstStep) {
  Tensor p = tensor({1.0, 2.0}).to(kDouble);
  p.requires_grad_();
  optim::AdamW opt({p}, {.amsgrad = true});
  EXPECT_FALSE(opt.state(0).step.defined());
  EXPECT_FALSE(opt.state(0).exp_avg.defined());
  opt.step();
  EXPECT_FALSE(opt.state(0).step.defined());
  p.mutable_grad() = tensor({1.0, -1.0}).to(kDouble);
  opt.step();
  EXPECT_EQ(opt.state(0).step.item<double>(), 1.0);
  EXPECT_TRUE(opt.state(0).max_exp_avg_sq.defined());
  EXPECT_EQ(opt.state(0).exp_avg.dtype(), kDouble);
}

TEST(OptimErrors, InvalidHyperparameters) {
  Tensor p = tensor({1.0}).to(kFloat);
  p.requires_grad_();
  auto has = [](const std::string& what, const std::string& msg) {
    EXPECT_NE(what.find(msg), std::string::npos) << what;
  };
  has(error_of([&] { optim::SGD({p}, {.lr = -1.0}); }), "Invalid learning rate: -1.0");
  has(error_of([&] { optim::SGD({p}, {.lr = 0.1, .momentum = -0.5}); }), "Invalid momentum value: -0.5");
  has(error_of([&] { optim::SGD({p}, {.lr = 0.1, .weight_decay = -1e-05}); }), "Invalid weight_decay value: -1e-05");
  has(error_of([&] { optim::SGD({p}, {.lr = 0.1, .nesterov = true}); }),
      "Nesterov momentum requires a momentum and zero dampening");
  has(error_of([&] { optim::SGD({p}, {.lr = 0.1, .momentum = 0.9, .dampening = 0.1, .nesterov = true}); }),
      "Nesterov momentum requires a momentum and zero dampening");
  has(error_of([&] { optim::AdamW({p}, {.lr = -0.001}); }), "Invalid learning rate: -0.001");
  has(error_of([&] { optim::AdamW({p}, {.eps = -1e-08}); }), "Invalid epsilon value: -1e-08");
  has(error_of([&] { optim::AdamW({p}, {.betas = {1.0, 0.999}}); }), "Invalid beta parameter at index 0: 1.0");
  has(error_of([&] { optim::AdamW({p}, {.betas = {0.9, -2.5}}); }), "Invalid beta parameter at index 1: -2.5");
  has(error_of([&] { optim::AdamW({p}, {.weight_decay = -100.0}); }), "Invalid weight_decay value: -100.0");
}

TEST(OptimErrors, CapturableNeedsCudaParameters) {
  // As PyTorch's AdamW: capturable keeps the step count on the parameters' device for CUDA
  // graphs, and a CPU parameter has no such device.
  Tensor p = tensor({1.0, 2.0}).to(kFloat);
  p.requires_grad_();
  p.mutable_grad() = tensor({0.5, -0.5}).to(kFloat);
  optim::AdamW opt({p}, {.capturable = true});
  EXPECT_NE(error_of([&] { opt.step(); }).find("If capturable=True, params and state_steps must be CUDA tensors."),
            std::string::npos);
  expect_close(p, {1.0, 2.0}, kFloat);
}

TEST(OptimErrors, BadParameterLists) {
  EXPECT_NE(error_of([] { optim::SGD({}, {.lr = 0.1}); }).find("optimizer got an empty parameter list"),
            std::string::npos);
  Tensor p = tensor({1.0}).to(kFloat);
  p.requires_grad_();
  Tensor q = p * 2.0;
  EXPECT_NE(error_of([&] { optim::AdamW({q}); }).find("can't optimize a non-leaf Tensor"), std::string::npos);
}

}  // namespace
}  // namespace ember
