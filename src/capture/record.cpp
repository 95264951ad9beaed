// capture/record.cpp — execution records and replay (record.h).
#include "capture/record.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <sstream>

#include "capture/guards.h"
#include "ember/config.h"
#include "ember/serialize.h"

namespace ember {
namespace capture {
namespace {

struct FunctionTable {
  std::mutex mu;
  std::map<std::string, std::weak_ptr<CompiledFunctionState>> by_name;
};
FunctionTable& functions() {
  static FunctionTable* t = new FunctionTable;
  return *t;
}

template <typename T>
std::string join(const std::vector<T>& v) {
  std::ostringstream os;
  os.precision(17);
  for (size_t i = 0; i < v.size(); ++i) os << (i ? "," : "") << v[i];
  return os.str();
}

template <typename T>
std::vector<T> split(const std::string& s, T (*parse)(const std::string&)) {
  std::vector<T> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(parse(item));
  return out;
}

int64_t parse_int(const std::string& s) { return std::stoll(s); }
double parse_double(const std::string& s) { return std::stod(s); }

/// The running program, its working directory and its arguments, so that `ember replay`
/// can run it again (Linux's /proc; left out where it cannot be read).
void describe_program(std::map<std::string, std::string>& meta) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return;
  meta["program"] = exe.string();
  meta["cwd"] = fs::current_path(ec).string();
  std::ifstream cmdline("/proc/self/cmdline", std::ios::binary);
  std::string arg;
  size_t argc = 0;
  while (std::getline(cmdline, arg, '\0')) meta["argv." + std::to_string(argc++)] = arg;
  meta["argc"] = std::to_string(argc);
}

/// The record's metadata; ember::Error (ValueError) naming `path` when it is not one.
std::map<std::string, std::string> record_metadata(const std::string& path) {
  std::map<std::string, std::string> meta = load_safetensors_metadata(path);
  auto it = meta.find("ember_record");
  EMBER_CHECK_VALUE(it != meta.end() && it->second == "1")
      << "replay: " << path << " is not an execution record (no 'ember_record' in its metadata)";
  return meta;
}

}  // namespace

void register_function(const std::string& name, const std::shared_ptr<CompiledFunctionState>& state) {
  FunctionTable& t = functions();
  std::lock_guard lock(t.mu);
  t.by_name[name] = state;
}

std::string write_record(const std::string& function, const SourceLoc& where, const std::vector<std::string>& arg_names,
                         const std::vector<CallArg>& args, const Error& error) {
  static std::atomic<int> counter{0};
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(config().dynamo.base_dir.empty() ? "." : config().dynamo.base_dir) / "replay";
  std::error_code ec;
  fs::create_directories(dir, ec);
  EMBER_CHECK(!ec) << "cannot create the record directory " << dir.string() << ": " << ec.message();
  const fs::path path = dir / (function + "_pid" + std::to_string(getpid()) + "_" + std::to_string(counter++) +
                               ".record.safetensors");

  std::map<std::string, Tensor> tensors;
  std::map<std::string, std::string> meta;
  meta["ember_record"] = "1";
  meta["function"] = function;
  meta["where"] = where.str();
  meta["error"] = std::string(error_kind_name(error.kind())) + ": " + error.message();
  meta["num_args"] = std::to_string(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string key = "arg" + std::to_string(i);
    meta[key + ".name"] = arg_name(arg_names, i);
    std::visit(
        [&](const auto& a) {
          using T = std::decay_t<decltype(a)>;
          if constexpr (std::is_same_v<T, Tensor>) {
            meta[key] = "tensor";
            tensors[key] = a.contiguous();
          } else if constexpr (std::is_same_v<T, std::vector<Tensor>>) {
            meta[key] = "tensors:" + std::to_string(a.size());
            for (size_t k = 0; k < a.size(); ++k) tensors[key + "." + std::to_string(k)] = a[k].contiguous();
          } else if constexpr (std::is_same_v<T, bool>) {
            meta[key] = std::string("bool:") + (a ? "1" : "0");
          } else if constexpr (std::is_same_v<T, int64_t>) {
            meta[key] = "int:" + std::to_string(a);
          } else if constexpr (std::is_same_v<T, double>) {
            meta[key] = "double:" + join(std::vector<double>{a});
          } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
            meta[key] = "ints:" + join(a);
          } else if constexpr (std::is_same_v<T, std::vector<double>>) {
            meta[key] = "doubles:" + join(a);
          } else {
            meta[key] = "module";
          }
        },
        args[i]);
  }
  for (const KnobInfo& k : config_knobs()) meta["config." + k.name] = config_get(k.name);
  describe_program(meta);
  save_safetensors(tensors, path.string(), meta);
  return path.string();
}

