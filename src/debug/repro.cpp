// debug/repro.cpp — failures, the checker, and repro / launcher files (repro.h). See
// Note [minifier] (docs/notes/minifier.md) for the file format.
#include "debug/repro.h"

#include <unistd.h>

#include <atomic>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "capture/repro_hooks.h"
#include "core/shape_env.h"
#include "core/sym_geometry.h"
#include "ember/build_info.h"
#include "ember/config.h"
#include "ember/debug.h"
#include "ember/ember.h"
#include "graph/runnable.h"
#include "support/logging.h"

namespace ember::debug {
namespace fs = std::filesystem;

namespace {

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

std::optional<ErrorKind> kind_named(std::string_view name) {
  for (ErrorKind k : {ErrorKind::RuntimeError, ErrorKind::ValueError, ErrorKind::IndexError, ErrorKind::TypeError,
                      ErrorKind::NotImplementedError, ErrorKind::Unsupported})
    if (name == error_kind_name(k)) return k;
  return std::nullopt;
}

std::optional<Failure::Stage> stage_named(std::string_view name) {
  for (Failure::Stage s : {Failure::Stage::Compile, Failure::Stage::Run, Failure::Stage::Accuracy})
    if (name == Failure::stage_name(s)) return s;
  return std::nullopt;
}

int64_t storage_elements(const TensorMeta& m) {
  int64_t n = m.storage_offset + 1;
  for (size_t d = 0; d < m.sizes.size(); ++d) {
    if (m.sizes[d] == 0) return m.storage_offset;
    n += (m.sizes[d] - 1) * m.strides[d];
  }
  return n;
}

std::string format_double(double v) {
  std::ostringstream os;
  os.precision(17);
  os << v;
  return os.str();
}

}  // namespace

// --- failures ------------------------------------------------------------------------------

const char* Failure::stage_name(Stage s) {
  switch (s) {
    case Stage::Compile:
      return "compile";
    case Stage::Run:
      return "run";
    case Stage::Accuracy:
      return "accuracy";
  }
  return "compile";
}

std::string Failure::pattern() const {
  std::istringstream words(message);
  std::string out, word;
  bool last_wild = false;
  while (words >> word) {
    const bool wild = word.find_first_of("0123456789/%\"") != std::string::npos;
    if (wild && last_wild) continue;
    out += (out.empty() ? "" : " ") + (wild ? std::string("*") : word);
    last_wild = wild;
  }
  return out;
}

bool Failure::same_as(const Failure& other) const {
  if (stage != other.stage) return false;
  if (stage == Stage::Accuracy) return true;
  return kind == other.kind && pattern() == other.pattern();
}

std::string Failure::str() const {
  if (stage == Stage::Accuracy) return "accuracy: " + message;
  return std::string(stage_name(stage)) + " error (" + error_kind_name(kind) + "): " + message;
}

Failure failure_of(Failure::Stage stage, const Error& e) { return Failure{stage, e.kind(), first_line(e.message())}; }

// --- geometry and inputs -----------------------------------------------------------------

Tensor with_geometry(const Tensor& value, const TensorMeta& m) {
  EMBER_CHECK_VALUE(value.defined() && value.sizes() == IntArrayRef(m.sizes))
      << "expected a tensor of sizes " << IntArrayRef(m.sizes) << ", got "
      << (value.defined() ? "sizes " : "an undefined tensor") << (value.defined() ? value.sizes() : IntArrayRef{});
  Tensor v = value.dtype() == m.dtype ? value : value.to(m.dtype);
  // Dimensions of stride 0 hold one value each: copy one slice, then expand by viewing.
  std::vector<int64_t> compact = m.sizes;
  Tensor src = v;
  for (size_t d = 0; d < m.sizes.size(); ++d) {
    if (m.strides[d] == 0 && m.sizes[d] > 1) {
      src = src.narrow(static_cast<int64_t>(d), 0, 1);
      compact[d] = 1;
    }
  }
  Tensor storage = empty({storage_elements(m)}, TensorOptions(m.dtype));
  storage.as_strided(compact, m.strides, m.storage_offset).copy_(src);
  return storage.as_strided(m.sizes, m.strides, m.storage_offset);
}

std::vector<Tensor> random_inputs(const Graph& g, uint64_t seed) {
  manual_seed(seed);
  std::vector<Tensor> out;
  for (const Node* in : g.inputs()) out.push_back(runnable_input(in->meta().at(0)));
  return out;
}

// --- the checker ---------------------------------------------------------------------------

std::optional<Failure> Checker::operator()(const Graph& g, const std::vector<Tensor>& inputs) const {
  ++compiles;
  const std::vector<Node*> graph_inputs = g.inputs();
  auto fresh = [&] {
    std::vector<Tensor> in;
    for (size_t i = 0; i < inputs.size(); ++i) in.push_back(input_copy(inputs[i], graph_inputs.at(i)->meta().at(0)));
    return in;
  };
  // A training graph: compiled with its inputs requiring grad under grad mode (so the
  // backend compiles its training form), then run forward and backward.
  const bool training = needs_gradients(inputs);
  // The backend owns its copy (it may rewrite it, and may keep it while the result runs).
  std::shared_ptr<Graph> copy = g.clone();
  std::vector<Tensor> in = fresh();
  CompiledGraph fn;
  try {
    std::optional<EnableGradGuard> grad_on;
    if (training) grad_on.emplace();
    fn = backend(*copy, in);
  } catch (const Error& e) {
    return failure_of(Failure::Stage::Compile, e);
  } catch (const std::exception& e) {
    return Failure{Failure::Stage::Compile, ErrorKind::RuntimeError, first_line(capture::foreign_exception_message(e))};
  }
  std::vector<Tensor> out;
  try {
    if (training) {
      out = run_forward_backward(fn, fresh());
    } else {
      NoGradGuard no_grad;
      out = fn(in);
    }
  } catch (const Error& e) {
    return failure_of(Failure::Stage::Run, e);
  } catch (const std::exception& e) {
    return Failure{Failure::Stage::Run, ErrorKind::RuntimeError, first_line(capture::foreign_exception_message(e))};
  }
  if (!accuracy) return std::nullopt;
  std::vector<Tensor> ref;
  try {
    if (training) {
      ref = run_graph_with_gradients(g, fresh());
    } else {
      NoGradGuard no_grad;
      ref = run_graph(g, fresh());
    }
  } catch (const Error& e) {
    // Eager fails too: not the backend's failure; never the one chased.
    return Failure{Failure::Stage::Run, e.kind(), "eager fails: " + first_line(e.message())};
  }
  std::vector<Tensor> fp64 =
      (training ? run_graph_fp64_with_gradients(g, fresh()) : run_graph_fp64(g, fresh())).value_or(ref);
  SameOptions opts;
  opts.tol = tolerance;
  SameResult verdict = same(ref, out, fp64, opts);
  if (verdict) return std::nullopt;
  return Failure{Failure::Stage::Accuracy, ErrorKind::RuntimeError, training ? gradient_named(verdict.why, g, inputs) : verdict.why};
}

// --- the machine ---------------------------------------------------------------------------

std::vector<std::string> machine_header() {
  std::string cpu = "unknown";
  std::ifstream info("/proc/cpuinfo");
  for (std::string line; std::getline(info, line);) {
    if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos) {
      cpu = line.substr(line.find(':') + 2);
      break;
    }
  }
  cpu += " (" + std::to_string(std::thread::hardware_concurrency()) + " threads)";
  return {std::string("ember ") + EMBER_VERSION_STRING,
          std::string("compiler: ") + build_info::kCxxCompiler + " (" + __VERSION__ + ")",
          std::string("flags: ") + build_info::kCxxFlags, "cpu: " + cpu, "gpu: none (Ember's backends run on the CPU)"};
}

