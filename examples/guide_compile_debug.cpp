// examples/guide_compile_debug.cpp — the troubleshooting guide's TORCH_COMPILE_DEBUG example:
// Linear(10, 10) -> LayerNorm(10) -> ReLU on ones(10, 10), compiled with "inductor" and the
// trace directory on. Usage: guide_compile_debug [DIR] (default: the current directory);
// prints every file written under DIR/torch_compile_debug/.
#include <ember/ember.h>

#include <filesystem>
#include <iostream>
using namespace ember;

int main(int argc, char** argv) {
  config().inductor.trace.enabled = true;  // TORCH_COMPILE_DEBUG=1
  if (argc > 1) config().inductor.trace.debug_dir = argv[1];  // TORCH_COMPILE_DEBUG_DIR

  nn::Sequential model;
  model.push_back(std::make_shared<nn::Linear>(10, 10));
  model.push_back(std::make_shared<nn::LayerNorm>(std::vector<int64_t>{10}));
  model.push_back(std::make_shared<nn::ReLU>());
  auto compiled = compile([](nn::Sequential& m, const Tensor& x) { return m.forward(x); },
                          {.backend = "inductor", .name = "model"});
  NoGradGuard no_grad;  // inference: the compiled kernels run (no autograd history needed)
  Tensor y = compiled(model, ones({10, 10}));
  std::cout << "output sum: " << y.sum().item<double>() << "\n";

  const std::filesystem::path root =
      std::filesystem::path(argc > 1 ? argv[1] : std::filesystem::current_path()) / "torch_compile_debug";
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::recursive_directory_iterator(root))
    if (e.is_regular_file()) files.push_back(std::filesystem::relative(e.path(), root).string());
  std::sort(files.begin(), files.end());
  for (const std::string& f : files) std::cout << f << "\n";
}
