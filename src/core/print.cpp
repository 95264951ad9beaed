// core/print.cpp — (being written)
#include "ember/tensor.h"
namespace ember {
std::string Tensor::str() const { return "tensor"; }
std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.str(); }
}  // namespace ember