std::vector<std::pair<std::string, std::string>> config_to_record() {
  static const std::set<std::string> kSkipped = {"dynamo.base_dir",      "dynamo.repro_after",
                                                 "dynamo.repro_level",   "dynamo.replay_record_enabled",
                                                 "dynamo.replay_record", "inductor.trace.enabled"};
  std::vector<std::pair<std::string, std::string>> out;
  for (const KnobInfo& k : config_knobs()) {
    if (k.default_depends_on_machine || kSkipped.contains(k.name)) continue;
    const std::string value = config_get(k.name);
    if (value != k.default_value) out.emplace_back(k.name, value);
  }
  return out;
}

ScopedConfig::ScopedConfig(const std::vector<std::pair<std::string, std::string>>& config) {
  try {
    for (const auto& [name, value] : config) {
      std::string previous = config_get(name);
      config_set(name, value);
      saved_.emplace_back(name, std::move(previous));
    }
  } catch (const Error&) {
    // No destructor runs for a constructor that throws: put back what was set.
    restore();
    throw;
  }
}

ScopedConfig::~ScopedConfig() { restore(); }

void ScopedConfig::restore() {
  for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
    try {
      config_set(it->first, it->second);
    } catch (const Error&) {  // a value read back from config_get always sets
    }
  }
  saved_.clear();
}