void replay_if_recorded(const std::string& function, const std::vector<CallArg>& live) {
  const std::string path = config().dynamo.replay_record;
  std::map<std::string, std::string> meta;
  try {
    meta = record_metadata(path);
  } catch (const Error& e) {
    std::cerr << "[replay] cannot replay EMBER_REPLAY=" << path << ": " << e.what() << std::endl;
    std::cout.flush();
    std::fflush(nullptr);
    std::_Exit(2);
  }
  if (meta["function"] != function) return;
  std::vector<nn::Module*> modules;  // a record holds no modules: this call's are used
  for (const CallArg& a : live)
    if (auto m = std::get_if<nn::Module*>(&a)) modules.push_back(*m);
  const std::string recorded = meta["error"];
  std::cerr << "[replay] " << path << ": the recorded frame of " << function << " (" << meta["where"] << ")"
            << std::endl;
  int status = 0;
  try {
    replay(path, modules);
    std::cerr << "[replay] the frame ran without error: it no longer fails" << std::endl;
  } catch (const Error& e) {
    const std::string got = std::string(error_kind_name(e.kind())) + ": " + e.message();
    std::cerr << "[replay] the frame raised " << error_kind_name(e.kind()) << ": " << e.what() << "\n"
              << (got == recorded ? "[replay] the same error as recorded"
                                  : "[replay] a different error from the recorded one, " + recorded)
              << std::endl;
    status = 1;
  }
  // The program stops here: the frame was what it was asked to run (its output so far kept).
  std::cout.flush();
  std::fflush(nullptr);
  std::_Exit(status);
}

}  // namespace capture

void replay(const std::string& record_path, const std::vector<nn::Module*>& modules) {
  const std::map<std::string, std::string> meta = capture::record_metadata(record_path);
  auto get = [&](const std::string& key) -> const std::string& {
    auto it = meta.find(key);
    EMBER_CHECK_VALUE(it != meta.end()) << "replay: " << record_path << " is not an execution record (no '" << key
                                        << "' in its metadata)";
    return it->second;
  };
  EMBER_CHECK_VALUE(get("ember_record") == "1") << "replay: " << record_path << " is not an execution record";
  const std::string function = get("function");
  std::shared_ptr<capture::CompiledFunctionState> state;
  {
    capture::FunctionTable& t = capture::functions();
    std::lock_guard lock(t.mu);
    if (auto it = t.by_name.find(function); it != t.by_name.end()) state = it->second.lock();
  }
  EMBER_CHECK_VALUE(state) << "replay: no compiled function named '" << function
                           << "' exists in this program; a record is replayed by the program that compiled it";

  std::map<std::string, Tensor> tensors = load_safetensors(record_path);
  std::vector<capture::CallArg> args;
  size_t next_module = 0;
  const size_t n = static_cast<size_t>(std::stoll(get("num_args")));
  for (size_t i = 0; i < n; ++i) {
    const std::string key = "arg" + std::to_string(i);
    const std::string& kind = get(key);
    const std::string value = kind.substr(kind.find(':') + 1);
    if (kind == "tensor") {
      args.emplace_back(tensors.at(key));
    } else if (kind.starts_with("tensors:")) {
      std::vector<Tensor> list;
      for (int64_t k = 0; k < std::stoll(value); ++k) list.push_back(tensors.at(key + "." + std::to_string(k)));
      args.emplace_back(std::move(list));
    } else if (kind.starts_with("bool:")) {
      args.emplace_back(value == "1");
    } else if (kind.starts_with("int:")) {
      args.emplace_back(static_cast<int64_t>(std::stoll(value)));
    } else if (kind.starts_with("double:")) {
      args.emplace_back(std::stod(value));
    } else if (kind.starts_with("ints:")) {
      args.emplace_back(capture::split<int64_t>(value, capture::parse_int));
    } else if (kind.starts_with("doubles:")) {
      args.emplace_back(capture::split<double>(value, capture::parse_double));
    } else {
      EMBER_CHECK_VALUE(next_module < modules.size())
          << "replay: argument '" << get(key + ".name") << "' of " << function
          << " is a module, which a record cannot hold; pass it: replay(path, {&module})";
      args.emplace_back(modules[next_module++]);
    }
  }

  // The recorded config is in force while the frame runs, and restored after.
  std::map<std::string, std::string> saved;
  for (const KnobInfo& k : config_knobs()) saved[k.name] = config_get(k.name);
  auto restore = [&] {
    for (const auto& [name, value] : saved) config_set(name, value);
  };
  try {
    for (const KnobInfo& k : config_knobs()) {
      if (auto it = meta.find("config." + k.name);
          it != meta.end() && k.name != "dynamo.replay_record_enabled" && k.name != "dynamo.replay_record") {
        config_set(k.name, it->second);
      }
    }
    config().dynamo.replay_record_enabled = false;
    capture::trace_once(*state, args);
  } catch (...) {
    restore();
    throw;
  }
  restore();
}

}  // namespace ember
