// softmax/log_softmax, layer norm, batch norm, embedding and constant_pad_nd. Expected
// values come from PyTorch 1.13 on the same (arange/sin-based) inputs.
#include <gtest/gtest.h>

#include <cmath>

#include "ember/ember.h"

namespace ember {
namespace {

void expect_close(const Tensor& t, const std::vector<double>& expected, double rtol = 1.3e-6, double atol = 1e-5) {
  std::vector<double> got = t.to_vector<double>();
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(expected[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << "at flat index " << i << ": " << got[i];
    } else if (std::isinf(expected[i])) {
      EXPECT_EQ(got[i], expected[i]) << "at flat index " << i;
    } else {
      EXPECT_NEAR(got[i], expected[i], atol + rtol * std::fabs(expected[i])) << "at flat index " << i;
    }
  }
}

Tensor ar(int64_t n, ScalarType dt = kFloat) { return arange(n, dt); }
Tensor x34() { return ar(12).view({3, 4}) * 0.7 - 3; }

// --- softmax ---------------------------------------------------------------------------------

TEST(Softmax, LastDimMatchesTorch) {
  Tensor r = softmax(x34(), 1);
  EXPECT_EQ(r.sizes(), IntArrayRef({3, 4}));
  expect_close(r, {0.06563780456781387, 0.13217830657958984, 0.26617443561553955, 0.5360094308853149,
                   0.06563780456781387, 0.13217832148075104, 0.2661743760108948, 0.5360095500946045,
                   0.06563780456781387, 0.13217829167842865, 0.26617446541786194, 0.5360094308853149});
}

TEST(Softmax, InnerDimMatchesTorch) {
  expect_close(softmax(x34(), 0), {0.0034737777896225452, 0.003473779419437051, 0.0034737777896225452,
                                   0.0034737777896225452, 0.05712504684925079, 0.05712506175041199,
                                   0.0571250319480896, 0.05712506175041199, 0.9394011497497559, 0.9394011497497559,
                                   0.9394011497497559, 0.9394011497497559});
}

TEST(Softmax, MiddleDimWithVectorAndTailColumns) {
  Tensor y = sin(ar(60)).view({2, 3, 10}) * 3;
  expect_close(
      softmax(y, 1),
      {0.060007836669683456, 0.5026019215583801,    0.9287534356117249,    0.2974890172481537,  0.005242981016635895,
       0.0072540887631475925, 0.04039467126131058,  0.2887761890888214,    0.891851007938385,   0.6688961982727051,
       0.01173307467252016,  0.0020045405253767967, 0.012136678211390972,  0.6871265769004822,  0.9914016127586365,
       0.9061474204063416,   0.0393790639936924,    0.0022490317933261395, 0.004817536566406488, 0.3045712411403656,
       0.9282591342926025,   0.4953935146331787,    0.05910983309149742,   0.015384436585009098, 0.0033553701359778643,
       0.08659854531288147,  0.9202262759208679,    0.7089747786521912,    0.10333144664764404, 0.026532532647252083,
       0.005235896445810795, 0.03547811508178711,   0.2126690298318863,    0.8565745949745178,  0.7975178956985474,
       0.021018067374825478, 0.003352848580107093,  0.02739841490983963,   0.10962525010108948, 0.725665271282196,
       0.9485859274864197,   0.07408113777637482,   0.002600990468636155,  0.0035179604310542345, 0.1719772070646286,
       0.9751983880996704,   0.9829045534133911,    0.2736414670944214,    0.004496047273278236, 0.002303533721715212,
       0.04617823287844658,  0.8904407620429993,    0.7847299575805664,    0.13990746438503265, 0.030504947528243065,
       0.0037835577968508005, 0.013742510229349136, 0.6989601254463196,    0.8858787417411804,  0.27203112840652466});
}

TEST(Softmax, RowWithVectorBodyAndScalarTail) {
  Tensor z = sin(ar(22)) * 4;
  expect_close(softmax(z, 0),
               {0.0035422423388808966, 0.10258007794618607, 0.13455183804035187, 0.006229151040315628,
                0.00017162390577141196, 7.64638461987488e-05, 0.0011584674939513206, 0.049043431878089905,
                0.18534018099308014, 0.018416259437799454, 0.00040199141949415207, 6.488096551038325e-05,
                0.0004141480603720993, 0.019018802791833878, 0.18626855313777924, 0.047746770083904266,
                0.001119796303100884, 7.571112655568868e-05, 0.0001756628480507061, 0.006451216526329517,
                0.13652954995632172, 0.10062316060066223});
  expect_close(log_softmax(z, 0),
               {-5.642995357513428, -2.277111530303955, -2.005805730819702, -5.07851505279541, -8.670205116271973,
                -9.478693008422852, -6.76065731048584, -3.0150489807128906, -1.6855623722076416, -3.994521379470825,
                -7.819079875946045, -9.642955780029297, -7.789287090301514, -3.962327241897583, -1.6805658340454102,
                -3.041843891143799, -6.7946085929870605, -9.488585472106934, -8.646944046020508, -5.043486595153809,
                -1.9912142753601074, -2.296372890472412});
}

TEST(Softmax, MinusInfinityRowsGiveNanLikeTorch) {
  const double inf = INFINITY;
  Tensor m = tensor<float>({-INFINITY, -INFINITY, -INFINITY, 1, -INFINITY, 2}, {2, 3});
  expect_close(softmax(m, 1), {NAN, NAN, NAN, 0.2689414322376251, 0.0, 0.7310585975646973});
  expect_close(log_softmax(m, 1), {NAN, NAN, NAN, -1.31326162815094, -inf, -0.31326165795326233});
}

TEST(Softmax, LargeLogitsDoNotOverflow) {
  expect_close(softmax(tensor<float>({1000, 1001, 999}), 0),
               {0.2447284758090973, 0.6652409434318542, 0.09003057330846786});
}

TEST(Softmax, DtypeArgumentConvertsFirst) {
  Tensor r = softmax(ar(3, kInt64), 0, kDouble);
  EXPECT_EQ(r.dtype(), kDouble);
  expect_close(r, {0.09003057317038045, 0.2447284710547976, 0.6652409557748218}, 1e-7, 1e-7);
}

TEST(Softmax, DoubleAndBFloat16) {
  expect_close(softmax(x34().to(kDouble), 1),
               {0.06563780799651524, 0.13217831986816314, 0.2661744304651327, 0.5360094416701888, 0.06563780169107485,
                0.13217830717056486, 0.2661743731648518, 0.5360095179735085, 0.06563780798229132, 0.13217828832575626,
                0.2661744621379185, 0.536009441554034},
               1e-7, 1e-7);
  Tensor bf = softmax(x34().to(kBFloat16), 1);
  EXPECT_EQ(bf.dtype(), kBFloat16);
  expect_close(bf,
               {0.0654296875, 0.1328125, 0.265625, 0.53515625, 0.0654296875, 0.1318359375, 0.267578125, 0.53515625,
                0.06591796875, 0.1328125, 0.267578125, 0.53515625},
               1.6e-2, 1e-5);
}

TEST(Softmax, HalfComputesInFloatAndRoundsOnce) {
  // PyTorch 1.13 has no CPU half softmax; the reference is the float result on the same
  // half-rounded inputs, rounded to half.
  Tensor xh = x34().to(kHalf);
  Tensor r = softmax(xh, 1);
  EXPECT_EQ(r.dtype(), kHalf);
  expect_close(r, softmax(xh.to(kFloat), 1).to(kHalf).to_vector<double>(), 0, 0);
  Tensor ln = layer_norm(xh, {4});
  EXPECT_EQ(ln.dtype(), kHalf);
  expect_close(ln, layer_norm(xh.to(kFloat), {4}).to(kHalf).to_vector<double>(), 0, 0);
}

TEST(Softmax, NonContiguousInputGivesContiguousOutput) {
  Tensor r = softmax(x34().t(), 1);
  EXPECT_TRUE(r.is_contiguous());
  expect_close(r, {0.0034737777896225452, 0.05712504684925079, 0.9394011497497559, 0.003473779419437051,
                   0.05712506175041199, 0.9394011497497559, 0.0034737777896225452, 0.0571250319480896,
                   0.9394011497497559, 0.0034737777896225452, 0.05712506175041199, 0.9394011497497559});
}

TEST(Softmax, ZeroDimAndEmpty) {
  Tensor r = softmax(scalar_tensor(2.0), 0);
  EXPECT_EQ(r.dim(), 0);
  expect_close(r, {1.0});
  EXPECT_EQ(softmax(ones({0, 4}), 1).sizes(), IntArrayRef({0, 4}));
  EXPECT_EQ(softmax(empty({2, 5}, kMeta), -1).sizes(), IntArrayRef({2, 5}));
}

TEST(Softmax, WideRowsSumToOneAndAgreeWithLogSoftmax) {
  // The W2 shape's rows, fewer of them: each row sums to 1 and log_softmax = log(softmax).
  Tensor x = sin(ar(64 * 1024).view({64, 1024}) * 0.37) * 20;
  Tensor s = softmax(x, -1), l = log_softmax(x, -1);
  std::vector<float> sv = s.to_vector<float>(), lv = l.to_vector<float>();
  for (int64_t r = 0; r < 64; ++r) {
    double sum = 0;
    for (int64_t j = 0; j < 1024; ++j) {
      sum += sv[r * 1024 + j];
      ASSERT_NEAR(std::log(static_cast<double>(sv[r * 1024 + j])), lv[r * 1024 + j], 1e-4);
    }
    EXPECT_NEAR(sum, 1.0, 1e-5) << "row " << r;
  }
}

TEST(LogSoftmax, MatchesTorchOnBothDims) {
  expect_close(log_softmax(x34(), 1),
               {-2.7236032485961914, -2.0236034393310547, -1.3236033916473389, -0.6236034631729126, -2.7236034870147705,
                -2.0236034393310547, -1.323603630065918, -0.623603343963623, -2.7236032485961914, -2.0236034393310547,
                -1.3236032724380493, -0.6236034631729126});
  expect_close(log_softmax(x34(), 0),
               {-5.66251277923584, -5.662512302398682, -5.66251277923584, -5.66251277923584, -2.8625125885009766,
                -2.8625123500823975, -2.8625128269195557, -2.8625123500823975, -0.06251268088817596,
                -0.06251268088817596, -0.06251268088817596, -0.06251268088817596});
  expect_close(_log_softmax(x34().to(kDouble), 0, false),
               {-5.662512559081638, -5.6625123351109465, -5.66251266425715, -5.662512572701312, -2.8625126067653537,
                -2.862512382794662, -2.862512831150155, -2.862512381966449, -0.06251265444906964, -0.06251266889695693,
                -0.06251264041529193, -0.06251266806874362},
               1e-7, 1e-7);
}

// --- layer norm ------------------------------------------------------------------------------

Tensor ln_input() { return ar(24).view({2, 3, 4}) * 0.5 + sin(ar(24)).view({2, 3, 4}); }

TEST(LayerNorm, NativeReturnsOutputMeanRstdWithKeptDims) {
  Tensor w = ar(12).view({3, 4}) / 10 + 0.5, b = ar(12).view({3, 4}) / 5 - 1;
  auto [out, mean, rstd] = native_layer_norm(ln_input(), {3, 4}, w, b, 1e-5);
  EXPECT_EQ(mean.sizes(), IntArrayRef({2, 1, 1}));
  EXPECT_EQ(rstd.sizes(), IntArrayRef({2, 1, 1}));
  expect_close(out, {-1.8414833545684814, -1.3232640027999878, -0.9702163338661194, -0.9527855515480042,
                     -1.0383577346801758, -0.7514543533325195, 0.1576574295759201,  1.3956984281539917,
                     2.332744836807251,   2.6006693840026855,  2.515714406967163,   2.8593454360961914,
                     -1.9284770488739014, -1.4273457527160645, -0.9145520925521851, -0.6883367896080017,
                     -0.744036853313446,  -0.7011187076568604, -0.13597603142261505, 0.9697882533073425,
                     2.1318280696868896,  2.780059814453125,   2.832831382751465,   2.8543667793273926});
  expect_close(mean, {2.784266948699951, 8.797384262084961});
  expect_close(rstd, {0.6044559478759766, 0.5569819808006287});
}

TEST(LayerNorm, NonContiguousInputWithoutAffine) {
  auto [out, mean, rstd] = native_layer_norm(ln_input().transpose(0, 2), {2}, std::nullopt, std::nullopt, 1e-5);
  EXPECT_EQ(mean.sizes(), IntArrayRef({4, 3, 1}));
  expect_close(mean, {2.7317135334014893, 4.477646827697754, 7.9511518478393555, 4.130819320678711, 4.539838790893555,
                      8.12438678741455, 4.949952125549316, 5.484798431396484, 7.723564147949219, 4.8957037925720215,
                      6.9034318923950195, 7.576894760131836});
  expect_close(rstd, {0.36607033014297485, 0.3091714382171631, 0.3376331329345703, 0.3585065007209778,
                      0.3334706127643585, 0.31130629777908325, 0.3288763463497162, 0.3617662191390991,
                      0.3060362637042999, 0.30725881457328796, 0.3641067445278168, 0.32500383257865906});
  std::vector<float> o = out.to_vector<float>();
  for (size_t i = 0; i < o.size(); ++i) EXPECT_NEAR(o[i], i % 2 ? 1.0 : -1.0, 1e-5);
}

TEST(LayerNorm, BFloat16AndDoubleWithBiasOnly) {
  Tensor w = ar(12).view({3, 4}) / 10 + 0.5, b = ar(12).view({3, 4}) / 5 - 1;
  // Expected: PyTorch's float layer_norm of the bfloat16 input, rounded to bfloat16 (what
  // PyTorch 2 computes). PyTorch 1.13 rounds the row mean to bfloat16 before normalizing,
  // which on rows like [10.9, 11.3, 11.0, 10.6] moves outputs by up to 0.08.
  Tensor bf = layer_norm(ln_input().to(kBFloat16), {4}, w[0].to(kBFloat16), b[0].to(kBFloat16));
  EXPECT_EQ(bf.dtype(), kBFloat16);
  expect_close(bf,
               {-1.8359375, -0.703125,  0.050048828125, 0.055908203125, -1.5078125, -1.2578125,    -0.416015625,
                0.81640625, -0.40625,   -0.32421875,    -1.3359375,     -1.140625,  -1.7734375,    -0.92578125,
                -0.0283203125, 0.349609375, -1.34375,   -1.3515625,     -0.62890625, 0.9140625,    -1.0625,
                0.04638671875, -0.51171875, -1.53125},
               1.6e-2, 1e-5);
  Tensor d = layer_norm(ln_input().to(kDouble), {4}, std::nullopt, b[0].to(kDouble), 1e-3);
  expect_close(d,
               {-2.6644110881828853, -0.6387282868307573, 0.33405853946784436, 0.16908082362486987, -2.0214119340958083,
                -1.5618658768697808, -0.3341412154191275, 1.1174190144637879, 0.1432244954219961, 0.022114727321082106,
                -1.6741939700455497, -1.291145264618454, -2.5539312950460804, -0.9965647023422728, 0.20085418158919777,
                0.5496418038782266, -1.69339883230557, -1.7025082255004786, -0.6462640462629863, 1.2421710921481037,
                -1.246688540893828, 0.6756518373659204, -0.5287968153361093, -1.7001664930569034},
               1e-6, 1e-6);  // the input itself was made in float32
}

TEST(LayerNorm, WideRowsAreNormalized) {
  // The W3 shape's rows, fewer of them: mean 0 and variance 1 after normalization.
  Tensor x = sin(ar(32 * 1024).view({32, 1024}) * 0.11) * 3 + 100;
  auto [out, mean, rstd] = native_layer_norm(x, {1024}, std::nullopt, std::nullopt, 1e-5);
  std::vector<float> o = out.to_vector<float>();
  for (int64_t r = 0; r < 32; ++r) {
    double s = 0, ss = 0;
    for (int64_t j = 0; j < 1024; ++j) s += o[r * 1024 + j];
    for (int64_t j = 0; j < 1024; ++j) ss += (o[r * 1024 + j] - s / 1024) * (o[r * 1024 + j] - s / 1024);
    EXPECT_NEAR(s / 1024, 0.0, 1e-4) << "row " << r;
    EXPECT_NEAR(ss / 1024, 1.0, 1e-3) << "row " << r;
  }
}

TEST(LayerNorm, EmptyAndMeta) {
  auto [out, mean, rstd] = native_layer_norm(ones({0, 3}), {3}, std::nullopt, std::nullopt, 1e-5);
  EXPECT_EQ(out.sizes(), IntArrayRef({0, 3}));
  EXPECT_EQ(mean.sizes(), IntArrayRef({0, 1}));
  auto [mo, mm, mr] = native_layer_norm(empty({5, 2, 3}, kMeta), {2, 3}, empty({2, 3}, kMeta), std::nullopt, 1e-5);
  EXPECT_TRUE(mo.is_meta());
  EXPECT_EQ(mm.sizes(), IntArrayRef({5, 1, 1}));
  EXPECT_EQ(mr.sizes(), IntArrayRef({5, 1, 1}));
}

// --- batch norm ------------------------------------------------------------------------------

Tensor bn_input() { return ar(24).view({2, 3, 4}) * 0.3 + cos(ar(24)).view({2, 3, 4}); }

TEST(BatchNorm, TrainingUsesBatchStatsAndUpdatesRunningStatsInPlace) {
  Tensor rm = tensor<float>({0.5, -0.5, 1}), rv = tensor<float>({1, 2, 0.5});
  const uint64_t vm = rm._version(), vv = rv._version();
  auto [out, save_mean, save_invstd] =
      native_batch_norm(bn_input(), tensor<float>({1, 2, 3}), tensor<float>({0, 1, -1}), rm, rv, true, 0.1, 1e-5);
  expect_close(out, {-0.7148919701576233, -0.7959868907928467, -1.1293336153030396, -1.2683931589126587,
                     -2.173720598220825,  -0.9165934920310974, 0.07555827498435974, 0.17079171538352966,
                     -4.099451541900635,  -4.839540004730225,  -4.248177528381348,  -2.430664300918579,
                     1.0339068174362183,  1.2185401916503906,  0.9795126914978027,  0.6766461730003357,
                     1.1750646829605103,  2.1733005046844482,  3.428572654724121,   4.0670270919799805,
                     2.5023903846740723,  1.46002197265625,    1.2180606126785278,  2.4373586177825928});
  expect_close(save_mean, {2.4078142642974854, 3.6700363159179688, 4.204535484313965});
  expect_close(save_invstd, {0.5078027844429016, 0.5080099105834961, 0.5298111438751221});
  expect_close(rm, {0.6907814145088196, -0.08299633860588074, 1.3204535245895386});
  expect_close(rv, {1.343200922012329, 2.2428395748138428, 0.8571444749832153});
  EXPECT_GT(rm._version(), vm);
  EXPECT_GT(rv._version(), vv);
}

TEST(BatchNorm, UpdateStatsGivesTrainingsMeanAndBiasedVarianceAndUpdatesRunningStatsAlike) {
  // batch_norm_update_stats is native_batch_norm's statistics in one pass: the same mean
  // (bit for bit) and running stats, the variance that save_invstd is 1/sqrt(var + eps) of.
  // A large offset checks that the one pass does not cancel.
  for (const double offset : {0.0, 1000.0}) {
    const Tensor x = randn({5, 3, 7, 9}) * 0.5 + offset;
    Tensor rm = tensor<float>({0.5, -0.5, 1}), rv = tensor<float>({1, 2, 0.5});
    Tensor rm2 = rm.clone(), rv2 = rv.clone();
    const uint64_t vm = rm._version();
    auto [out, save_mean, save_invstd] = native_batch_norm(x, std::nullopt, std::nullopt, rm, rv, true, 0.1, 1e-5);
    auto [mean, var] = batch_norm_update_stats(x, rm2, rv2, 0.1);
    EXPECT_EQ(mean.to_vector<float>(), save_mean.to_vector<float>());
    expect_close(rsqrt(var + 1e-5), save_invstd.to_vector<double>(), 4e-7, 0);
    expect_close(var, (x - x.mean({0, 2, 3}, true)).pow(2).mean({0, 2, 3}).to_vector<double>(), 1e-5, 1e-6);
    expect_close(rm2, rm.to_vector<double>(), 0, 0);
    expect_close(rv2, rv.to_vector<double>(), 1e-7, 0);
    EXPECT_GT(rm2._version(), vm);
  }
  // Without running stats, in float64 (PyTorch 2.11's values).
  auto [mean, var] = batch_norm_update_stats(bn_input().to(kDouble), std::nullopt, std::nullopt, 0.1);
  EXPECT_EQ(mean.dtype(), kDouble);
  expect_close(mean, {2.407814260572195, 3.670036420226097, 4.2045354545116425}, 1e-14, 1e-14);
  expect_close(var, {3.8780085031583873, 3.8748462608629004, 3.56251412290367}, 1e-14, 1e-14);
}

TEST(BatchNorm, EvalUsesRunningStatsAndReturnsEmptySaves) {
  Tensor rm = tensor<float>({0.6907814145088196, -0.08299633860588074, 1.3204535245895386});
  Tensor rv = tensor<float>({1.343200922012329, 2.2428395748138428, 0.8571444749832153});
  auto [out, save_mean, save_invstd] = native_batch_norm(bn_input(), std::nullopt, std::nullopt, rm, rv, false, 0.1, 1e-5);
  EXPECT_EQ(save_mean.sizes(), IntArrayRef({0}));
  EXPECT_EQ(save_invstd.sizes(), IntArrayRef({0}));
  expect_close(out, {0.26680469512939453, 0.12901192903518677, -0.4373955726623535, -0.6736792922019958,
                     0.42023682594299316, 1.246421217918396,   1.8984636068344116,  1.961051106452942,
                     1.0088788270950317,  0.505944013595581,   0.9078105688095093,  2.142920732498169,
                     3.238283634185791,   3.552004337310791,   3.145859718322754,   2.6312427520751953,
                     2.6210596561431885,  3.2771005630493164,  4.102065563201904,   4.521658420562744,
                     5.495229721069336,   4.786877155303955,   4.62244987487793,    5.4510369300842285});
  expect_close(rm, {0.6907814145088196, -0.08299633860588074, 1.3204535245895386});  // untouched
}

TEST(BatchNorm, TwoDimInputWithoutRunningStats) {
  auto [out, save_mean, save_invstd] =
      native_batch_norm(ar(6).view({3, 2}) * 1.5, std::nullopt, std::nullopt, std::nullopt, std::nullopt, true, 0.1, 1e-5);
  expect_close(out, {-1.2247438430786133, -1.2247438430786133, 0.0, 0.0, 1.2247438430786133, 1.2247438430786133});
  expect_close(save_mean, {3.0, 4.5});
  expect_close(save_invstd, {0.4082479476928711, 0.4082479476928711});
}

TEST(BatchNorm, BFloat16InputWithFloatParameters) {
  Tensor rm = zeros({3}), rv = ones({3});
  auto [out, save_mean, save_invstd] =
      native_batch_norm(bn_input().to(kBFloat16), ones({3}), zeros({3}), rm, rv, true, 0.1, 1e-5);
  EXPECT_EQ(out.dtype(), kBFloat16);
  EXPECT_EQ(save_mean.dtype(), kFloat);
  expect_close(out,
               {-0.71484375, -0.796875, -1.1328125, -1.265625, -1.5859375, -0.9609375, -0.458984375, -0.412109375,
                -1.03125, -1.28125, -1.0859375, -0.478515625, 1.03125, 1.21875, 0.984375, 0.671875, 0.08837890625,
                0.58203125, 1.21875, 1.53125, 1.1640625, 0.8203125, 0.73828125, 1.1484375},
               1.6e-2, 1e-2);
  expect_close(save_mean, {2.40771484375, 3.669921875, 4.2021484375});
  expect_close(rm, {0.24077148735523224, 0.36699220538139343, 0.42021486163139343});
  expect_close(rv, {1.3433667421340942, 1.3423022031784058, 1.3078689575195312}, 1e-5, 1e-5);
}

TEST(BatchNorm, CompositeReturnsOutputAndMetaShapes) {
  Tensor rm = zeros({3}), rv = ones({3});
  Tensor out = batch_norm(bn_input(), std::nullopt, std::nullopt, rm, rv, false);
  auto [o, m, s] = native_batch_norm(bn_input(), std::nullopt, std::nullopt, rm, rv, false, 0.1, 1e-5);
  expect_close(out, o.to_vector<double>(), 0, 0);
  auto [mo, mm, ms] = native_batch_norm(empty({4, 5, 6, 7}, kMeta), std::nullopt, std::nullopt, empty({5}, kMeta),
                                        empty({5}, kMeta), true, 0.1, 1e-5);
  EXPECT_EQ(mo.sizes(), IntArrayRef({4, 5, 6, 7}));
  EXPECT_EQ(mm.sizes(), IntArrayRef({5}));
  EXPECT_EQ(ms.sizes(), IntArrayRef({5}));
}

// --- embedding / padding ------------------------------------------------------------------------

TEST(BatchNorm, EmptyBatchLeavesRunningStatsAlone) {
  Tensor rm = tensor<float>({0.5, -0.5}), rv = tensor<float>({1, 2});
  auto [out, save_mean, save_invstd] = native_batch_norm(ones({0, 2, 3}), std::nullopt, std::nullopt, rm, rv, true, 0.1, 1e-5);
  EXPECT_EQ(out.sizes(), IntArrayRef({0, 2, 3}));
  EXPECT_EQ(save_mean.sizes(), IntArrayRef({2}));
  expect_close(rm, {0.5, -0.5});
  expect_close(rv, {1, 2});
}

TEST(Embedding, EmptyIndicesGiveEmptyRows) {
  EXPECT_EQ(embedding(ones({5, 3}), empty({0}, kInt64)).sizes(), IntArrayRef({0, 3}));
  EXPECT_EQ(embedding(empty({5, 3}, kMeta), empty({2, 4}, TensorOptions(kInt32).device(kMeta))).sizes(),
            IntArrayRef({2, 4, 3}));
}

TEST(Embedding, GathersRowsForAnyIndexShape) {
  Tensor w = ar(15).view({5, 3});
  Tensor r = embedding(w, tensor<int64_t>({4, 0, 2, 2}, {2, 2}));
  EXPECT_EQ(r.sizes(), IntArrayRef({2, 2, 3}));
  expect_close(r, {12, 13, 14, 0, 1, 2, 6, 7, 8, 6, 7, 8});
  Tensor s = embedding(w.t().contiguous().t(), tensor<int64_t>({1, 3}, {}, kInt32));
  expect_close(s, {3, 4, 5, 9, 10, 11});
  EXPECT_EQ(embedding(w, scalar_tensor(1, kInt64)).sizes(), IntArrayRef({3}));
}

TEST(ConstantPadNd, PadsLastDimsWithValue) {
  Tensor r = constant_pad_nd(ar(6).view({2, 3}), {1, 2}, -1.0);
  EXPECT_EQ(r.sizes(), IntArrayRef({2, 6}));
  expect_close(r, {-1, 0, 1, 2, -1, -1, -1, 3, 4, 5, -1, -1});
}

TEST(ConstantPadNd, NegativePadsCrop) {
  Tensor r = constant_pad_nd(ar(6).view({2, 3}), {-1, 1, 1, 0});
  EXPECT_EQ(r.sizes(), IntArrayRef({3, 3}));
  expect_close(r, {0, 0, 0, 1, 2, 0, 4, 5, 0});
  EXPECT_EQ(constant_pad_nd(ones({2, 3}), {-2, -1}).sizes(), IntArrayRef({2, 0}));
}

TEST(ConstantPadNd, NonContiguousIntegerAndBool) {
  expect_close(constant_pad_nd(ar(6).view({2, 3}).t(), {0, 1}, 7), {0, 3, 7, 1, 4, 7, 2, 5, 7});
  Tensor i = constant_pad_nd(ar(3, kInt64), {1, 1}, 2.5);
  EXPECT_EQ(i.dtype(), kInt64);
  EXPECT_EQ(i.to_vector<int64_t>(), (std::vector<int64_t>{2, 0, 1, 2, 2}));
  Tensor b = constant_pad_nd(tensor<bool>({true, false}), {1, 0}, 2.5);
  EXPECT_EQ(b.to_vector<bool>(), (std::vector<bool>{true, true, false}));
}

TEST(ConstantPadNd, ThreeDimsZeroDimAndMeta) {
  EXPECT_EQ(constant_pad_nd(ones({2, 3, 4}), {1, 1, 2, 2, 3, 3}).sizes(), IntArrayRef({8, 7, 6}));
  expect_close(constant_pad_nd(scalar_tensor(1.0), {}), {1.0});
  EXPECT_EQ(constant_pad_nd(empty({2, 3}, kMeta), {1, 1, 1, 1}).sizes(), IntArrayRef({4, 5}));
}

}  // namespace
}  // namespace ember