std::string new_output_dir(const std::string& graph_name) {
  static std::atomic<int> counter{0};
  const fs::path base = fs::path(config().dynamo.base_dir.empty() ? "." : config().dynamo.base_dir) / "minifier";
  std::string stem;
  for (char c : graph_name) stem += std::isalnum(static_cast<unsigned char>(c)) || c == '_' ? c : '_';
  for (;;) {
    const fs::path dir = base / (stem + "_pid" + std::to_string(getpid()) + "_" + std::to_string(counter.fetch_add(1)));
    std::error_code ec;
    fs::create_directories(base, ec);
    if (fs::create_directory(dir, ec)) return dir.string();
    EMBER_CHECK(!ec) << "cannot create the repro directory " << dir.string() << ": " << ec.message();
  }
}

// --- writing -------------------------------------------------------------------------------

namespace {

/// mark_dynamic calls for the dims of an input whose recorded size is a symbol, so that
/// the repro's compile traces them symbolically again (with the symbol's range).
std::string dynamic_marks(const TensorMeta& m, const std::string& tensor) {
  std::string out;
  if (!m.sym) return out;
  for (size_t d = 0; d < m.sym->sizes.size(); ++d) {
    const core::SymInt s = core::current(m.sym->sizes[d]);
    if (!s.is_symbolic() || s.expr().kind() != core::sym::Kind::Symbol) continue;
    const core::sym::Range range = s.env()->symbol(s.expr().symbol_id()).range;
    auto end = [](int64_t v, int64_t unbounded) {
      return v == unbounded ? std::string("std::nullopt") : std::to_string(v);
    };
    out += "    ember::mark_dynamic(" + tensor + ", " + std::to_string(d) + ", " +
           end(range.lo, core::sym::Range::kMinusInfinity) + ", " + end(range.hi, core::sym::Range::kInfinity) +
           ");  // " + s.str() + "\n";
  }
  return out;
}

}  // namespace

