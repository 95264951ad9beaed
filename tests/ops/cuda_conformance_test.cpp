// Conformance on CUDA: every case of every op that runs on CUDA in this build, replayed on
// cuda:0 from tests/ops/cases_cuda/ (written on a GPU machine by `gen_cases.py --device
// cuda`: the CPU cases' samples, run by PyTorch's CUDA backend), and checked twice:
//   - against PyTorch's CUDA results: an error where PyTorch raised, else dtype, sizes,
//     values within assert_close's default tolerances, views' strides, offset and
//     aliasing, written arguments, random ops' statistics, and outputs on the device;
//   - against Ember's CPU on the same inputs: dtype, sizes, strides and values (not the
//     values of the few ops whose CUDA results differ from the CPU's by design, as
//     PyTorch's do: cpu_values_differ below).
// Gradients of the differentiable ops run through Ember's autograd on CUDA against
// PyTorch's CUDA gradients. Which ops run is asked of the registry, so kernels added later
// are covered without a list here (cuda_path below). A case that reaches an op without a
// CUDA kernel (a composite's part, a backward op) is counted as skipped, naming the op.
// Skips, saying why, without a GPU or without the case files. See docs/testing.md
// ("Conformance on CUDA"), also for running it under compute-sanitizer.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <sstream>
#include <utility>

#include "case_runner.h"
#include "ember/cuda.h"
#include "ember/ember.h"
#include "ops/dispatch.h"
#include "ops/registry.h"

namespace ember::conformance {
namespace {

namespace fs = std::filesystem;

/// How an op reaches CUDA in this build.
enum class CudaPath {
  Kernel,     // a functional op with a CUDA kernel (its `cuda` facet)
  InPlace,    // an in-place op whose functional op runs on CUDA (then copy_)
  View,       // a view: no kernel, the output shares the input's device memory
  Composite,  // decomposes into other ops; a case reaching one without a kernel is skipped
  Host,       // a data-dependent output shape: the CPU kernel on host copies, outputs moved back
  None,       // no CUDA kernel (raises on CUDA)
};

CudaPath cuda_path(const ops::OpDef& op) {
  switch (op.kind) {
    case ops::OpKind::Functional:
      return op.cuda ? CudaPath::Kernel : CudaPath::None;
    case ops::OpKind::InPlace:
      return op.functional && cuda_path(*op.functional) != CudaPath::None ? CudaPath::InPlace : CudaPath::None;
    case ops::OpKind::View:
      return CudaPath::View;
    case ops::OpKind::Composite:
      return CudaPath::Composite;
    case ops::OpKind::Dynamic:
      return CudaPath::Host;
  }
  return CudaPath::None;
}

/// The CUDA cases' directory: EMBER_CUDA_CASES_DIR when set (on a GPU machine, where the
/// source tree is elsewhere), else tests/ops/cases_cuda/ of the source tree.
std::string cuda_cases_dir() {
  const char* env = std::getenv("EMBER_CUDA_CASES_DIR");
  return env && *env ? std::string(env) : std::string(EMBER_CASES_DIR);
}

bool has_case_files(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return false;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (entry.path().extension() == ".json") return true;
  return false;
}

/// The case files, read once for all tests.
const std::vector<CaseFile>& cuda_case_files() {
  static const std::vector<CaseFile> files = load_case_files(cuda_cases_dir());
  return files;
}

class CudaConformance : public ::testing::Test {
 protected:
  void SetUp() override {
    // The cases were made with TF32 off (gen_cases.py's on_device_settings); PyTorch's default
    // lets cuDNN round float32 convolutions to TF32, and so does Ember's.
    Config& c = config();
    saved_tf32_ = {c.backends.cudnn.allow_tf32, c.backends.cuda.matmul.allow_tf32};
    c.backends.cudnn.allow_tf32 = c.backends.cuda.matmul.allow_tf32 = false;
    if (!cuda::is_available()) GTEST_SKIP() << "no CUDA device: " << cuda::unavailable_reason();
    const std::string dir = cuda_cases_dir();
    if (!has_case_files(dir)) {
      GTEST_SKIP() << "no CUDA conformance cases in " << dir
                   << ": generate them on a machine with a GPU and PyTorch: `python3 tests/ops/gen_cases.py "
                      "--device cuda` (writes tests/ops/cases_cuda/), or point EMBER_CUDA_CASES_DIR at a "
                      "directory holding them (docs/testing.md, \"Conformance on CUDA\")";
    }
  }

  void TearDown() override {
    config().backends.cudnn.allow_tf32 = saved_tf32_.first;
    config().backends.cuda.matmul.allow_tf32 = saved_tf32_.second;
  }

