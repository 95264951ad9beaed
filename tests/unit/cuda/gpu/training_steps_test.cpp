// GPU tests of whole training steps compiled for cuda:0: the workloads W8 (the GPT-2 block
// with AdamW) and W9 (the BasicBlock in training mode with SGD and momentum) at small
// sizes, bench/training_workloads.h's rows on the GPU. The forward and loss compile through
// AOT autograd, backward runs the compiled backward graph, and the optimizer's step
// compiles as a function of its own; after each of two steps the compiled copy's loss,
// gradients, parameters and running stats equal the eager copy's, and no graph of the
// steps ran in the interpreter (each compiled to CUDA kernels and extern calls).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../../../../bench/compare.h"
#include "../../../../bench/training_workloads.h"
#include "ember/compile.h"
#include "gpu_helpers.h"
#include "support/logging.h"

namespace ember::gpu_test {
namespace {

class TrainingStepsCuda : public Gpu {};

/// The inductor's messages about graphs it did not compile: a graph the interpreter ran
/// (mixed devices, an unsupported op) or one run eagerly.
class NotCompiledLog {
 public:
  NotCompiledLog()
      : sink_(
            [this](const logging::Record& r) {
              const std::string m(r.message);
              if (m.find("interpreter") != std::string::npos || m.find("running it eagerly") != std::string::npos)
                messages_ += m + "\n";
            },
            "inductor") {}
  const std::string& messages() const { return messages_; }

 private:
  std::string messages_;
  logging::ScopedSink sink_;
};

TEST_F(TrainingStepsCuda, W8AndW9CompiledStepsOnCudaLeaveEagerLossGradientsParametersAndRunningStats) {
  for (const auto& w :
       bench::training_workloads({.gpt_batch = 2, .gpt_seq = 16, .conv_batch = 2, .conv_hw = 8}, kCUDA)) {
    NotCompiledLog not_compiled;
    const bench::CompiledCall compiled = w.compile("inductor");
    for (int step = 0; step < 2; ++step) {
      const std::string at = w.id + " step " + std::to_string(step) + ": ";
      const Tensor loss_eager = w.run();
      const Tensor loss = compiled.call();
      ASSERT_TRUE(loss.is_cuda()) << at;
      ASSERT_TRUE(loss.grad_fn()) << at;
      EXPECT_EQ(loss.grad_fn()->name(), "CompiledFunctionBackward") << at;
      // The tolerances of bench_inductor_workloads after one step (bench/compare.h), doubled
      // at the second step, which starts from the first step's differences.
      std::vector<bench::CheckedTensors> expected = bench::results_of(w, loss_eager, w.state);
      const std::vector<bench::CheckedTensors> got = bench::results_of(w, loss, compiled.state);
      ASSERT_EQ(got.size(), 4u) << at << "loss, gradients, parameters, buffers";
      for (bench::CheckedTensors& group : expected) {
        group.atol *= step + 1;
        group.of_max *= step + 1;
      }
      std::string failed;
      const bench::Diff diff = bench::compare_groups(got, expected, &failed);
      EXPECT_TRUE(diff.close) << at << "not within tolerance: " << failed << " (max |diff| " << diff.max_abs << ")";
      for (const bench::CheckedTensors& group : got)
        for (const Tensor& t : group.tensors) {
          if (t.defined()) {
            EXPECT_TRUE(t.is_cuda()) << at << group.what;
          }
        }
    }
    EXPECT_EQ(not_compiled.messages(), "") << w.id << ": every graph of the step compiles for cuda:0";
    EXPECT_EQ(w.state()[2].tensors.empty(), w.id == "W8") << "W9's batch norms have running stats, W8 has no buffers";
  }
}

}  // namespace
}  // namespace ember::gpu_test
