// A program exported by PyTorch, run by Ember: the README's "Running a program exported by
// PyTorch". Usage: readme_export MODEL.pt2 (an archive of torch.export.save with one
// user input, e.g. tests/export/programs/mlp.pt2).
#include <ember/ember.h>
#include <ember/export.h>

#include <iostream>
using namespace ember;

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  ExportedProgram program = load_exported(argv[1]);   // torch.export.save's .pt2
  std::cout << program.graph();                        // Core ATen calls, as Ember's graph text
  const TensorMeta& x = program.graph().inputs().back()->meta().at(0);
  Tensor input = randn(x.sizes);
  std::vector<Tensor> eager = program({input});        // the interpreter
  auto compiled = program.compile("inductor");         // or any registered backend
  std::vector<Tensor> fast = compiled({input});
  std::cout << "max difference: " << max((eager[0] - fast[0]).abs()).item<double>() << "\n";
}
