// capture/record.cpp — execution records and replay (record.h).
#include "capture/record.h"

#include <unistd.h>

#include <atomic>
#include <charconv>
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
          } else if constexpr (std::is_same_v<T, nn::Module*>) {
            meta[key] = "module";
          } else {
            meta[key] = "optimizer";
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

namespace {

/// What replay reads from a record's metadata: every value checked, every error naming the
/// record and the metadata key (a record is a file anyone can edit or truncate).
class RecordReader {
 public:
  RecordReader(std::string path, std::map<std::string, std::string> meta)
      : path_(std::move(path)), meta_(std::move(meta)) {}

  [[noreturn]] void fail(const std::string& key, const std::string& expected) const {
    auto it = meta_.find(key);
    EMBER_FAIL_KIND(ErrorKind::ValueError)
        << "replay: " << path_ << ": metadata '" << key << "': expected " << expected << ", found "
        << (it == meta_.end() ? std::string("no such key") : "'" + it->second + "'");
  }

  const std::string& get(const std::string& key) const {
    auto it = meta_.find(key);
    if (it == meta_.end()) fail(key, "it in an execution record");
    return it->second;
  }

  int64_t integer(const std::string& key, std::string_view text) const {
    int64_t v = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size()) fail(key, "an integer within 64 bits");
    return v;
  }

  double real(const std::string& key, std::string_view text) const {
    double v = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size()) fail(key, "a floating-point number");
    return v;
  }

  /// "1,2,3" (and "" for an empty list), each item read by `item`.
  template <typename T, typename Item>
  std::vector<T> list(const std::string& key, std::string_view text, Item item) const {
    std::vector<T> out;
    if (text.empty()) return out;
    for (size_t start = 0;;) {
      const size_t comma = text.find(',', start);
      out.push_back(item(key, text.substr(start, comma == std::string_view::npos ? text.npos : comma - start)));
      if (comma == std::string_view::npos) return out;
      start = comma + 1;
    }
  }

  const std::string& path() const { return path_; }
  const std::map<std::string, std::string>& meta() const { return meta_; }

 private:
  std::string path_;
  std::map<std::string, std::string> meta_;
};

/// How a CallArg alternative is written in a record ("tensor", "int:…", …), for messages.
const char* kind_name(size_t index) {
  static constexpr const char* kNames[] = {"a Tensor ('tensor')",
                                           "a list of tensors ('tensors:N')",
                                           "an int ('int:N')",
                                           "a double ('double:X')",
                                           "a bool ('bool:0' or 'bool:1')",
                                           "a list of ints ('ints:A,B,…')",
                                           "a list of doubles ('doubles:A,B,…')",
                                           "a module ('module')",
                                           "an optimizer ('optimizer')"};
  return index < std::size(kNames) ? kNames[index] : "an argument";
}

}  // namespace

