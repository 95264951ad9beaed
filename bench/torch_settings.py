"""The torch.compile setting the side-by-side programs time PyTorch under (issue: the
strongest CPU settings PyTorch has, beside the default):

  default        torch.compile(fn)
  max-autotune   torch.compile(fn, mode="max-autotune"): inductor benchmarks GEMM choices
                 (and its C++ GEMM templates on CPU) at compile time
  freezing       torch._inductor.config.freezing = True: parameters of an inference graph
                 run under no_grad are constants (folded, weights prepacked for oneDNN)

use(setting) picks one for the process (before the first compile); compile(fn, **kw) is
torch.compile under it. Freezing changes only graphs compiled under no_grad (W4-W6 here);
training graphs (W7-W9) compile as in the default mode.
"""
import torch

SETTINGS = ("default", "max-autotune", "freezing")
_setting = "default"


def use(setting):
    """Selects `setting` (one of SETTINGS) for every later compile() of this process."""
    global _setting
    if setting not in SETTINGS:
        raise ValueError(f"torch setting: expected one of {', '.join(SETTINGS)}, got {setting!r}")
    _setting = setting
    torch._inductor.config.freezing = setting == "freezing"


def current():
    return _setting


def compile(fn, **kw):
    """torch.compile(fn, **kw) under the selected setting."""
    if _setting == "max-autotune":
        kw.setdefault("mode", "max-autotune")
    return torch.compile(fn, **kw)
