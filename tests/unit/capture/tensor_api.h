// tests/unit/capture/tensor_api.h — the public API of ember::Tensor as include/ember/tensor.h
// declares it, read from the header itself, so that a test over "every Tensor method" can
// fail when a method is added without a row (tensor_methods_compiled_test.cpp).
#pragma once

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace ember::testing {

namespace tensor_api_detail {

inline std::string strip_comments(const std::string& text) {
  std::string out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (auto p = line.find("//"); p != std::string::npos) line.resize(p);
    out += line + "\n";
  }
  return out;
}

/// Drops preprocessor lines and their continuations: the macros that declare the
/// methods of tensor_methods.def's rows are read through table_methods instead.
inline std::string strip_directives(const std::string& text) {
  std::string out;
  std::istringstream in(text);
  bool continued = false;
  for (std::string line; std::getline(in, line);) {
    const size_t first = line.find_first_not_of(" \t");
    const bool directive = continued || (first != std::string::npos && line[first] == '#');
    continued = directive && !line.empty() && line.back() == '\\';
    if (!directive) out += line + "\n";
  }
  return out;
}

/// Replaces every brace-enclosed body (inline definitions, struct bodies) by ";".
inline std::string drop_bodies(const std::string& text) {
  std::string out;
  int depth = 0;
  for (char c : text) {
    if (c == '{') {
      if (depth++ == 0) out += ';';
    } else if (c == '}') {
      --depth;
    } else if (depth == 0) {
      out += c;
    }
  }
  return out;
}

/// Splits at top-level commas (outside (), <> and {}).
inline std::vector<std::string> split_params(const std::string& params) {
  std::vector<std::string> out;
  std::string cur;
  int depth = 0;
  for (char c : params) {
    if (c == '(' || c == '<' || c == '{') ++depth;
    if (c == ')' || c == '>' || c == '}') --depth;
    if (c == ',' && depth == 0) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (cur.find_first_not_of(" \n\t") != std::string::npos) out.push_back(cur);
  return out;
}

/// "const Scalar& alpha = 1" -> "Scalar"; "Loc loc = Loc::current()" -> "" (dropped).
inline std::string param_type(std::string p) {
  int depth = 0;
  for (size_t i = 0; i < p.size(); ++i) {  // drop a default value
    if (p[i] == '(' || p[i] == '<') ++depth;
    if (p[i] == ')' || p[i] == '>') --depth;
    if (p[i] == '=' && depth == 0) {
      p.resize(i);
      break;
    }
  }
  p = std::regex_replace(p, std::regex(R"(\bconst\b)"), " ");
  // The last top-level word is the parameter's name.
  std::vector<std::string> words;
  std::string cur;
  depth = 0;
  for (char c : p) {
    if (c == '(' || c == '<') ++depth;
    if (c == ')' || c == '>') --depth;
    if ((c == ' ' || c == '\n' || c == '\t') && depth == 0) {
      if (!cur.empty()) words.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) words.push_back(cur);
  if (words.size() > 1) words.pop_back();
  std::string type;
  for (const auto& w : words) type += w;
  type = std::regex_replace(type, std::regex(R"([\s&])"), "");
  return type == "Loc" ? "" : type;
}

/// One declaration ("Tensor sum(IntArrayRef dim, bool keepdim = false, Loc loc = …) const")
/// as "sum(IntArrayRef,bool)"; templates as "item<T>()"; "" when it declares no function.
inline std::string key_of(std::string decl) {
  decl = std::regex_replace(decl, std::regex(R"(^\s*(public|private|protected)\s*:)"), "");
  const bool is_template = std::regex_search(decl, std::regex(R"(^\s*template\s*<)"));
  if (is_template) decl = decl.substr(decl.find('>') + 1);
  std::string name;
  size_t open;
  if (size_t op = decl.find("operator"); op != std::string::npos) {
    open = decl.find('(', op + 8);
    if (decl.compare(op + 8, 2, "()") == 0) open = decl.find('(', op + 10);
    name = std::regex_replace(decl.substr(op, open - op), std::regex(R"(\s+)"), " ");
    while (!name.empty() && name.back() == ' ') name.pop_back();
    if (name.size() > 8 && name[8] == ' ' && !std::isalpha(static_cast<unsigned char>(name[9]))) name.erase(8, 1);
  } else {
    std::smatch m;
    if (!std::regex_search(decl, m, std::regex(R"((~?\w+)\s*\()"))) return "";
    name = m[1];
    open = static_cast<size_t>(m.position(1) + m.length(1));
    open = decl.find('(', open);
  }
  int depth = 0;
  size_t close = open;
  for (; close < decl.size(); ++close) {
    if (decl[close] == '(') ++depth;
    if (decl[close] == ')' && --depth == 0) break;
  }
  std::string key = name + (is_template ? "<T>" : "") + "(";
  bool first = true;
  for (const auto& p : split_params(decl.substr(open + 1, close - open - 1))) {
    const std::string t = param_type(p);
    if (t.empty()) continue;
    key += (first ? "" : ",") + t;
    first = false;
  }
  return key + ")";
}

}  // namespace tensor_api_detail

/// The methods the rows of ember/tensor_methods.def declare (the macros of tensor.h), as
/// key_of spells them: "exp()", "exp_()", "mul(Tensor)", "add(Scalar,Scalar)", …
inline std::vector<std::string> table_methods(const std::string& def_path) {
  std::ifstream in(def_path);
  std::vector<std::string> keys;
  const std::regex row(R"(^EMBER_TENSOR_(\w+)\((\w+)\))");
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (!std::regex_search(line, m, row)) continue;
    const std::string kind = m[1], n = m[2];
    if (kind == "UNARY") {
      keys.insert(keys.end(), {n + "()", n + "_()"});
    } else if (kind == "UNARY_FUNCTIONAL") {
      keys.push_back(n + "()");
    } else if (kind == "BINARY") {
      keys.insert(keys.end(), {n + "(Tensor)", n + "(Scalar)", n + "_(Tensor)", n + "_(Scalar)"});
    } else if (kind == "BINARY_ALPHA") {
      keys.insert(keys.end(),
                  {n + "(Tensor,Scalar)", n + "(Scalar,Scalar)", n + "_(Tensor,Scalar)", n + "_(Scalar,Scalar)"});
    } else if (kind == "BINARY_TENSOR") {
      keys.insert(keys.end(), {n + "(Tensor)", n + "_(Tensor)"});
    } else if (kind == "BINARY_TENSOR_FUNCTIONAL") {
      keys.push_back(n + "(Tensor)");
    } else {
      keys.push_back("unknown row kind EMBER_TENSOR_" + kind);  // matches no table row: the test fails
    }
  }
  return keys;
}

/// Every member function of class Tensor (constructors included) and every operator
/// declared on tensors after the class, in `header`, as key_of spells them; with the
/// methods of ember/tensor_methods.def's rows where the class includes it.
inline std::set<std::string> declared_tensor_api(const std::string& header) {
  using namespace tensor_api_detail;
  std::ifstream in(header);
  std::stringstream ss;
  ss << in.rdbuf();
  // Brace-initialized defaults ("= {}") are values, not bodies.
  const std::string text =
      std::regex_replace(strip_directives(strip_comments(ss.str())), std::regex(R"(=\s*\{[^{}]*\})"), "= _");
  const size_t cls = text.find("class Tensor {");
  const size_t priv = text.find("\n private:", cls);
  const size_t cls_end = text.find("\n};", priv);
  const size_t templates = text.find("template <typename T>", cls_end);
  if (cls == std::string::npos || priv == std::string::npos || cls_end == std::string::npos) return {};
  std::set<std::string> keys;
  auto add_all = [&](const std::string& section, bool operators_only) {
    std::stringstream decls(drop_bodies(section));
    for (std::string d; std::getline(decls, d, ';');) {
      if (d.find('(') == std::string::npos) continue;
      if (std::regex_search(d, std::regex(R"(^\s*struct\b)"))) continue;
      if (operators_only && d.find("operator") == std::string::npos) continue;
      if (std::string k = key_of(d); !k.empty()) keys.insert(k);
    }
  };
  add_all(text.substr(cls + 14, priv - cls - 14), false);
  add_all(text.substr(cls_end + 3, templates - cls_end - 3), true);
  if (ss.str().find("#include \"ember/tensor_methods.def\"") != std::string::npos) {
    const std::string def = header.substr(0, header.rfind('/') + 1) + "tensor_methods.def";
    for (const std::string& k : table_methods(def)) keys.insert(k);
  }
  return keys;
}

}  // namespace ember::testing