void replay(const std::string& record_path, const std::vector<nn::Module*>& modules) {
  const RecordReader rec(record_path, load_safetensors_metadata(record_path));
  if (rec.get("ember_record") != "1") rec.fail("ember_record", "'1' (an execution record)");
  const std::string function = rec.get("function");
  std::shared_ptr<capture::CompiledFunctionState> state;
  {
    capture::FunctionTable& t = capture::functions();
    std::lock_guard lock(t.mu);
    if (auto it = t.by_name.find(function); it != t.by_name.end()) state = it->second.lock();
  }
  EMBER_CHECK_VALUE(state) << "replay: " << record_path << ": no compiled function named '" << function
                           << "' exists in this program; a record is replayed by the program that compiled it";
  const std::vector<size_t>& params = capture::param_kinds(*state);

  // Every key must be one the writer writes: anything else is a damaged or foreign file.
  const size_t num_args = static_cast<size_t>(rec.integer("num_args", rec.get("num_args")));
  if (rec.integer("num_args", rec.get("num_args")) < 0 || num_args != params.size()) {
    rec.fail("num_args", std::to_string(params.size()) + " (the number of arguments " + function + " takes)");
  }
  for (const auto& [key, value] : rec.meta()) {
    bool known = key == "ember_record" || key == "function" || key == "where" || key == "error" || key == "num_args" ||
                 key == "program" || key == "cwd" || key == "argc" || key.starts_with("argv.");
    if (key.starts_with("config.")) {
      const std::string name = key.substr(7);
      for (const KnobInfo& k : config_knobs()) known = known || k.name == name;
      if (!known) rec.fail(key, "a knob that exists (see `ember config`)");
    }
    for (size_t i = 0; i < num_args && !known; ++i) {
      const std::string arg = "arg" + std::to_string(i);
      known = key == arg || key == arg + ".name";
    }
    if (!known) rec.fail(key, "only the keys an execution record holds");
  }

  std::map<std::string, Tensor> tensors = load_safetensors(record_path);
  size_t tensors_used = 0;
  auto tensor = [&](const std::string& key, const std::string& name) {
    auto it = tensors.find(name);
    if (it == tensors.end()) rec.fail(key, "a record whose file holds tensor '" + name + "'");
    ++tensors_used;
    return it->second;
  };
  std::vector<capture::CallArg> args;
  size_t next_module = 0;
  for (size_t i = 0; i < num_args; ++i) {
    const std::string key = "arg" + std::to_string(i);
    const std::string& kind = rec.get(key);
    const size_t colon = kind.find(':');
    const std::string tag = kind.substr(0, colon);
    const std::string_view value =
        colon == std::string::npos ? std::string_view() : std::string_view(kind).substr(colon + 1);
    if (kind == "tensor") {
      args.emplace_back(tensor(key, key));
    } else if (tag == "tensors" && colon != std::string::npos) {
      const int64_t n = rec.integer(key, value);
      if (n < 0 || static_cast<uint64_t>(n) > tensors.size()) rec.fail(key, "as many tensors as the file holds");
      std::vector<Tensor> list;
      for (int64_t k = 0; k < n; ++k) list.push_back(tensor(key, key + "." + std::to_string(k)));
      args.emplace_back(std::move(list));
    } else if (tag == "bool" && (value == "0" || value == "1") && colon != std::string::npos) {
      args.emplace_back(value == "1");
    } else if (tag == "int" && colon != std::string::npos) {
      args.emplace_back(rec.integer(key, value));
    } else if (tag == "double" && colon != std::string::npos) {
      args.emplace_back(rec.real(key, value));
    } else if (tag == "ints" && colon != std::string::npos) {
      args.emplace_back(
          rec.list<int64_t>(key, value, [&](const std::string& k, std::string_view v) { return rec.integer(k, v); }));
    } else if (tag == "doubles" && colon != std::string::npos) {
      args.emplace_back(
          rec.list<double>(key, value, [&](const std::string& k, std::string_view v) { return rec.real(k, v); }));
    } else if (kind == "module") {
      EMBER_CHECK_VALUE(next_module < modules.size())
          << "replay: argument '" << (rec.meta().contains(key + ".name") ? rec.get(key + ".name") : key) << "' of "
          << function << " is a module, which a record cannot hold; pass it: replay(path, {&module})";
      args.emplace_back(modules[next_module++]);
    } else if (kind == "optimizer") {
      EMBER_FAIL_KIND(ErrorKind::ValueError)
          << "replay: argument '" << (rec.meta().contains(key + ".name") ? rec.get(key + ".name") : key) << "' of "
          << function << " is an optimizer, which a record cannot hold: a frame that takes one cannot be replayed";
    } else {
      rec.fail(key, "tensor, tensors:N, bool:0|1, int:N, double:X, ints:…, doubles:… or module");
    }
    if (args.back().index() != params[i]) {
      rec.fail(key,
               std::string(kind_name(params[i])) + ": the type of argument " + std::to_string(i) + " of " + function);
    }
  }
  if (tensors_used != tensors.size()) {
    EMBER_FAIL_KIND(ErrorKind::ValueError) << "replay: " << record_path << ": holds " << tensors.size()
                                           << " tensors, but its arguments use " << tensors_used;
  }

  // The recorded config is in force while the frame runs, and restored after.
  std::map<std::string, std::string> saved;
  for (const KnobInfo& k : config_knobs()) saved[k.name] = config_get(k.name);
  auto restore = [&] {
    for (const auto& [name, value] : saved) config_set(name, value);
  };
  try {
    for (const KnobInfo& k : config_knobs()) {
      auto it = rec.meta().find("config." + k.name);
      if (it == rec.meta().end() || k.name == "dynamo.replay_record_enabled" || k.name == "dynamo.replay_record") {
        continue;
      }
      try {
        config_set(k.name, it->second);
      } catch (const Error& e) {
        rec.fail(it->first, "a valid value for the knob (" + e.message() + ")");
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
