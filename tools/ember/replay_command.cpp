// tools/ember/replay_command.cpp — `ember replay FILE`: re-runs the frame an execution
// record holds (config().dynamo.replay_record_enabled). A C++ function cannot be stored,
// so the record names the program that wrote it (path, working directory, arguments):
// that program runs again with EMBER_REPLAY=FILE, and its first call of the recorded
// function replays the frame, prints "[replay] …" lines and ends (capture/record.h).
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>

#include "command.h"
#include "ember/serialize.h"

namespace ember::tool {
namespace {

std::string meta_value(const std::map<std::string, std::string>& meta, const std::string& key) {
  auto it = meta.find(key);
  return it == meta.end() ? std::string() : it->second;
}

/// Runs `argv` in `cwd` with EMBER_REPLAY=record, copying its output (stdout and stderr) to
/// stdout and into `output`; returns its exit status (128 + signal when killed).
int run_program(const std::vector<std::string>& argv, const std::string& cwd, const std::string& record,
                std::string& output) {
  int fds[2];
  EMBER_CHECK(pipe(fds) == 0) << "cannot create a pipe";
  std::cout.flush();
  const pid_t pid = fork();
  EMBER_CHECK(pid >= 0) << "cannot fork";
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    dup2(fds[1], STDERR_FILENO);
    close(fds[0]);
    close(fds[1]);
    if (!cwd.empty() && chdir(cwd.c_str()) != 0) {
      std::cerr << "ember replay: cannot enter the recorded working directory " << cwd << "\n";
      _exit(127);
    }
    setenv("EMBER_REPLAY", record.c_str(), 1);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    std::cerr << "ember replay: cannot run " << argv[0] << "\n";
    _exit(127);
  }
  close(fds[1]);
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) {
    output.append(buf, static_cast<size_t>(n));
    std::cout.write(buf, n).flush();
  }
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

int run_replay(const Args& args) {
  namespace fs = std::filesystem;
  if (args.size() != 1 || args[0].starts_with("-")) {
    std::cerr << "ember replay: expected FILE, an execution record; `ember help replay` says more\n";
    return 2;
  }
  std::error_code ec;
  const std::string path = fs::absolute(fs::path(args[0]), ec).lexically_normal().string();
  if (!fs::is_regular_file(path)) {
    std::cerr << "ember replay: " << args[0] << ": no such file (expected an execution record, "
              << "<base_dir>/replay/<fn>_pid<P>_<k>.record.safetensors)\n";
    return 2;
  }
  std::map<std::string, std::string> meta;
  try {
    meta = load_safetensors_metadata(path);
  } catch (const Error& e) {
    std::cerr << "ember replay: " << path << " is not an execution record: " << e.what() << "\n";
    return 2;
  }
  if (meta_value(meta, "ember_record") != "1") {
    std::cerr << "ember replay: " << path << " is not an execution record (a safetensors file without "
              << "'ember_record' in its metadata)\n";
    return 2;
  }
  const std::string function = meta_value(meta, "function");
  const std::string program = meta_value(meta, "program");
  std::vector<std::string> argv;
  const int argc = std::atoi(meta_value(meta, "argc").c_str());
  for (int i = 0; i < argc; ++i) argv.push_back(meta_value(meta, "argv." + std::to_string(i)));
  if (program.empty() || argv.empty()) {
    std::cerr << "ember replay: " << path << " does not name the program that wrote it; replay it there with "
              << "ember::replay(\"" << path << "\")\n";
    return 2;
  }
  if (!fs::exists(program)) {
    std::cerr << "ember replay: the program that wrote " << path << ", " << program
              << ", no longer exists; rebuild it, or run it with EMBER_REPLAY=" << path << "\n";
    return 2;
  }
  argv[0] = program;  // the recorded argv[0] may be relative to a directory or the PATH
  std::string cmd;
  for (const std::string& a : argv) cmd += (cmd.empty() ? "" : " ") + a;
  std::cout << "ember replay: " << path << ": frame of " << function << " (" << meta_value(meta, "where")
            << "), recorded error: " << meta_value(meta, "error") << "\n"
            << "ember replay: running " << cmd << " in " << meta_value(meta, "cwd") << " with EMBER_REPLAY=" << path
            << "\n";
  std::string output;
  const int status = run_program(argv, meta_value(meta, "cwd"), path, output);
  if (output.find("[replay] cannot replay EMBER_REPLAY=") != std::string::npos) return 2;  // it said why
  if (output.find("[replay] " + path + ": the recorded frame") == std::string::npos) {
    std::cerr << "ember replay: " << program << " ended (status " << status << ") without calling " << function
              << ", so nothing was replayed\n";
    return 2;
  }
  return status == 0 ? 0 : 1;
}

}  // namespace ember::tool