std::string repro_cpp(const Repro& r, const std::string& inputs_path) {
  const Graph& g = *r.graph;
  auto quoted = [](const std::string& s) {
    std::string q = "\"";
    for (char c : s) {
      if (c == '"' || c == '\\') q += '\\';
      if (c == '\n') {
        q += "\\n";
        continue;
      }
      q += c;
    }
    return q + "\"";
  };
  auto ints = [](const std::vector<int64_t>& v) {
    std::string s = "{";
    for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
    return s + "}";
  };
  // A graph over size symbols also takes `s<k>=<size>` arguments: its inputs are then made
  // at those sizes (random values, seed 0) instead of read from the file.
  const bool symbolic = graph::runnable_has_symbols(g);
  std::ostringstream main;
  main << "int main(int argc, char** argv) {\n"
       << "  std::string inputs_path = " << quoted(inputs_path) << ";\n";
  if (symbolic) {
    main << "  bool resized = false;  // s<k>=<size> arguments: inputs made at those sizes\n"
         << "  for (int a = 1; a < argc; ++a) {\n"
         << "    const std::string arg = argv[a];\n"
         << "    if (arg.find('=') == std::string::npos) {\n      inputs_path = arg;\n      continue;\n    }\n"
         << "    set_symbol(arg);\n    resized = true;\n  }\n";
  } else {
    main << "  const bool resized = false;\n  if (argc > 1) inputs_path = argv[1];\n";
  }
  if (!r.config.empty()) main << "  // The knobs in force when the failure was seen.\n";
  for (const auto& [name, value] : r.config)
    main << "  ember::config_set(" << quoted(name) << ", " << quoted(value) << ");\n";
  main << "  ember::register_builtin_backends();\n"
       << "  // A custom backend: register it here (ember::register_backend) under the name used below.\n"
       << "  const std::map<std::string, ember::Tensor> file =\n"
       << "      resized ? std::map<std::string, ember::Tensor>() : ember::load_safetensors(inputs_path);\n"
       << "  auto inputs = [&] {\n"
       << "    std::vector<ember::Tensor> in;\n"
       << "    if (resized) ember::manual_seed(0);  // the same made inputs at every call\n";
  const std::vector<Node*> ins = g.inputs();
  for (size_t i = 0; i < ins.size(); ++i) {
    const TensorMeta& m = ins[i]->meta().at(0);
    main << "    in.push_back(resized ? " << graph::make_input_cpp(m)
         << "\n                          : restrided(file.at(\"input." << i << "\"), " << ints(m.strides) << ", "
         << m.storage_offset << "));  // " << ins[i]->target() << "\n"
         << dynamic_marks(m, "in.back()");
  }
  main << "    return in;\n  };\n"
       << "  const std::vector<ember::Tensor> expected = forward_list(inputs());\n"
       << "  auto compiled = ember::compile([](const std::vector<ember::Tensor>& in) { return forward_list(in); },\n"
       << "                                 {.backend = " << quoted(r.backend.empty() ? "eager" : r.backend)
       << ", .fullgraph = true, .name = " << quoted(g.name()) << "});\n"
       << "  std::vector<ember::Tensor> got;\n"
       << "  try {\n    got = compiled(inputs());\n  } catch (const ember::Error& e) {\n"
       << "    std::printf(\"REPRODUCED: %s: %s\\n\", ember::error_kind_name(e.kind()), e.what());\n"
       << "    return 1;\n  }\n";
  if (r.accuracy) {
    main << "  std::vector<ember::Tensor> fp64 = expected;\n"
         << "  try {\n    std::vector<ember::Tensor> wide;\n"
         << "    for (const ember::Tensor& t : inputs()) wide.push_back(t.is_floating_point() ? t.to(ember::kDouble) : "
            "t);\n"
         << "    fp64 = forward_list(wide);\n"
         << "  } catch (const ember::Error&) {  // no float64 run: compare with eager alone\n  }\n"
         << "  ember::SameOptions options;\n  options.tol = " << format_double(r.tolerance) << ";\n"
         << "  const ember::SameResult verdict = ember::same(expected, got, fp64, options);\n"
         << "  if (!verdict) {\n    std::printf(\"REPRODUCED: accuracy: %s\\n\", verdict.why.c_str());\n"
         << "    return 1;\n  }\n";
  }
  main << "  std::printf(\"not reproduced: backend " << (r.backend.empty() ? "eager" : r.backend)
       << (r.accuracy ? " compiles, runs and matches eager" : " compiles and runs") << "\\n\");\n"
       << "  return 0;\n}\n";
  RunnableOptions options;
  std::string header = "repro.cpp for graph " + g.name() + ", written by Ember's minifier (Note [minifier]).\n" +
                       "It rebuilds the graph below through the public API, loads its inputs from the\n" +
                       "safetensors file (argv[1], or the path written in main), compiles it with backend " +
                       (r.backend.empty() ? "eager" : r.backend) + "\nand runs it" +
                       (r.accuracy ? ", comparing with eager against a float64 run (ember::same)" : "") +
                       ". It prints REPRODUCED and exits 1 when the failure occurs.\n" +
                       (r.failure ? "Failure: " + r.failure->str() + "\n" : std::string()) +
                       "Build it with the settings of ember/build_info.h (docs/notes/graph.md).\n";
  for (const std::string& line : machine_header()) header += line + "\n";
  options.header_comment = header;
  options.main_source = main.str();
  std::string program = to_runnable_cpp(g, options);
  // The program's own includes, for main.
  const std::string anchor = "#include <ember/ember.h>\n";
  program.replace(program.find(anchor), anchor.size(), "#include <map>\n\n" + anchor);
  return program;
}

