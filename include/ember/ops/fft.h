// ember/ops/fft.h — complex views, conjugates and ATen's discrete Fourier transforms (the _fft_*
// ops torch.fft lowers onto). See Note [complex dtypes] (docs/notes/registry.md).
#pragma once

#include <vector>

#include "ember/sym_int.h"
#include "ember/tensor.h"

namespace ember {

/// A complex tensor's real view: sizes + [2] (real, imaginary), strides doubled; shares
/// self's storage (torch.view_as_real).
Tensor view_as_real(const Tensor& self, Loc loc = Loc::current());
/// A float/double tensor whose last dim is (real, imaginary) with stride 1 as a complex
/// view: that dim dropped, strides halved (torch.view_as_complex).
Tensor view_as_complex(const Tensor& self, Loc loc = Loc::current());
/// The real parts of a complex tensor (a view); a real tensor itself.
Tensor real(const Tensor& self, Loc loc = Loc::current());
/// The imaginary parts of a complex tensor (a view); an error for a real tensor.
Tensor imag(const Tensor& self, Loc loc = Loc::current());

/// The complex conjugate (torch.conj). Ember has no lazy conjugate bit: a complex
/// tensor's conjugate is a new tensor (Note [conj materializes]); a real tensor itself.
Tensor conj(const Tensor& self, Loc loc = Loc::current());
/// The complex conjugate as a new tensor (torch.conj_physical); a real tensor itself.
Tensor conj_physical(const Tensor& self, Loc loc = Loc::current());
/// Conjugates self in place (a real tensor keeps its values).
Tensor& conj_physical_(Tensor& self, Loc loc = Loc::current());
/// self: Ember never marks a tensor lazily conjugated, so there is nothing to resolve.
Tensor resolve_conj(const Tensor& self, Loc loc = Loc::current());

/// Real-to-complex transform over `dim` (normalization 0 none, 1 1/sqrt(n), 2 1/n);
/// `onesided` keeps n/2 + 1 entries of dim.back().
Tensor _fft_r2c(const Tensor& self, IntArrayRef dim, int64_t normalization, bool onesided,
                Loc loc = Loc::current());
/// Complex-to-real (inverse, onesided) transform over `dim`; the output's size along
/// dim.back() is `last_dim_size`, a SymInt as in PyTorch's schema (one read with
/// ember::sym_size stays symbolic in a trace).
Tensor _fft_c2r(const Tensor& self, IntArrayRef dim, int64_t normalization, SymInt last_dim_size,
                Loc loc = Loc::current());
/// Complex-to-complex transform over `dim`, forward or inverse (unnormalized unless asked).
Tensor _fft_c2c(const Tensor& self, IntArrayRef dim, int64_t normalization, bool forward, Loc loc = Loc::current());

}  // namespace ember