  /// Calls f(file, case, op) for every case whose op matches EMBER_CONFORMANCE_FILTER.
  template <typename F>
  static void for_each_cuda_case(F&& f) {
    const std::string only = filter();
    for (const CaseFile& file : cuda_case_files()) {
      for (const json& c : file.doc.at("cases")) {
        const std::string name = c.at("op").get<std::string>();
        if (only.empty() || name.find(only) != std::string::npos) f(file, c, name);
      }
    }
  }

 private:
  std::pair<bool, bool> saved_tf32_;  // cudnn, matmul
};

/// A CUDA result against Ember's CPU result of the same call: dtype, sizes, strides of
/// dims larger than 1 and (with `values`) values within the dtype's tolerances.
void same_as_cpu(const Tensor& gpu, const Tensor& cpu, const std::string& what, bool values) {
  if (gpu.defined() != cpu.defined())
    throw Mismatch{what + ": " + (gpu.defined() ? "CUDA" : "the CPU") + " gives an undefined tensor"};
  if (!gpu.defined()) return;
  if (gpu.dtype() != cpu.dtype()) {
    throw Mismatch{what + ": dtype " + std::string(dtype_name(gpu.dtype())) + ", the CPU's " +
                   std::string(dtype_name(cpu.dtype()))};
  }
  if (gpu.sizes() != cpu.sizes())
    throw Mismatch{what + ": shape " + shape_str(gpu.sizes()) + ", the CPU's " + shape_str(cpu.sizes())};
  for (int64_t d = 0; d < cpu.dim() && cpu.numel() > 0; ++d) {
    if (cpu.size(d) > 1 && gpu.stride(d) != cpu.stride(d))
      throw Mismatch{what + ": strides " + shape_str(gpu.strides()) + ", the CPU's " + shape_str(cpu.strides())};
  }
  if (values) check_close(gpu, cpu, what);
}

/// Ops whose CUDA values differ from the CPU's by design, as PyTorch's own do: checked
/// against PyTorch's CUDA values (run_case) and against the CPU's dtype, shape and strides,
/// not its values.
struct CpuValuesDiffer {
  const char* op;
  std::vector<ScalarType> dtypes;  // of the first output
  const char* why;
};
const std::vector<CpuValuesDiffer>& cpu_values_differ() {
  static const std::vector<CpuValuesDiffer> table = {
      {"aten::cumsum", {kHalf, kBFloat16},
       "PyTorch's CUDA scan rounds every partial sum to the result dtype; both CPUs add in float"},
      {"aten::col2im", {kHalf, kBFloat16},
       "PyTorch's CUDA col2im sums a pixel's block elements in float and rounds once; its CPU adds them in the "
       "tensor's dtype"},
  };
  return table;
}

/// Ops whose CUDA kernel takes dtypes PyTorch's CPU kernel rejects (with NotImplementedError,
/// as Ember's CPU does): such a case is checked against PyTorch's CUDA only.
struct CpuLacksDtype {
  const char* op;
  std::vector<ScalarType> dtypes;  // of the first tensor argument
  const char* why;
};
bool cpu_lacks_dtype(const std::string& op, const Stack& gpu_args) {
  static const std::vector<CpuLacksDtype> table = {
      {"aten::grid_sampler_2d", {kHalf, kBFloat16}, "PyTorch's CPU grid_sampler_2d is float and double only"},
  };
  for (const CpuLacksDtype& d : table) {
    if (op != d.op || gpu_args.empty() || !gpu_args[0].is_tensor()) continue;
    const ScalarType dt = gpu_args[0].to_tensor().dtype();
    if (std::find(d.dtypes.begin(), d.dtypes.end(), dt) != d.dtypes.end()) return true;
  }
  return false;
}
bool values_differ_from_cpu(const std::string& op, const Tensor& out) {
  for (const CpuValuesDiffer& d : cpu_values_differ())
    if (op == d.op && out.defined() && std::find(d.dtypes.begin(), d.dtypes.end(), out.dtype()) != d.dtypes.end())
      return true;
  return false;
}

/// Outputs whose CUDA memory format differs from the CPU's by design, as PyTorch's does,
/// compared with the CPU's made contiguous: a float64 convolution (and its gradients) of a
/// channels_last input or weight is channels_last on the CPU and contiguous on CUDA, where
/// cuDNN never runs float64 in NHWC (PyTorch's cudnn_conv_suggest_memory_format); batch
/// norm's backward in evaluation mode gives a contiguous grad_input on CUDA (output 0).
bool contiguous_on_cuda(const std::string& op, const Tensor& out, size_t output, const Stack& args) {
  if (!out.defined()) return false;
  if (op == "aten::convolution" || op == "aten::convolution_backward") return out.dtype() == kDouble;
  return op == "aten::native_batch_norm_backward" && output == 0 && !args.at(7).to_bool();
}

/// Outputs whose layout on CUDA follows a rule of its own, as PyTorch's does: a 3-D
/// convolution's (and its gradients') is cuDNN's rule, which reads no sizes, where the
/// CPU's is oneDNN's, which does (Note [3-D convolution]): a float32 channels_last_3d input
/// of batch 1 gives NCDHW on the CPU and NDHWC on CUDA. Their CUDA strides are checked
/// against PyTorch's CUDA (run_case, the rows with check_strides); against the CPU only
/// their values, both made contiguous.
bool layout_own_on_cuda(const std::string& op, const Tensor& out) {
  return out.defined() && out.dim() == 5 && (op == "aten::convolution" || op == "aten::convolution_backward");
}

/// Cases where PyTorch's CUDA values depart from PyTorch's own CPU values and from the
/// exact result, so Ember cannot match both: checked against PyTorch's CUDA dtype, shape
/// and strides, and against Ember's CPU values (compare_with_cpu), which the CPU
/// conformance run holds to PyTorch's CPU. PyTorch's own op tests mark native_batch_norm's
/// CPU/CUDA comparison as an expected failure.
struct PyTorchCudaDeparts {
  const char* op;
  const char* arg;                  // the argument whose dtype selects the cases
  std::vector<ScalarType> dtypes;   // of that argument
  const char* beside;               // an argument that must be float32 (mixed precision)
  const char* why;
};
const std::vector<PyTorchCudaDeparts>& pytorch_cuda_departs() {
  static const std::vector<PyTorchCudaDeparts> table = {
      {"aten::native_batch_norm_backward", "input", {kBFloat16, kHalf}, "weight",
       "PyTorch 2.11's CUDA kernel, for bfloat16 input beside float32 parameters, gives grad_bias 4.0137 where "
       "the float64 sum of grad_out, PyTorch's CPU and Ember give 4.0027 (case nn_backward/…/8), and grad_input "
       "follows it"},
  };
  return table;
}
/// The dtype of the case's tensor argument `name`; nullopt when it is no tensor.
std::optional<ScalarType> case_arg_dtype(const CaseFile& f, const json& c, const std::string& name) {
  for (const json& a : c.at("args"))
    if (a.at("name") == name && a.contains("ref")) return f.tensors.at(a.at("ref").get<std::string>()).dtype();
  return std::nullopt;
}
bool pytorch_cuda_departs_on(const CaseFile& f, const json& c, const std::string& op) {
  for (const PyTorchCudaDeparts& d : pytorch_cuda_departs()) {
    if (op != d.op) continue;
    const std::optional<ScalarType> t = case_arg_dtype(f, c, d.arg);
    if (t && std::find(d.dtypes.begin(), d.dtypes.end(), *t) != d.dtypes.end() &&
        case_arg_dtype(f, c, d.beside) == kFloat)
      return true;
  }
  return false;
}

/// The same case on Ember's CPU, against what it gave on CUDA (outputs and written
/// arguments).
void compare_with_cpu(const CaseFile& f, const ops::OpDef& op, const json& c, const CaseRun& gpu) {
  Stack args = build_stack(f, op, c, kCPU);
  const Stack kept = args;
  Stack result;
  try {
    result = ops::call(op, args);
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::NotImplementedError && cpu_lacks_dtype(op.schema.qualified_name(), gpu.args)) return;
    throw Mismatch{std::string("[vs Ember's CPU] the CPU raises ") + error_kind_name(e.kind()) + ", CUDA does not: " +
                   e.what()};
  }
  const json& expect = c.at("expect");
  const json& outputs = expect.at("outputs");
  (void)pair_outputs(result, outputs);  // the CPU's result has the expected outputs' kinds
  const auto gpu_outs = pair_outputs(gpu.result, outputs);
  const bool values = c.value("values", true) && !expect.contains("stat") &&
                      !(gpu_outs.size() > 0 && values_differ_from_cpu(op.schema.qualified_name(), gpu_outs[0].first));
  // Output by output, as the schema numbers them: where PyTorch's own CPU and CUDA disagree
  // on an output's existence, shape, dtype or integer values (its entry's `cpu`), Ember's do
  // too, and that output is checked against PyTorch's CUDA only (run_case).
  for (size_t i = 0; i < outputs.size(); ++i) {
    const json& e = outputs[i];
    if (e.contains("cpu") || e.value("none", false)) continue;
    const std::string what = "[vs Ember's CPU] output " + std::to_string(i);
    std::vector<Tensor> cpu_ts, gpu_ts;
    if (e.contains("list")) {
      cpu_ts = result[i].to_tensor_list();
      gpu_ts = gpu.result[i].to_tensor_list();
    } else {
      cpu_ts = {result[i].to_tensor()};
      gpu_ts = {gpu.result[i].to_tensor()};
    }
    for (size_t j = 0; j < cpu_ts.size() && j < gpu_ts.size(); ++j) {
      const Tensor& cpu = cpu_ts[j];
      const std::string& name = op.schema.qualified_name();
      if (layout_own_on_cuda(name, gpu_ts[j]))
        same_as_cpu(gpu_ts[j].contiguous(), cpu.defined() ? cpu.contiguous() : cpu, what, values);
      else
        same_as_cpu(gpu_ts[j], contiguous_on_cuda(name, cpu, i, gpu.args) ? cpu.contiguous() : cpu, what, values);
    }
  }
  for (const json& m : expect.value("mutated", json::array())) {
    const std::string name = m.at("arg").get<std::string>();
    const auto i = static_cast<size_t>(op.schema.index_of(name));
    same_as_cpu(gpu.args.at(i).to_tensor(), kept.at(i).to_tensor(),
                "[vs Ember's CPU] argument '" + name + "' after the call", values);
  }
}

/// Which registered ops run on CUDA in this build, by path, as one line.
std::string selection_line() {
  std::map<CudaPath, int> n;
  for (const ops::OpDef* op : ops::registry().all()) ++n[cuda_path(*op)];
  std::ostringstream os;
  os << "cuda conformance: this build runs on CUDA " << n[CudaPath::Kernel] << " ops with a CUDA kernel, "
     << n[CudaPath::InPlace] << " in-place forms of them, " << n[CudaPath::View] << " views and "
     << n[CudaPath::Composite] << " composites, " << n[CudaPath::Host]
     << " data-dependent ops through the host; " << n[CudaPath::None] << " registered ops do not run on CUDA";
  return os.str();
}

TEST_F(CudaConformance, EveryCaseOfEveryOpOnCudaMatchesPyTorchAndEmbersCpu) {
  std::cout << selection_line() << std::endl;
  Tally tally("cuda conformance");
  for_each_cuda_case([&](const CaseFile& f, const json& c, const std::string& name) {
    const ops::OpDef* op = ops::registry().find(name);
    if (op && cuda_path(*op) == CudaPath::None) return;
    tally.run(name, c, "cuda ", [&] {
      if (!op) throw Mismatch{"op not registered"};
      json checked = c;
      if (pytorch_cuda_departs_on(f, c, name)) checked["values"] = false;  // Ember's CPU checks them
      const CaseRun gpu = run_case(f, *op, checked, kCUDA);
      cuda::synchronize();  // a failing kernel is reported with its own case
      if (!c.at("expect").contains("error")) compare_with_cpu(f, *op, c, gpu);
    });
  });
  tally.report();
}

TEST_F(CudaConformance, EveryGradientOnCudaMatchesPyTorch) {
  Tally tally("cuda gradients");
  for_each_cuda_case([&](const CaseFile& f, const json& c, const std::string& name) {
    if (!c.contains("grads")) return;
    const ops::OpDef* op = ops::registry().find(name);
    // Composite ops (the losses) differentiate through the ops they decompose into.
    if (!op || cuda_path(*op) == CudaPath::None || !(op->derivative || op->decomposition)) return;
    tally.run(name, c, "cuda grad ", [&] {
      run_grad(f, *op, c, kCUDA);
      cuda::synchronize();
    });
  });
  tally.report();
}

TEST_F(CudaConformance, EveryOpWithACudaKernelHasCudaCases) {
  std::map<std::string, json> entries;  // op -> its entry in a case file's "ops"
  for (const CaseFile& f : cuda_case_files())
    for (auto it = f.doc.at("ops").begin(); it != f.doc.at("ops").end(); ++it) entries[it.key()] = *it;
  std::vector<std::string> missing;
  for (const ops::OpDef* op : ops::registry().all()) {
    const CudaPath path = cuda_path(*op);
    if (path != CudaPath::Kernel && path != CudaPath::InPlace && path != CudaPath::Host) continue;
    auto it = entries.find(op->name);
    if (it != entries.end() && (it->second.value("cases", int64_t{0}) > 0 || it->second.contains("reason"))) continue;
    std::string why = it == entries.end() ? "not in the case files (regenerate them)" : "no case";
    if (it != entries.end() && it->second.contains("generator_error"))
      why = "the generator failed: " + it->second.at("generator_error").get<std::string>();
    else if (it != entries.end() && it->second.contains("left_out"))
      why = "every sample left out (summary.txt says why)";
    std::cout << "no CUDA conformance cases: " << op->name << ": " << why << "\n";
    missing.push_back(op->name);
  }
  EXPECT_TRUE(missing.empty()) << missing.size() << " ops with a CUDA kernel have no CUDA cases in "
                               << cuda_cases_dir();
}

}  // namespace
}  // namespace ember::conformance