WrittenRepro write_repro(const Repro& r, const std::string& dir, const std::string& stem) {
  EMBER_INTERNAL_ASSERT(r.graph) << "write_repro: no graph";
  const Graph& g = *r.graph;
  std::error_code ec;
  fs::create_directories(dir, ec);
  EMBER_CHECK(!ec) << "cannot create the repro directory " << dir << ": " << ec.message();
  WrittenRepro out;
  out.file = (fs::path(dir) / (stem + ".txt")).string();
  out.inputs = (fs::path(dir) / (stem + ".safetensors")).string();

  std::map<std::string, Tensor> tensors;
  const std::vector<Node*> ins = g.inputs();
  EMBER_INTERNAL_ASSERT(ins.size() == r.inputs.size())
      << "write_repro: graph " << g.name() << " takes " << ins.size() << " inputs, got " << r.inputs.size();
  for (size_t i = 0; i < ins.size(); ++i) tensors["input." + std::to_string(i)] = r.inputs[i].contiguous();
  for (const auto& [name, value] : g.constants())
    if (value.defined()) tensors["constant." + name] = value.contiguous();
  save_safetensors(tensors, out.inputs, {{"ember_repro_inputs", "1"}, {"graph", g.name()}});

  const bool launcher = r.kind == "launcher";
  std::ostringstream os;
  if (launcher) {
    os << "# Ember minifier launcher for graph " << g.name() << ".\n"
       << "# `ember minify " << out.file << "` shrinks the graph while the failure below persists;\n";
  } else {
    os << "# Ember repro of graph " << g.name() << ".\n";
  }
  os << "# `ember repro " << out.file << "` runs it once and says whether the failure occurs.\n";
  for (const std::string& line : machine_header()) os << "# " << line << "\n";
  os << "kind: " << r.kind << "\n"
     << "backend: " << r.backend << "\n"
     << "repro_after: " << r.repro_after << "\n"
     << "check: " << (r.accuracy ? "accuracy" : "error") << "\n";
  if (r.failure) {
    os << "failure: " << Failure::stage_name(r.failure->stage);
    if (r.failure->stage != Failure::Stage::Accuracy) os << " " << error_kind_name(r.failure->kind);
    os << " " << r.failure->message << "\n";
  }
  std::string grads;
  for (size_t i = 0; i < r.inputs.size(); ++i)
    if (r.inputs[i].defined() && r.inputs[i].requires_grad()) grads += (grads.empty() ? "" : " ") + std::to_string(i);
  if (!grads.empty()) os << "requires_grad: " << grads << "\n";
  os << "tolerance: " << format_double(r.tolerance) << "\n";
  for (const auto& [name, value] : r.config) os << "config: " << name << "=" << value << "\n";
  os << "inputs: " << fs::path(out.inputs).filename().string() << "\n"
     << "graph:\n"
     << to_string(g) << "\n";
  std::ofstream f(out.file);
  f << os.str();
  f.close();
  EMBER_CHECK(f.good()) << "cannot write " << out.file;
  if (!launcher) {
    out.cpp = (fs::path(dir) / (stem + ".cpp")).string();
    std::ofstream c(out.cpp);
    c << repro_cpp(r, fs::absolute(out.inputs).string());
    c.close();
    EMBER_CHECK(c.good()) << "cannot write " << out.cpp;
  }
  return out;
}

// --- reading -------------------------------------------------------------------------------

