// An op with a CPU kernel and no CUDA kernel, registered by the tests that check what a
// CUDA call of such an op raises (every op Ember ships runs on CUDA, so the tests make
// their own): `aten::test_cpu_only(Tensor self) -> Tensor`, a copy of self.
#pragma once

#include "ember/dispatch.h"
#include "ember/ember.h"
#include "ops/op_utils.h"
#include "ops/registry.h"

namespace ember::testing {

/// Registers the op on the first call; returns its name.
inline const char* cpu_only_op() {
  static const char* name = [] {
    ops::registry()
        .def("test_cpu_only(Tensor self) -> Tensor")
        .set_meta([](const Stack& a) {
          const Tensor& self = a[0].to_tensor();
          return ops::metas(ops::contiguous_meta(self.sizes(), self.dtype(), self.device()));
        })
        .set_cpu([](const Stack& a, std::vector<Tensor>& out) { out[0].copy_(a[0].to_tensor()); });
    return "aten::test_cpu_only";
  }();
  return name;
}

}  // namespace ember::testing
