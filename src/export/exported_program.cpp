// export/exported_program.cpp — ExportedProgram: binding the graph's inputs (state by
// name, then user inputs), checking user inputs, running with the interpreter or a backend,
// writing mutated buffers back; load_exported. See Note [export].
#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <tuple>

#include "ember/autograd.h"
#include "ember/compile.h"
#include "ember/ops/fft.h"
#include "export/program_impl.h"
#include "export/sym_import.h"
#include "graph/text.h"
#include "support/call_context.h"

namespace ember {

std::vector<std::string> ExportSignature::user_inputs() const {
  std::vector<std::string> out;
  for (const auto& s : inputs)
    if (s.kind == ExportInputKind::UserInput) out.push_back(s.name);
  return out;
}

std::vector<std::string> ExportSignature::user_outputs() const {
  std::vector<std::string> out;
  for (const auto& s : outputs)
    if (s.kind == ExportOutputKind::UserOutput) out.push_back(s.name);
  return out;
}

ExportedProgram::ExportedProgram() : impl_(std::make_shared<Impl>()) { impl_->graph = std::make_shared<Graph>(); }

ExportedProgram::ExportedProgram(std::shared_ptr<Graph> graph, std::map<std::string, Tensor> state)
    : ExportedProgram(graph, ExportSignature{}, std::move(state)) {}

ExportedProgram::ExportedProgram(std::shared_ptr<Graph> graph, ExportSignature signature,
                                 std::map<std::string, Tensor> state)
    : impl_(std::make_shared<Impl>()) {
  EMBER_CHECK_VALUE(graph != nullptr && graph->output_node() != nullptr) << "ExportedProgram: expected a graph with outputs";
  impl_->graph = std::move(graph);
  impl_->state = std::move(state);
  const bool derive = signature.inputs.empty() && signature.outputs.empty();
  for (Node* in : impl_->graph->inputs()) {
    if (in->kind() == NodeKind::Attribute) {
      EMBER_CHECK_VALUE(impl_->state.contains(in->target()))
          << "ExportedProgram: no state tensor for the graph's attribute '" << in->target() << "'";
      impl_->input_state_keys.push_back(in->target());
      if (derive) signature.inputs.push_back({ExportInputKind::Buffer, in->name(), in->target(), true});
    } else {
      impl_->input_state_keys.emplace_back();
      impl_->user_input_meta.push_back(in->meta().at(0));
      if (derive) signature.inputs.push_back({ExportInputKind::UserInput, in->name(), in->target(), true});
    }
  }
  if (derive)
    for (const Arg& a : impl_->graph->output_node()->args())
      signature.outputs.push_back({ExportOutputKind::UserOutput, a.value.node->name(), ""});
  impl_->signature = std::move(signature);
}

const Graph& ExportedProgram::graph() const { return *impl_->graph; }
const ExportSignature& ExportedProgram::signature() const { return impl_->signature; }
std::map<std::string, Tensor>& ExportedProgram::state() { return impl_->state; }
const std::map<std::string, Tensor>& ExportedProgram::state() const { return impl_->state; }
const std::string& ExportedProgram::schema_version() const { return impl_->schema_version; }
const std::string& ExportedProgram::torch_version() const { return impl_->torch_version; }
std::vector<std::string> ExportedProgram::dynamic_dims() const {
  return impl_->symbols ? exporting::describe_symbols(*impl_->symbols) : std::vector<std::string>();
}

void ExportedProgram::check_user_inputs(const std::vector<Tensor>& user_inputs) const {
  const std::vector<std::string> names = impl_->signature.user_inputs();
  EMBER_CHECK_VALUE(user_inputs.size() == impl_->user_input_meta.size())
      << "the exported program takes " << impl_->user_input_meta.size() << " user inputs, got " << user_inputs.size();
  const bool symbolic = impl_->symbols != nullptr;
  for (size_t i = 0; i < user_inputs.size(); ++i) {
    const TensorMeta& m = impl_->user_input_meta[i];
    const Tensor& t = user_inputs[i];
    const std::string name = i < names.size() ? names[i] : std::to_string(i);
    EMBER_CHECK_VALUE(t.defined()) << "input '" << name << "' of the exported program is an undefined tensor";
    // With dynamic dims the sizes are checked against the symbols below; here the rank.
    const bool sizes_ok = symbolic ? t.dim() == static_cast<int64_t>(m.sizes.size()) : t.sizes().vec() == m.sizes;
    EMBER_CHECK_TYPE(t.dtype() == m.dtype && sizes_ok && t.device() == m.device)
        << "input '" << name << "' of the exported program: expected " << graph_text::short_dtype(m.dtype)
        << graph_text::format_sizes(m)
        << (m.device.is_cpu() ? "" : " on " + m.device.str()) << ", got "
        << graph_text::short_dtype(t.dtype()) << graph_text::format_sizes({t.sizes().vec(), {}, t.dtype(), t.device(), 0})
        << (t.device().is_cpu() ? "" : " on " + t.device().str())
        << (symbolic ? "" : " (the program was exported with static shapes)");
  }
  if (symbolic) exporting::check_symbolic_inputs(*impl_->symbols, impl_->user_input_meta, user_inputs);
}

namespace {

/// The graph's inputs: the state tensors by name, the user inputs in order.
std::vector<Tensor> bind_inputs(const ExportedProgram::Impl& impl, const std::vector<Tensor>& user_inputs) {
  std::vector<Tensor> inputs;
  size_t next = 0;
  for (const std::string& key : impl.input_state_keys)
    inputs.push_back(key.empty() ? user_inputs.at(next++) : impl.state.at(key));
  return inputs;
}

/// Writes the buffer mutations back into the state; returns the user outputs.
std::vector<Tensor> finish(ExportedProgram::Impl& impl, std::vector<Tensor> outputs) {
  std::vector<Tensor> user;
  NoGradGuard no_grad;
  for (size_t k = 0; k < outputs.size(); ++k) {
    const ExportOutputSpec& spec = impl.signature.outputs.at(k);
    if (spec.kind == ExportOutputKind::UserOutput) {
      user.push_back(std::move(outputs[k]));
    } else {
      impl.state.at(spec.target).copy_(outputs[k]);
    }
  }
  return user;
}

}  // namespace

std::vector<Tensor> ExportedProgram::operator()(const std::vector<Tensor>& user_inputs, Loc loc) const {
  support::UserLocScope scope(loc);
  check_user_inputs(user_inputs);
  return finish(*impl_, run_graph(*impl_->graph, bind_inputs(*impl_, user_inputs)));
}

std::map<std::string, Tensor> ExportedProgram::run(const std::map<std::string, Tensor>& named_inputs, Loc loc) const {
  support::UserLocScope scope(loc);
  std::vector<Tensor> inputs;
  const std::vector<std::string> names = impl_->signature.user_inputs();
  for (const std::string& n : names) {
    auto it = named_inputs.find(n);
    EMBER_CHECK_VALUE(it != named_inputs.end()) << "the exported program's input '" << n << "' is missing";
    inputs.push_back(it->second);
  }
  for (const auto& [n, t] : named_inputs)
    EMBER_CHECK_VALUE(std::find(names.begin(), names.end(), n) != names.end())
        << "the exported program has no input named '" << n << "'";
  std::vector<Tensor> outs = (*this)(inputs, loc);
  std::map<std::string, Tensor> named;
  const std::vector<std::string> out_names = impl_->signature.user_outputs();
  for (size_t k = 0; k < outs.size(); ++k) named[out_names.at(k)] = outs[k];
  return named;
}

ExportedCallable ExportedProgram::compile(const std::string& backend) const {
  register_builtin_backends();
  Backend b = lookup_backend(backend);
  // The backend may rewrite the graph it is given: it gets a clone, compiled on the first call.
  auto compiled = std::make_shared<CompiledGraph>();
  auto graph = std::shared_ptr<Graph>(impl_->graph->clone());
  return [self = *this, b, compiled, graph, backend](const std::vector<Tensor>& user_inputs) {
    self.check_user_inputs(user_inputs);
    Impl& impl = *self.impl_;
    std::vector<Tensor> inputs = bind_inputs(impl, user_inputs);
    if (!*compiled) {
      try {
        *compiled = b(*graph, inputs);
      } catch (const Error& e) {
        throw BackendCompilerFailed(backend, e);
      }
    }
    return finish(impl, (*compiled)(inputs));
  };
}

std::pair<double, double> default_tolerances(ScalarType dtype) {
  // assert_close gives a complex dtype the tolerances of its real value type.
  switch (to_real_value_type(dtype)) {
    case kFloat: return {1.3e-6, 1e-5};
    case kDouble: return {1e-7, 1e-7};
    case kHalf: return {1e-3, 1e-5};
    case kBFloat16: return {1.6e-2, 1e-5};
    default: return {0.0, 0.0};
  }
}

namespace {

/// The values of `t` as contiguous doubles on the host: (re, im) pairs for a complex tensor.
Tensor host_doubles(const Tensor& t) {
  const Tensor host = t.cpu().contiguous();
  return (is_complex(t.dtype()) ? view_as_real(host) : host).to(kDouble).contiguous();
}

}  // namespace

CloseCheck check_close(const Tensor& got, const Tensor& want) {
  CloseCheck c;
  std::tie(c.rtol, c.atol) = default_tolerances(want.dtype());
  if (got.dtype() != want.dtype() || got.sizes() != want.sizes()) {
    std::ostringstream os;
    os << "expected " << graph_text::short_dtype(want.dtype()) << want.sizes() << ", got "
       << graph_text::short_dtype(got.dtype()) << got.sizes();
    c.mismatch = os.str();
    c.max_abs_error = std::numeric_limits<double>::infinity();
    return c;
  }
  NoGradGuard no_grad;
  // torch.isclose's rule with equal_nan, on the modulus for complex values: |got - want| <=
  // atol + rtol * |want|; NaN (in either part) matches NaN, an infinity only itself.
  const bool complex = is_complex(want.dtype());
  const Tensor g = host_doubles(got), w = host_doubles(want);
  const double* gp = g.data_ptr<double>();
  const double* wp = w.data_ptr<double>();
  const int64_t parts = complex ? 2 : 1;
  int64_t first_bad = -1;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double gr = gp[i * parts], wr = wp[i * parts];
    const double gi = complex ? gp[i * 2 + 1] : 0.0, wi = complex ? wp[i * 2 + 1] : 0.0;
    const bool got_nan = std::isnan(gr) || std::isnan(gi), want_nan = std::isnan(wr) || std::isnan(wi);
    const bool both_nan = got_nan && want_nan;
    const bool want_inf = std::isinf(wr) || std::isinf(wi);
    const bool same_inf = want_inf && gr == wr && gi == wi;
    const double err = both_nan || same_inf ? 0.0 : std::hypot(gr - wr, gi - wi);
    const double e = std::isnan(err) ? std::numeric_limits<double>::infinity() : err;
    c.max_abs_error = std::max(c.max_abs_error, e);
    if (first_bad < 0 && !both_nan && !same_inf && !(e <= c.atol + c.rtol * std::hypot(wr, wi))) first_bad = i;
  }
  c.ok = first_bad < 0;
  if (!c.ok) {
    std::ostringstream os;
    const auto value = [&](const double* p) {
      std::ostringstream v;
      if (complex)
        v << "(" << p[first_bad * 2] << (p[first_bad * 2 + 1] < 0 ? "" : "+") << p[first_bad * 2 + 1] << "j)";
      else
        v << p[first_bad];
      return v.str();
    };
    os << "element " << first_bad << " is " << value(gp) << ", expected " << value(wp);
    c.mismatch = os.str();
  }
  return c;
}

ExportedProgram load_exported(const std::string& path, Loc loc) {
  support::UserLocScope scope(loc);
  ExportedProgram p;
  p.impl_ = exporting::import_archive(exporting::read_zip(path), path);
  return p;
}

}  // namespace ember
