// The Optimizer base (parameter checks, zero_grad) and the formatting of hyperparameters in
// error messages, which follows Python's repr of a float so the text matches torch.optim's.
#include "optim/optim_utils.h"

#include <charconv>
#include <cstdlib>
#include <string>

#include "ember/autograd.h"
#include "ember/error.h"

namespace ember::optim {

std::string py_float(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  // Shortest round-trip digits, then Python's layout: fixed for 1e-4 <= |v| < 1e16.
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  bool neg = sci[0] == '-';
  if (neg) sci.erase(0, 1);
  size_t e = sci.find('e');
  int exp = std::atoi(sci.c_str() + e + 1);
  std::string digits;
  for (size_t i = 0; i < e; ++i)
    if (sci[i] != '.') digits += sci[i];
  std::string out;
  if (v == 0.0) {
    out = "0.0";
  } else if (exp >= -4 && exp < 16) {
    if (exp < 0) {
      out = "0." + std::string(static_cast<size_t>(-exp - 1), '0') + digits;
    } else {
      auto int_len = static_cast<size_t>(exp + 1);
      if (digits.size() <= int_len) {
        out = digits + std::string(int_len - digits.size(), '0') + ".0";
      } else {
        out = digits.substr(0, int_len) + "." + digits.substr(int_len);
      }
    }
  } else {
    out = digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    int a = exp < 0 ? -exp : exp;
    out += std::string("e") + (exp < 0 ? "-" : "+") + (a < 10 ? "0" : "") + std::to_string(a);
  }
  return neg ? "-" + out : out;
}

Optimizer::Optimizer(std::vector<Tensor> params) : params_(std::move(params)) {
  EMBER_CHECK_VALUE(!params_.empty()) << "optimizer got an empty parameter list";
  for (const Tensor& p : params_) {
    EMBER_CHECK_TYPE(p.defined()) << "optimizer can only optimize Tensors, but one of the params is None";
    EMBER_CHECK_VALUE(p.is_leaf()) << "can't optimize a non-leaf Tensor";
  }
}

void Optimizer::zero_grad(bool set_to_none) {
  NoGradGuard no_grad;
  for (const Tensor& p : params_) {
    Tensor& g = p.mutable_grad();
    if (!g.defined()) continue;
    if (set_to_none) {
      g = Tensor();
    } else {
      // As PyTorch: a grad carrying a graph is cut off it before being zeroed in place.
      if (g.grad_fn()) g = g.detach();
      g.zero_();
    }
  }
}

}  // namespace ember::optim
