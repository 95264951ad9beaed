// Every public method of ember::Tensor (and every operator on tensors) called inside a
// compiled function, with the eager and the inductor backends, must give what the same call
// gives eagerly: each result's values, dtype, sizes, strides and requires_grad, the inputs
// afterwards (in-place writes), their gradients and version counters. Two calls each: the
// one that traces and one with new values (a replay, or segment mode after a break).
// The table is checked against the methods include/ember/tensor.h declares, so a method
// added there without a row here fails TheTableHasARowForEveryDeclaredMethod.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <set>
#include <sstream>

#include "ember/ember.h"
#include "support/compile_helpers.h"
#include "unit/capture/tensor_api.h"

namespace ember {
namespace {

using Results = std::vector<Tensor>;
using Fn = std::function<Results(const Tensor& a, const Tensor& b)>;

/// A number or a string as a tensor, so that a row can return what a method answers.
Tensor num(double v) { return tensor<double>(std::vector<double>{v}); }
Tensor ints(IntArrayRef v) { return tensor<int64_t>(v.vec(), {static_cast<int64_t>(v.size())}); }
Tensor text(const std::string& s) {
  return tensor<uint8_t>(std::vector<uint8_t>(s.begin(), s.end()), {static_cast<int64_t>(s.size())});
}

struct Row {
  std::string key;                // the method as declared_tensor_api() spells it
  Fn fn;                          // called on a, b: float32 [3, 4]
  bool grad = false;              // `a` is a leaf that requires grad
  const char* differs = nullptr;  // why the compiled answer differs from eager by design
  std::vector<std::string> also;  // further methods the row calls (a row of tensor_methods.def)
};

Tensor triple(const Tensor& g) { return g * 3; }

std::vector<Row> rows() {
  return {
      // --- construction and identity -------------------------------------------------
      {"Tensor()",
       [](const Tensor& a, const Tensor&) {
         return Results{num(Tensor().defined()), a * 1};
       }},
      {"Tensor(std::shared_ptr<TensorImpl>)",
       [](const Tensor& a, const Tensor&) {
         Tensor t(a.impl_ptr());
         return Results{t * 2, num(t.is_same(a))};
       }},
      {"defined()", [](const Tensor& a, const Tensor&) { return Results{num((a * 2).defined())}; }},
      {"impl()", [](const Tensor& a, const Tensor&) { return Results{num(a.impl() == a.impl_ptr().get())}; }},
      {"impl_ptr()", [](const Tensor& a, const Tensor&) { return Results{num(a.impl_ptr() != nullptr)}; }},
      {"is_same(Tensor)",
       [](const Tensor& a, const Tensor& b) {
         Tensor c = a;
         return Results{num(c.is_same(a)), num(a.is_same(b)), num(a.view({12}).is_same(a))};
       }},
      {"is_fake()",
       [](const Tensor& a, const Tensor&) {
         return Results{num(a.is_fake()), num((a * 2).is_fake())};
       },
       false, "a traced tensor is a fake by design: is_fake() is how code asks whether a tensor holds data yet"},
      // --- metadata ---------------------------------------------------------------------
      {"sizes()",
       [](const Tensor& a, const Tensor&) {
         return Results{ints(a.t().sizes()), ints((a * 2).sizes())};
       }},
      {"strides()",
       [](const Tensor& a, const Tensor&) {
         return Results{ints(a.t().strides()), ints(a.strides())};
       }},
      {"size(int64_t)",
       [](const Tensor& a, const Tensor&) {
         return Results{num(a.size(-1)), num(a.t().size(0))};
       }},
      {"stride(int64_t)",
       [](const Tensor& a, const Tensor&) {
         return Results{num(a.t().stride(0)), num(a.stride(-1))};
       }},
      {"dim()",
       [](const Tensor& a, const Tensor&) {
         return Results{num((a * 2).dim()), num(a.sum().dim())};
       }},
      {"ndimension()", [](const Tensor& a, const Tensor&) { return Results{num(a.unsqueeze(0).ndimension())}; }},
      {"numel()", [](const Tensor& a, const Tensor&) { return Results{num(a.narrow(1, 0, 2).numel())}; }},
      {"storage_offset()",
       [](const Tensor& a, const Tensor&) { return Results{num(a.narrow(1, 1, 2).storage_offset())}; }},
      {"dtype()", [](const Tensor& a, const Tensor&) { return Results{num(static_cast<int>(a.to(kDouble).dtype()))}; }},
      {"scalar_type()",
       [](const Tensor& a, const Tensor&) { return Results{num(static_cast<int>((a > 0).scalar_type()))}; }},
      {"device()", [](const Tensor& a, const Tensor&) { return Results{text((a * 2).device().str())}; }},
      {"is_meta()", [](const Tensor& a, const Tensor&) { return Results{num((a * 2).is_meta())}; }},
      {"is_cpu()", [](const Tensor& a, const Tensor&) { return Results{num((a * 2).is_cpu())}; }},
      {"is_cuda()", [](const Tensor& a, const Tensor&) { return Results{num((a * 2).is_cuda())}; }},
      {"is_pinned()", [](const Tensor& a, const Tensor&) { return Results{num((a * 2).is_pinned())}; }},
      {"is_contiguous()",
       [](const Tensor& a, const Tensor&) {
         return Results{num(a.t().is_contiguous()), num((a * 2).is_contiguous())};
       }},
      {"is_floating_point()",
       [](const Tensor& a, const Tensor&) {
         return Results{num((a > 0).is_floating_point()), num(a.is_floating_point())};
       }},
      {"element_size()",
       [](const Tensor& a, const Tensor&) { return Results{num(static_cast<double>(a.to(kHalf).element_size()))}; }},
      {"storage()",
       [](const Tensor& a, const Tensor&) {
         Tensor y = a * 2;
         return Results{num(static_cast<double>(y.storage()->nbytes())), text(y.storage()->device().str()),
                        num(a.t().storage() == a.storage())};
       }},
      {"_version()",
       [](const Tensor& a, const Tensor& b) {
         Tensor c = a * 1;
         const uint64_t v0 = c._version();
         c.add_(b);
         c.mul_(2);
         Tensor d = c.t();
         d.zero_();
         return Results{num(static_cast<double>(c._version() - v0))};
       }},
      // --- data (graph breaks inside a compiled function) -------------------------------
      {"data_ptr<T>()", [](const Tensor& a, const Tensor&) { return Results{num((a * 2).data_ptr<float>()[1])}; }},
      {"raw_data_ptr()",
       [](const Tensor& a, const Tensor&) {
         Tensor y = a + 1;
         float v;
         std::memcpy(&v, y.raw_data_ptr(), sizeof v);
         return Results{num(v), y * 2};
       }},
      {"require_data(char*)",
       [](const Tensor& a, const Tensor&) {
         Tensor y = a * 3;
         y.require_data("a test's read");
         return Results{y, y + 1};
       }},
      {"item()", [](const Tensor& a, const Tensor&) { return Results{num((a * 2).sum().item().to<double>())}; }},
      {"item<T>()", [](const Tensor& a, const Tensor&) { return Results{num((a * 2).sum().item<double>())}; }},
      {"to_vector<T>()", [](const Tensor& a, const Tensor&) { return Results{tensor((a * 2).to_vector<float>())}; }},
      {"is_nonzero()", [](const Tensor& a, const Tensor&) { return Results{num((a.sum() > 0).is_nonzero())}; }},
      {"operator bool()",
       [](const Tensor& a, const Tensor&) {
         if (a.sum() > 0) return Results{a + 1};
         return Results{a - 1};
       }},
      {"str()", [](const Tensor& a, const Tensor&) { return Results{text((a * 2).str())}; }},
      {"operator<<(std::ostream,TensorArg)",
       [](const Tensor& a, const Tensor&) {
         std::ostringstream os;
         os << a.t() * 2;
         return Results{text(os.str())};
       }},
      // --- views ------------------------------------------------------------------------
      {"view(IntArrayRef)",
       [](const Tensor& a, const Tensor&) {
         return Results{(a * 1).view(std::vector<int64_t>{4, 3}), a.view(std::vector<int64_t>{12})};
       }},
      {"view(std::initializer_list<SymInt>)",
       [](const Tensor& a, const Tensor&) {
         return Results{(a * 1).view({4, 3}), a.view({sym_size(a, 0) * 2, -1})};
       }},
      {"view(SymIntArrayRef)",
       [](const Tensor& a, const Tensor&) { return Results{a.view(std::vector<SymInt>{sym_numel(a)})}; }},
      {"reshape(IntArrayRef)",
       [](const Tensor& a, const Tensor&) {
         return Results{a.t().reshape(std::vector<int64_t>{12}), a.reshape(std::vector<int64_t>{2, 6})};
       }},
      {"reshape(std::initializer_list<SymInt>)",
       [](const Tensor& a, const Tensor&) {
         return Results{a.t().reshape({12}), a.t().reshape({sym_size(a, 1), sym_size(a, 0)})};
       }},
      {"reshape(SymIntArrayRef)",
       [](const Tensor& a, const Tensor&) { return Results{a.t().reshape(std::vector<SymInt>{sym_numel(a)})}; }},
      {"permute(IntArrayRef)",
       [](const Tensor& a, const Tensor&) {
         return Results{a.permute({1, 0}), (a * 2).permute({1, 0})};
       }},
      {"transpose(int64_t,int64_t)", [](const Tensor& a, const Tensor&) { return Results{a.transpose(0, 1)}; }},
      {"t()",
       [](const Tensor& a, const Tensor&) {
         return Results{a.t(), a.t() + 1};
       }},
      {"expand(IntArrayRef)",
       [](const Tensor& a, const Tensor&) {
         return Results{a.narrow(0, 0, 1).expand(std::vector<int64_t>{3, 4}) * 1};
       }},
      {"expand(std::initializer_list<SymInt>)",
       [](const Tensor& a, const Tensor&) {
         return Results{a.narrow(0, 0, 1).expand({sym_size(a, 0), -1}) * 1};
       }},
      {"expand(SymIntArrayRef)",
       [](const Tensor& a, const Tensor&) {
         return Results{a.narrow(0, 0, 1).expand(std::vector<SymInt>{2, sym_size(a, 1)}) * 1};
       }},
      {"expand_as(Tensor)",
       [](const Tensor& a, const Tensor& b) { return Results{a.sum({0}, true).expand_as(b) + 0}; }},
      {"slice(int64_t,std::optional<SymInt>,std::optional<SymInt>,int64_t)",
       [](const Tensor& a, const Tensor&) {
         return Results{a.slice(1, 1, 4, 2), a.slice(0), a.slice(1, std::nullopt, sym_size(a, 1) / 2)};
       }},
      {"narrow(int64_t,SymInt,SymInt)",
       [](const Tensor& a, const Tensor&) {
         return Results{a.narrow(1, 1, 2), a.narrow(0, 0, sym_size(a, 0) - 1)};
       }},
      {"select(int64_t,SymInt)",
       [](const Tensor& a, const Tensor&) {
         return Results{a.select(1, 2), a.select(0, -1), a.select(1, sym_size(a, 1) - 1)};
       }},
      {"squeeze()", [](const Tensor& a, const Tensor&) { return Results{a.narrow(0, 0, 1).squeeze()}; }},
      {"squeeze(int64_t)", [](const Tensor& a, const Tensor&) { return Results{a.unsqueeze(0).squeeze(0)}; }},
      {"unsqueeze(int64_t)",
       [](const Tensor& a, const Tensor&) {
         return Results{a.unsqueeze(1), a.unsqueeze(-1)};
       }},
      {"as_strided(IntArrayRef,IntArrayRef,std::optional<int64_t>)",
       [](const Tensor& a, const Tensor&) {
         return Results{a.as_strided(std::vector<int64_t>{2, 2}, std::vector<int64_t>{1, 4}, 1) * 1};
       }},
      {"as_strided(std::initializer_list<SymInt>,std::initializer_list<SymInt>,std::optional<SymInt>)",
       [](const Tensor& a, const Tensor&) {
         return Results{a.as_strided({2, 2}, {1, 4}, 1) * 1,
                        a.as_strided({sym_size(a, 0) - 1, 2}, {sym_size(a, 1), 1}, sym_size(a, 1)) * 1};
       }},
      {"as_strided(SymIntArrayRef,SymIntArrayRef,std::optional<SymInt>)",
       [](const Tensor& a, const Tensor&) {
         return Results{a.as_strided(std::vector<SymInt>{sym_size(a, 0)}, std::vector<SymInt>{sym_size(a, 1)}) * 1};
       }},
      {"flatten(int64_t,int64_t)",
       [](const Tensor& a, const Tensor&) {
         return Results{a.flatten(), a.t().flatten()};
       }},
      {"unflatten(int64_t,IntArrayRef)",
       [](const Tensor& a, const Tensor&) {
         return Results{a.unflatten(1, std::vector<int64_t>{2, 2})};
       }},
      {"unflatten(int64_t,std::initializer_list<SymInt>)",
       [](const Tensor& a, const Tensor&) {
         return Results{a.unflatten(1, {2, 2}), a.unflatten(1, {SymInt(2), -1})};
       }},
      {"unflatten(int64_t,SymIntArrayRef)",
       [](const Tensor& a, const Tensor&) {
         return Results{a.unflatten(1, std::vector<SymInt>{2, sym_size(a, 1) / 2})};
       }},
      {"contiguous()",
       [](const Tensor& a, const Tensor&) {
         return Results{a.t().contiguous(), a.contiguous()};
       }},
      {"clone()",
       [](const Tensor& a, const Tensor&) {
         return Results{a.t().clone(), a.clone()};
       }},
      {"to(ScalarType)",
       [](const Tensor& a, const Tensor&) {
         return Results{a.to(kDouble), (a * 10).to(kLong)};
       }},
      {"to(Device)",
       [](const Tensor& a, const Tensor&) {
         return Results{a.to(Device("cpu")), (a * 2).to(Device("cpu"))};
       }},
      {"to(Device,bool)",
       [](const Tensor& a, const Tensor&) {
         return Results{a.to(Device("cpu"), true), (a * 2).to(kCPU, false)};
       }},
      {"cpu()", [](const Tensor& a, const Tensor&) { return Results{a.cpu(), (a * 2).cpu()}; }},
      // A GPU and page-locked memory need a CUDA device: without one these rows compare
      // what they can (is_available), with one they go there and back.
      {"cuda(int,bool)",
       [](const Tensor& a, const Tensor&) {
         if (!cuda::is_available()) return Results{num(cuda::device_count())};
         return Results{(a * 2).cuda().cpu()};
       }},
      {"pin_memory()",
       [](const Tensor& a, const Tensor&) {
         if (!cuda::is_available()) return Results{num(cuda::device_count())};
         return Results{(a * 2).pin_memory()};
       }},
      {"operator[](int64_t)",
       [](const Tensor& a, const Tensor&) {
         return Results{a[1], a[-1] * 2};
       }},
      // --- ops as methods ---------------------------------------------------------------
      {"add(Tensor,Scalar)",
       [](const Tensor& a, const Tensor& b) {
         return Results{a.add(b), a.add(b, 2)};
       }},
      {"sub(Tensor,Scalar)",
       [](const Tensor& a, const Tensor& b) {
         return Results{a.sub(b), a.sub(b, 0.5)};
       }},
      {"mul(Tensor)", [](const Tensor& a, const Tensor& b) { return Results{a.mul(b)}; }},
      {"div(Tensor)", [](const Tensor& a, const Tensor& b) { return Results{a.div(b.abs() + 1)}; }},
      {"pow(Scalar)",
       [](const Tensor& a, const Tensor&) {
         return Results{a.abs().pow(1.5), a.pow(2)};
       }},
      {"neg()", [](const Tensor& a, const Tensor&) { return Results{a.neg()}; }},
      {"exp()", [](const Tensor& a, const Tensor&) { return Results{a.exp()}; }},
      {"log()", [](const Tensor& a, const Tensor&) { return Results{(a.abs() + 1).log()}; }},
      {"sqrt()", [](const Tensor& a, const Tensor&) { return Results{a.abs().sqrt()}; }},
      {"abs()", [](const Tensor& a, const Tensor&) { return Results{a.abs()}; }},
      {"tanh()", [](const Tensor& a, const Tensor&) { return Results{a.tanh()}; }},
      {"sigmoid()", [](const Tensor& a, const Tensor&) { return Results{a.sigmoid()}; }},
      {"relu()", [](const Tensor& a, const Tensor&) { return Results{a.relu()}; }},
      {"pow(Tensor)", [](const Tensor& a, const Tensor& b) { return Results{a.abs().pow(b)}; }},
      {"pow_(Scalar)",
       [](const Tensor& a, const Tensor&) {
         Tensor c = a * 1;
         c.pow_(2);
         return Results{c};
       }},
      {"pow_(Tensor)",
       [](const Tensor& a, const Tensor& b) {
         Tensor c = a.abs() + 1;
         c.pow_(b);
         return Results{c};
       }},
      {"where(Tensor,Tensor)", [](const Tensor& a, const Tensor& b) { return Results{a.where(a > b, b)}; }},
      {"clamp(std::optional<Scalar>,std::optional<Scalar>)",
       [](const Tensor& a, const Tensor&) {
         return Results{a.clamp(-0.5, 0.5), a.clamp(0.0), a.clamp(std::nullopt, 1)};
       }},
      {"clamp_(std::optional<Scalar>,std::optional<Scalar>)",
       [](const Tensor& a, const Tensor&) {
         Tensor c = a * 1;
         c.clamp_(-0.25, 0.75);
         return Results{c};
       }},
      {"sum()",
       [](const Tensor& a, const Tensor&) {
         return Results{a.sum(), (a > 0).sum()};
       }},
      {"sum(IntArrayRef,bool)",
       [](const Tensor& a, const Tensor&) {
         return Results{a.sum({1}, true), a.sum({0})};
       }},
      {"mean()", [](const Tensor& a, const Tensor&) { return Results{a.mean()}; }},
      {"mean(IntArrayRef,bool)",
       [](const Tensor& a, const Tensor&) {
         return Results{a.mean({1}, true), a.mean({0})};
       }},
      {"matmul(Tensor)", [](const Tensor& a, const Tensor& b) { return Results{a.matmul(b.t())}; }},
      // --- in place (on clones, on the inputs, and through views of the inputs) ---------
      {"copy_(Tensor)",
       [](const Tensor& a, const Tensor& b) {
         Tensor x = a;
         x.copy_(b.t().t() * 2);
         return Results{x};
       }},
      {"copy_(Tensor,bool)",
       [](const Tensor& a, const Tensor& b) {
         Tensor x = a * 1;
         x.copy_(b * 2, /*non_blocking=*/true);
         return Results{x};
       }},
      {"fill_(Scalar)",
       [](const Tensor& a, const Tensor&) {
         Tensor c = a * 1;
         c.fill_(3);
         return Results{c};
       }},
      {"resize_(IntArrayRef,std::optional<MemoryFormat>)",
       [](const Tensor& a, const Tensor&) {
         // A graph break (GB0011); a tensor the function made, shrunk and restrided.
         Tensor c = a * 2;
         c.resize_({2, 3});
         Tensor d = a + 1;
         d.resize_({1, 2, 2, 3}, MemoryFormat::ChannelsLast);
         return Results{c + 1, d * 3};
       }},
      {"zero_()",
       [](const Tensor& a, const Tensor& b) {
         Tensor x = b;
         x.zero_();
         return Results{a + x};
       }},
      {"add_(Tensor,Scalar)",
       [](const Tensor& a, const Tensor& b) {
         Tensor x = a;
         x.add_(b, 2);
         return Results{x};
       }},
      {"mul_(Tensor)",
       [](const Tensor& a, const Tensor& b) {
         Tensor c = a.t().contiguous();
         c.mul_(b.t());
         return Results{c};
       }},
      {"mul_(Scalar)",
       [](const Tensor& a, const Tensor&) {
         Tensor v = a.narrow(1, 0, 2);
         v.mul_(3);
         return Results{a * 1};
       }},
      // --- autograd -----------------------------------------------------------------
      {"requires_grad_(bool)",
       [](const Tensor& a, const Tensor& b) {
         Tensor c = b * 1;
         c.requires_grad_();
         Tensor d = b * 2;
         d.requires_grad_(false);
         Tensor y = (c * a).sum();
         y.backward();
         return Results{c.grad(), a.grad(), num(c.is_leaf()), num(d.requires_grad()), y};
       },
       true},
      {"requires_grad()",
       [](const Tensor& a, const Tensor& b) {
         return Results{num(a.requires_grad()), num((a * 2).requires_grad()), num(b.requires_grad()),
                        num((b * 2).requires_grad()), num(a.detach().requires_grad())};
       },
       true},
      {"grad()",
       [](const Tensor& a, const Tensor& b) {
         (a * b).sum().backward();
         return Results{a.grad() * 1};
       },
       true},
      {"mutable_grad()",
       [](const Tensor& a, const Tensor& b) {
         a.mutable_grad() = b * 2;
         return Results{};
       },
       true},
      {"grad_fn()",
       [](const Tensor& a, const Tensor& b) {
         return Results{text((a * 2).grad_fn()->name()), text(a.sum().grad_fn()->name()), text(a.t().grad_fn()->name()),
                        num(a.grad_fn() == nullptr), num((b * 2).grad_fn() == nullptr)};
       },
       true},
      {"output_nr()",
       [](const Tensor& a, const Tensor&) {
         return Results{num(split(a, 2, 1)[1].output_nr()), num((a * 2).output_nr())};
       },
       true},
      {"is_leaf()",
       [](const Tensor& a, const Tensor& b) {
         return Results{num(a.is_leaf()), num((a * 2).is_leaf()), num(b.is_leaf()), num((b * 2).is_leaf())};
       },
       true},
      {"retain_grad()",
       [](const Tensor& a, const Tensor& b) {
         Tensor y = a * 2;
         y.retain_grad();
         (y * b).sum().backward();
         return Results{y.grad(), a.grad()};
       },
       true},
      {"retains_grad()",
       [](const Tensor& a, const Tensor&) {
         Tensor y = a * 2;
         y.retain_grad();
         return Results{num(y.retains_grad()), num((a * 3).retains_grad()), num(a.retains_grad()), y};
       },
       true},
      {"detach()",
       [](const Tensor& a, const Tensor&) {
         Tensor d = a.detach();
         d.mul_(2);  // writes a's data, outside the autograd graph
         return Results{(a * 2).detach() * 3, a.detach(), num(a.detach().requires_grad()),
                        num((a * 2).detach().is_leaf()), a * 1};
       },
       true},
      {"backward(Tensor,bool)",
       [](const Tensor& a, const Tensor& b) {
         (a * 2).backward(ones({3, 4}));
         (a * b).sum().backward(Tensor(), false);
         return Results{a.grad()};
       },
       true},
      {"register_hook(std::function<Tensor(Tensor)>)",
       [](const Tensor& a, const Tensor&) {
         Tensor y = a * 2;
         y.register_hook(triple);
         y.sum().backward();
         return Results{a.grad()};
       },
       true},
      {"remove_hook(unsigned)",
       [](const Tensor& a, const Tensor&) {
         Tensor y = a * 2;
         const unsigned h = y.register_hook(triple);
         y.remove_hook(h);
         y.sum().backward();
         return Results{a.grad()};
       },
       true},
      // --- operators ------------------------------------------------------------------
      {"operator+(TensorArg,Tensor)", [](const Tensor& a, const Tensor& b) { return Results{a + b}; }},
      {"operator-(TensorArg,Tensor)", [](const Tensor& a, const Tensor& b) { return Results{a - b}; }},
      {"operator*(TensorArg,Tensor)", [](const Tensor& a, const Tensor& b) { return Results{a * b}; }},
      {"operator/(TensorArg,Tensor)", [](const Tensor& a, const Tensor& b) { return Results{a / b}; }},
      {"operator+(TensorArg,Scalar)",
       [](const Tensor& a, const Tensor&) {
         return Results{a + 2.5, (a > 0) + 2};
       }},
      {"operator-(TensorArg,Scalar)", [](const Tensor& a, const Tensor&) { return Results{a - 2.5}; }},
      {"operator*(TensorArg,Scalar)",
       [](const Tensor& a, const Tensor&) {
         return Results{a * 2.5, a * 2};
       }},
      {"operator/(TensorArg,Scalar)", [](const Tensor& a, const Tensor&) { return Results{a / 2.5}; }},
      {"operator+(Scalar,TensorArg)", [](const Tensor& a, const Tensor&) { return Results{2.5 + a}; }},
      {"operator-(Scalar,TensorArg)", [](const Tensor& a, const Tensor&) { return Results{2.5 - a}; }},
      {"operator*(Scalar,TensorArg)", [](const Tensor& a, const Tensor&) { return Results{2.5 * a}; }},
      {"operator/(Scalar,TensorArg)", [](const Tensor& a, const Tensor&) { return Results{2.5 / a}; }},
      {"operator-(TensorArg)", [](const Tensor& a, const Tensor&) { return Results{-a}; }},
      {"operator==(TensorArg,Tensor)", [](const Tensor& a, const Tensor&) { return Results{a == a.t().t()}; }},
      {"operator!=(TensorArg,Tensor)", [](const Tensor& a, const Tensor& b) { return Results{a != b}; }},
      {"operator<(TensorArg,Tensor)", [](const Tensor& a, const Tensor& b) { return Results{a < b}; }},
      {"operator<=(TensorArg,Tensor)", [](const Tensor& a, const Tensor& b) { return Results{a <= b}; }},
      {"operator>(TensorArg,Tensor)", [](const Tensor& a, const Tensor& b) { return Results{a > b}; }},
      {"operator>=(TensorArg,Tensor)", [](const Tensor& a, const Tensor& b) { return Results{a >= b}; }},
      {"operator==(TensorArg,Scalar)", [](const Tensor& a, const Tensor&) { return Results{(a > 0) == 1}; }},
      {"operator!=(TensorArg,Scalar)", [](const Tensor& a, const Tensor&) { return Results{a != 0.5}; }},
      {"operator<(TensorArg,Scalar)", [](const Tensor& a, const Tensor&) { return Results{a < 0.5}; }},
      {"operator<=(TensorArg,Scalar)", [](const Tensor& a, const Tensor&) { return Results{a <= 0}; }},
      {"operator>(TensorArg,Scalar)", [](const Tensor& a, const Tensor&) { return Results{a > -0.5}; }},
      {"operator>=(TensorArg,Scalar)", [](const Tensor& a, const Tensor&) { return Results{a >= 0}; }},
      {"operator&(TensorArg,Tensor)", [](const Tensor& a, const Tensor& b) { return Results{(a > 0) & (b > 0)}; }},
      {"operator|(TensorArg,Tensor)", [](const Tensor& a, const Tensor& b) { return Results{(a > 0) | (b > 0)}; }},
      {"operator^(TensorArg,Tensor)", [](const Tensor& a, const Tensor& b) { return Results{(a > 0) ^ (b > 0)}; }},
      {"operator~(TensorArg)", [](const Tensor& a, const Tensor&) { return Results{~(a > 0)}; }},
  };
}

// --- the rows of ember/tensor_methods.def --------------------------------------------------

/// The operand a generated row calls `op` on: positive floats (every unary op's domain,
/// nonzero divisors), or bools for the bitwise and logical-not ops.
Tensor operand(const std::string& op, const Tensor& t) {
  if (op.starts_with("bitwise") || op == "logical_not") return t > 0;
  return t.abs() + 0.5;
}

/// One row per row of tensor_methods.def, calling each method it declares (functional,
/// then in place on a clone), keyed by its first method that no row above covers.
std::vector<Row> table_rows() {
  std::vector<std::pair<std::vector<std::string>, Fn>> table;
#define EMBER_TENSOR_UNARY(name)                                                   \
  table.push_back({{#name "()", #name "_()"}, [](const Tensor& a, const Tensor&) { \
                     Tensor x = operand(#name, a), y = x.clone();                  \
                     y.name##_();                                                  \
                     return Results{x.name(), y};                                  \
                   }});
#define EMBER_TENSOR_UNARY_FUNCTIONAL(name)                                        \
  table.push_back({{#name "()"}, [](const Tensor& a, const Tensor&) {              \
                     return Results{operand(#name, a).name(), (a * 0 / 0).name()}; \
                   }});
#define EMBER_TENSOR_BINARY(name)                                                                         \
  table.push_back({{#name "(Tensor)", #name "(Scalar)", #name "_(Tensor)", #name "_(Scalar)"},            \
                   [](const Tensor& a, const Tensor& b) {                                                 \
                     Tensor x = operand(#name, a), y = operand(#name, b), x1 = x.clone(), x2 = x.clone(); \
                     const Scalar s = x.dtype() == kBool ? Scalar(true) : Scalar(1.5);                    \
                     x1.name##_(y);                                                                       \
                     x2.name##_(s);                                                                       \
                     return Results{x.name(y), x.name(s), x1, x2};                                        \
                   }});
#define EMBER_TENSOR_BINARY_ALPHA(name)                                                                        \
  table.push_back(                                                                                             \
      {{#name "(Tensor,Scalar)", #name "(Scalar,Scalar)", #name "_(Tensor,Scalar)", #name "_(Scalar,Scalar)"}, \
       [](const Tensor& a, const Tensor& b) {                                                                  \
         Tensor x1 = a.clone(), x2 = a.clone();                                                                \
         x1.name##_(b, 2);                                                                                     \
         x2.name##_(1.5, -1);                                                                                  \
         return Results{a.name(b, 0.5), a.name(2.5), a.name(1.5, 2), x1, x2};                                  \
       }});
#define EMBER_TENSOR_BINARY_TENSOR(name)                                                         \
  table.push_back({{#name "(Tensor)", #name "_(Tensor)"}, [](const Tensor& a, const Tensor& b) { \
                     Tensor x = operand(#name, a), y = operand(#name, b), x1 = x.clone();        \
                     x1.name##_(y);                                                              \
                     return Results{x.name(y), x1};                                              \
                   }});
#define EMBER_TENSOR_BINARY_TENSOR_FUNCTIONAL(name)                                        \
  table.push_back({{#name "(Tensor)"}, [](const Tensor& a, const Tensor& b) {              \
                     return Results{operand(#name, a).name(operand(#name, b)), a.name(b)}; \
                   }});
#include "ember/tensor_methods.def"
#undef EMBER_TENSOR_UNARY
#undef EMBER_TENSOR_UNARY_FUNCTIONAL
#undef EMBER_TENSOR_BINARY
#undef EMBER_TENSOR_BINARY_ALPHA
#undef EMBER_TENSOR_BINARY_TENSOR
#undef EMBER_TENSOR_BINARY_TENSOR_FUNCTIONAL
  std::set<std::string> by_hand;
  for (const Row& r : rows()) by_hand.insert(r.key);
  std::vector<Row> out;
  for (auto& [methods, fn] : table) {
    std::vector<std::string> keys;
    for (const std::string& m : methods)
      if (!by_hand.count(m)) keys.push_back(m);
    if (keys.empty()) continue;
    Row r{keys.front(), fn};
    r.also.assign(keys.begin() + 1, keys.end());
    out.push_back(std::move(r));
  }
  return out;
}

/// Why `actual` is not `expected` ("" when it is): defined, dtype, sizes, strides of dims
/// longer than 1 (those of size-1 dims cannot change a result), requires_grad, values
/// (exactly, or within assert_close's tolerances for a code generator; NaN equals NaN).
std::string difference(const Tensor& actual, const Tensor& expected, bool exact) {
  std::ostringstream os;
  if (actual.defined() != expected.defined()) return std::string("defined: ") + (actual.defined() ? "yes" : "no");
  if (!actual.defined()) return "";
  if (actual.dtype() != expected.dtype())
    os << "dtype " << actual.dtype() << " vs " << expected.dtype();
  else if (actual.sizes() != expected.sizes())
    os << "sizes " << actual.sizes() << " vs " << expected.sizes();
  else if (actual.requires_grad() != expected.requires_grad())
    os << "requires_grad " << actual.requires_grad();
  if (!os.str().empty()) return os.str();
  for (int64_t d = 0; d < actual.dim(); ++d) {
    if (actual.size(d) > 1 && actual.stride(d) != expected.stride(d)) {
      os << "strides " << actual.strides() << " vs " << expected.strides();
      return os.str();
    }
  }
  const auto a = actual.to_vector<double>(), e = expected.to_vector<double>();
  const double rtol = actual.dtype() == kDouble ? 1e-7 : 1.3e-6, atol = actual.dtype() == kDouble ? 1e-7 : 1e-5;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) && std::isnan(e[i])) continue;
    if (exact ? a[i] != e[i] : !(std::abs(a[i] - e[i]) <= atol + rtol * std::abs(e[i]))) {
      os << "value at " << i << ": " << a[i] << " vs " << e[i];
      return os.str();
    }
  }
  return "";
}

struct Inputs {
  Tensor a, b;
};

Inputs make_inputs(uint64_t seed, bool grad) {
  manual_seed(seed);
  Inputs in{randn({3, 4}), randn({3, 4})};
  if (grad) in.a.requires_grad_();
  return in;
}

/// Runs one row eagerly and compiled with `backend`, twice; returns what differs.
std::vector<std::string> check_row(const Row& row, const std::string& backend) {
  std::vector<std::string> failures;
  auto fail = [&](const std::string& what) {
    failures.push_back(std::string(row.key) + " [" + backend + "]: " + what);
  };
  auto compiled = compile(row.fn, {.backend = backend, .name = "tensor_method"});
  const bool exact = backend == "eager";
  for (int call = 0; call < 2; ++call) {
    Inputs eager = make_inputs(100 + call, row.grad), comp = make_inputs(100 + call, row.grad);
    Results expected, actual;
    try {
      expected = row.fn(eager.a, eager.b);
    } catch (const Error& e) {
      fail("eager raised: " + std::string(e.what()));
      return failures;
    }
    try {
      actual = compiled(comp.a, comp.b);
    } catch (const std::exception& e) {
      fail("call " + std::to_string(call) + " raised: " + e.what());
      return failures;
    }
    if (row.differs) continue;  // called, not compared
    const std::string at = "call " + std::to_string(call) + ", ";
    if (actual.size() != expected.size()) {
      fail(at + std::to_string(actual.size()) + " results, eager gives " + std::to_string(expected.size()));
      continue;
    }
    for (size_t i = 0; i < actual.size(); ++i)
      if (auto d = difference(actual[i], expected[i], exact); !d.empty())
        fail(at + "result " + std::to_string(i) + ": " + d);
    for (auto [name, x, y] : {std::tuple{"a", comp.a, eager.a}, std::tuple{"b", comp.b, eager.b}}) {
      if (auto d = difference(x, y, exact); !d.empty()) fail(at + "input " + name + " afterwards: " + d);
      if (auto d = difference(x.grad(), y.grad(), exact); !d.empty()) fail(at + "input " + name + "'s grad: " + d);
      if (x._version() != y._version()) {
        fail(at + "input " + std::string(name) + "'s version " + std::to_string(x._version()) + " vs " +
             std::to_string(y._version()));
      }
    }
  }
  return failures;
}

TEST(TensorMethodsCompiled, TheTableHasARowForEveryDeclaredMethod) {
  const std::set<std::string> declared = testing::declared_tensor_api(EMBER_INCLUDE_DIR "/ember/tensor.h");
  ASSERT_GT(declared.size(), 100u) << "could not read the methods of include/ember/tensor.h";
  std::set<std::string> in_table;
  std::vector<Row> all = rows();
  for (Row& r : table_rows()) all.push_back(std::move(r));
  for (const Row& r : all) {
    EXPECT_TRUE(in_table.insert(r.key).second) << "two rows for " << r.key;
    for (const std::string& k : r.also) EXPECT_TRUE(in_table.insert(k).second) << "two rows for " << k;
  }
  for (const std::string& k : declared) {
    EXPECT_TRUE(in_table.count(k)) << "include/ember/tensor.h declares " << k
                                   << " but tensor_methods_compiled_test.cpp has no row calling it";
  }
  for (const std::string& k : in_table)
    EXPECT_TRUE(declared.count(k)) << "a row for " << k << ", which tensor.h does not declare";
}

class TensorMethodsCompiled : public testing::DiagnosticsTest, public ::testing::WithParamInterface<std::string> {};

TEST_P(TensorMethodsCompiled, EveryMethodEqualsEager) {
  std::vector<std::string> failures;
  std::vector<Row> every = rows();
  for (Row& r : table_rows()) every.push_back(std::move(r));
  for (const Row& row : every) {
    for (std::string& f : check_row(row, GetParam())) failures.push_back(std::move(f));
  }
  std::string all;
  for (const std::string& f : failures) all += "\n  " + f;
  EXPECT_TRUE(failures.empty()) << failures.size() << " differences from eager:" << all;
}

INSTANTIATE_TEST_SUITE_P(Backends, TensorMethodsCompiled, ::testing::Values("eager", "inductor"));

}  // namespace
}  // namespace ember
