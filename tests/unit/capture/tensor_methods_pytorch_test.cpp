// Tensor's pointwise methods against PyTorch's: every pointwise method of torch.Tensor
// (tests/data/torch_pointwise_methods.txt, written by tests/data/gen_tensor_methods.py from
// PyTorch 1.13) whose op Ember registers must be a method of ember::Tensor too, so a
// pointwise op added to the registry without its row in ember/tensor_methods.def fails here.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <string>

#include "ops/registry.h"
#include "unit/capture/tensor_api.h"

namespace ember {
namespace {

/// The method names ("exp", "exp_") Tensor declares, from the keys ("exp()", "mul(Tensor)").
std::set<std::string> declared_method_names() {
  std::set<std::string> names;
  for (const std::string& k : testing::declared_tensor_api(EMBER_INCLUDE_DIR "/ember/tensor.h"))
    names.insert(k.substr(0, k.find('(')));
  return names;
}

/// Registered op names without the "aten::" prefix and the overload ("add_.Tensor" -> "add_").
std::set<std::string> registered_base_names() {
  std::set<std::string> names;
  for (const ops::OpDef* op : ops::registry().all()) {
    std::string n = op->name.substr(op->name.find("::") + 2);
    names.insert(n.substr(0, n.find('.')));
  }
  return names;
}

std::vector<std::string> pytorch_pointwise_methods() {
  std::ifstream in(EMBER_TEST_DATA_DIR "/torch_pointwise_methods.txt");
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] != '#') out.push_back(line);
  return out;
}

TEST(TensorMethods, EveryPointwiseMethodOfPyTorchThatEmberRegisters) {
  const std::vector<std::string> torch_methods = pytorch_pointwise_methods();
  ASSERT_GT(torch_methods.size(), 100u) << "could not read tests/data/torch_pointwise_methods.txt";
  const std::set<std::string> declared = declared_method_names(), registered = registered_base_names();
  std::string missing;
  int checked = 0;
  for (const std::string& m : torch_methods) {
    if (!registered.count(m)) continue;  // Ember has no such op: nothing to expose
    ++checked;
    if (!declared.count(m)) missing += " " + m;
  }
  EXPECT_TRUE(missing.empty()) << "PyTorch's Tensor has these pointwise methods, Ember registers their ops, and "
                                  "ember::Tensor lacks them (add a row to include/ember/tensor_methods.def):"
                               << missing;
  // The comparison covers the registry's pointwise ops (unary and binary, in place too).
  EXPECT_GT(checked, 80) << "only " << checked << " of PyTorch's pointwise methods name an Ember op";
}

}  // namespace
}  // namespace ember
