// examples/guide_record_replay.cpp — the guide's execution records: with
// replay_record_enabled (TORCH_COMPILE_REPLAY_RECORD=1) a frame whose capture fails is
// saved — its inputs, the knobs in force, the error and this program's command line — to
// <base_dir>/replay/<fn>_pid<P>_<k>.record.safetensors. ember::replay(FILE) re-runs just
// that frame here; `ember replay FILE` runs this program again so that its first call of
// the function does (exit status 1: it still fails, 0: it no longer does).
//   ./guide_record_replay DIR
//   ember replay DIR/replay/two_halves_pid<P>_0.record.safetensors
#include <ember/ember.h>
#include <unistd.h>

#include <filesystem>
#include <future>
#include <iostream>

using namespace ember;

Tensor two_halves(const Tensor& x) {  // guide_capture_error.cpp's function
  auto first = std::async(std::launch::async, [&] { return sin(x.narrow(0, 0, 5)); });
  Tensor second = cos(x.narrow(0, 5, 5));
  return cat({first.get(), second});
}

int main(int argc, char** argv) {
  config().dynamo.replay_record_enabled = true;
  config().dynamo.base_dir = argc > 1 ? argv[1] : ".";
  auto fn = compile(two_halves, {.backend = "eager", .name = "two_halves"});
  fn(randn({10}));  // capture fails: the record is written, the call runs eagerly
  const std::string mine = "two_halves_pid" + std::to_string(getpid()) + "_";
  for (const auto& e : std::filesystem::directory_iterator(config().dynamo.base_dir + "/replay")) {
    if (!e.path().filename().string().starts_with(mine)) continue;
    std::cout << "record: " << e.path().string() << "\n";
    try {
      replay(e.path().string());  // the same frame, inputs and knobs: the same error
    } catch (const Error& err) {
      std::cout << "replay raised " << error_kind_name(err.kind()) << ": " << err.what() << "\n";
    }
  }
}