Repro read_repro(const std::string& path) {
  std::ifstream f(path);
  EMBER_CHECK_VALUE(f.good()) << "cannot read " << path << ": no such file, or not readable";
  std::ostringstream buf;
  buf << f.rdbuf();
  const std::string text = buf.str();

  Repro r;
  std::string graph_text;
  int graph_line = 0;  // lines before the graph's text
  std::optional<std::string> inputs;
  std::istringstream in(text);
  int line_no = 0;
  bool plain = false, seen_key = false;
  std::map<std::string, int> key_lines;  // where each key was given
  std::vector<int64_t> grad_inputs;      // requires_grad: the inputs that require grad
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    if (line.empty() || line[0] == '#') continue;
    if (line.rfind("graph ", 0) == 0) {
      // A graph's text alone (fx_graph_readable.txt, to_string): no keys before it.
      EMBER_CHECK_VALUE(!seen_key) << path << ":" << line_no << ": expected 'graph:' before the graph's text, found '"
                                   << line << "'";
      plain = true;
    }
    seen_key = true;
    if (plain || line == "graph:") {
      graph_line = plain ? line_no - 1 : line_no;
      std::ostringstream rest;
      if (plain) rest << line << "\n";
      rest << in.rdbuf();
      graph_text = rest.str();
      break;
    }
    // "key: value", or "key:" for an empty value (an editor may strip the blank).
    size_t colon = line.find(": ");
    if (colon == std::string::npos && line.size() > 1 && line.back() == ':') colon = line.size() - 1;
    EMBER_CHECK_VALUE(colon != std::string::npos)
        << path << ":" << line_no << ": expected 'key: value' (kind, backend, repro_after, check, failure, "
        << "tolerance, config, inputs) or 'graph:', found '" << line << "'";
    const std::string key = line.substr(0, colon), value = line.substr(std::min(colon + 2, line.size()));
    auto bad = [&](const std::string& expected) {
      EMBER_FAIL_KIND(ErrorKind::ValueError)
          << path << ":" << line_no << ": expected " << expected << ", found '" << line << "'";
    };
    // Each key but config once: a second value would silently replace the first.
    if (key != "config") {
      auto [first, inserted] = key_lines.emplace(key, line_no);
      if (!inserted) bad("one '" + key + ":' line (line " + std::to_string(first->second) + " gives it already)");
    }
    if (key == "kind") {
      if (value != "launcher" && value != "repro") bad("'kind: launcher' or 'kind: repro'");
      r.kind = value;
    } else if (key == "backend") {
      r.backend = value;
    } else if (key == "repro_after") {
      if (value != "dynamo" && value != "aot" && !value.empty()) bad("repro_after: dynamo, aot or nothing");
      r.repro_after = value;
    } else if (key == "check") {
      if (value != "error" && value != "accuracy") bad("'check: error' or 'check: accuracy'");
      r.accuracy = value == "accuracy";
    } else if (key == "failure") {
      std::istringstream words(value);
      std::string stage_word, kind_word;
      words >> stage_word;
      const auto stage = stage_named(stage_word);
      if (!stage) bad("'failure: compile|run <ErrorKind> <message>' or 'failure: accuracy <why>'");
      Failure fail;
      fail.stage = *stage;
      if (*stage != Failure::Stage::Accuracy) {
        words >> kind_word;
        const auto kind = kind_named(kind_word);
        if (!kind) bad("an error kind (RuntimeError, ValueError, ...) after '" + stage_word + "'");
        fail.kind = *kind;
      }
      std::getline(words >> std::ws, fail.message);
      r.failure = fail;
    } else if (key == "requires_grad") {
      std::istringstream words(value);
      for (std::string w; words >> w;) {
        if (w.empty() || w.find_first_not_of("0123456789") != std::string::npos || w.size() > 9)
          bad("'requires_grad: I J …' (indices of graph inputs)");
        grad_inputs.push_back(std::stoll(w));
      }
    } else if (key == "tolerance") {
      try {
        size_t used = 0;
        r.tolerance = std::stod(value, &used);
        if (used != value.size() || !(r.tolerance >= 0)) bad("a tolerance >= 0");
      } catch (const std::logic_error&) {
        bad("a number after 'tolerance:'");
      }
    } else if (key == "config") {
      const size_t eq = value.find('=');
      if (eq == std::string::npos) bad("'config: NAME=VALUE'");
      const std::string name = value.substr(0, eq);
      for (const auto& [given, v] : r.config)
        if (given == name) bad("one 'config: " + name + "=…' line");
      // The knob and its value are checked now, where the line is known, not when the
      // repro runs (setting it for a moment; ScopedConfig puts the old value back).
      try {
        ScopedConfig check({{name, value.substr(eq + 1)}});
      } catch (const Error& e) {
        bad("a knob that exists and a valid value for it (" + e.message() + ")");
      }
      r.config.emplace_back(name, value.substr(eq + 1));
    } else if (key == "inputs") {
      inputs = value;
    } else {
      bad("a key of kind, backend, repro_after, check, failure, tolerance, config, inputs");
    }
  }
  EMBER_CHECK_VALUE(!graph_text.empty()) << path << ":" << line_no
                                         << ": expected 'graph:' and the graph's text, found the end of the file";
  try {
    r.graph = parse_graph(graph_text);
  } catch (const Error& e) {
    // "graph text line N: …" → "<path>:<line in the file>: …"
    std::smatch m;
    const std::string msg = e.message();
    if (std::regex_search(msg, m, std::regex("^graph text line ([0-9]+): "))) {
      throw Error(ErrorKind::ValueError,
                  path + ":" + std::to_string(std::stoi(m[1]) + graph_line) + ": " + m.suffix().str(), "");
    }
    throw Error(ErrorKind::ValueError, path + ": " + msg, "");
  }
  const std::vector<Node*> ins = r.graph->inputs();
  // A training graph's inputs that require grad become leaves that do.
  auto mark_requires_grad = [&] {
    for (int64_t i : grad_inputs) {
      EMBER_CHECK_VALUE(i < static_cast<int64_t>(r.inputs.size()) && r.inputs[i].is_floating_point())
          << path << ":" << key_lines.at("requires_grad") << ": 'requires_grad:' names input " << i << ", but graph "
          << r.graph->name() << " has " << r.inputs.size() << " inputs"
          << (i < static_cast<int64_t>(r.inputs.size()) ? " and that one is not floating" : "");
      r.inputs[i].requires_grad_(true);
    }
  };
  if (!inputs || *inputs == "random" || inputs->starts_with("random ")) {
    uint64_t seed = 0;
    if (inputs && *inputs != "random") {
      const std::string digits = inputs->substr(7);
      EMBER_CHECK_VALUE(!digits.empty() && digits.find_first_not_of("0123456789") == std::string::npos &&
                        digits.size() < 20)
          << path << ":" << key_lines.at("inputs") << ": expected 'inputs: random SEED' (SEED below 10^19) or "
          << "'inputs: FILE.safetensors', found 'inputs: " << *inputs << "'";
      seed = std::stoull(digits);
    }
    r.inputs = random_inputs(*r.graph, seed);
    r.inputs_source = "random (seed " + std::to_string(seed) + ")";
    for (const auto& n : r.graph->nodes())
      EMBER_CHECK_VALUE(n->kind() != NodeKind::Constant)
          << path << ": graph " << r.graph->name() << " has constant " << n->target()
          << " whose value is not in the file; a repro with constants needs an inputs file";
    mark_requires_grad();
    return r;
  }
  const fs::path file = fs::path(path).parent_path() / *inputs;
  std::map<std::string, Tensor> tensors;
  try {
    tensors = load_safetensors(file.string());
  } catch (const Error& e) {
    throw Error(ErrorKind::ValueError, path + ": its inputs file " + file.string() + " cannot be read: " + e.message(),
                "");
  }
  r.inputs_source = file.string();
  size_t used = 0;  // tensors of the file read, so that a stray one is noticed
  for (size_t i = 0; i < ins.size(); ++i) {
    const std::string key = "input." + std::to_string(i);
    auto it = tensors.find(key);
    EMBER_CHECK_VALUE(it != tensors.end()) << file.string() << ": expected tensor '" << key << "' for input "
                                           << ins[i]->target() << " of graph " << r.graph->name() << ", found none";
    const TensorMeta& m = ins[i]->meta().at(0);
    EMBER_CHECK_VALUE(it->second.sizes() == IntArrayRef(m.sizes) && it->second.dtype() == m.dtype)
        << file.string() << ": tensor '" << key << "' has sizes " << it->second.sizes() << " and dtype "
        << it->second.dtype() << ", but input " << ins[i]->target() << " is " << IntArrayRef(m.sizes) << " " << m.dtype;
    r.inputs.push_back(with_geometry(it->second, m));
    ++used;
  }
  for (const auto& n : r.graph->nodes()) {
    if (n->kind() != NodeKind::Constant) continue;
    auto it = tensors.find("constant." + n->target());
    EMBER_CHECK_VALUE(it != tensors.end()) << file.string() << ": expected tensor 'constant." << n->target()
                                           << "' for a constant of graph " << r.graph->name() << ", found none";
    const TensorMeta& m = n->meta().at(0);
    EMBER_CHECK_VALUE(it->second.sizes() == IntArrayRef(m.sizes))
        << file.string() << ": tensor 'constant." << n->target() << "' has sizes " << it->second.sizes()
        << ", but the constant is " << IntArrayRef(m.sizes);
    r.graph->set_constant(n->target(), with_geometry(it->second, m));
    ++used;
  }
  if (used != tensors.size()) {
    std::set<std::string> expected;
    for (size_t i = 0; i < ins.size(); ++i) expected.insert("input." + std::to_string(i));
    for (const auto& n : r.graph->nodes())
      if (n->kind() == NodeKind::Constant) expected.insert("constant." + n->target());
    for (const auto& [name, t] : tensors) {
      EMBER_CHECK_VALUE(expected.contains(name))
          << file.string() << ": tensor '" << name << "' belongs to no input or constant of graph " << r.graph->name()
          << " (read for " << path << ")";
    }
  }
  mark_requires_grad();
  return r;
}

}  // namespace ember::debug
