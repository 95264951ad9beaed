"""The training rows of docs/workloads.md in PyTorch, for torch_workloads.py: W8 (the W5
GPT-2 block, x[8,128,768], AdamW lr 1e-4 weight decay 0.01) and W9 (the W6 BasicBlock in
training mode, x[8,64,56,56], SGD lr 0.01 momentum 0.9), each a whole step: zero_grad
(set to none), loss = block(x).sum(), loss.backward(), opt.step(). They are the twins of
Ember's bench/training_workloads.h: an eager and a compiled copy of the block and its
optimizer, built from the same seed, so that the compiled copy's loss, gradients,
parameters and buffers after a step can be compared with the eager copy's.

The compiled step compiles the same two parts as Ember's: the forward and loss with
torch.compile (AOT autograd compiles the backward graph, which loss.backward() runs), and
the optimizer's step() with torch.compile as a function of its own; zero_grad and the
call of backward() run eagerly.

For W7-W9 it also measures, in the same run as the rows:
- saved MB: the distinct storages the autograd graph behind the forward's result saved for
  backward (each node's _saved_* tensors; for the compiled forward the saved_tensors of
  CompiledFunctionBackward), the parameters' and inputs' storages left out. PyTorch has no
  CPU allocator statistics, so its forward peak is not reported.
- train compile s: a cold compile (torch._inductor.utils.fresh_inductor_cache: an empty
  cache directory and in-memory caches cleared) of the forward recording the graph, then
  backward (AOT's forward and backward graphs, one execution of each); fwd-only compile s:
  the same for the forward under torch.no_grad() (the inference graph alone)."""
import copy
import time

import torch

import torch_settings
from torch_blocks import BasicBlock, Block

ATOL = 1e-4
# AdamW's first update is lr * g / (|g| + eps): about +-lr for every gradient element well
# above eps whatever its size, so an element whose eager value is within rounding of zero
# may step the other way when compiled, and its parameter then differs by up to 2 * lr.
W8_LR = 1e-4
# Each tensor's tolerance adds this much of its largest |element|: the sum loss makes
# gradients large (W9's reach 1e4, sums over the 25,088 positions of a channel) and batch
# norm's backward subtracts means of them, so an element near zero carries the rounding of
# its large neighbours; the parameters after an SGD step inherit lr times that.
OF_MAX = 1e-4


# The parts of a training step timed in TrainingParts' phases (the twin of bench/workloads.h's
# StepPhases): zero_grad, forward and loss, backward, optimizer step.
PHASES = ("zero_grad", "forward", "backward", "optimizer")


class TrainingParts:
    """forward(): the eager forward (and loss) recording the graph; compile_forward(): a new
    compiled callable of it (after torch._dynamo.reset()); backward(out); exclude: tensors
    that exist before the forward (inputs, parameters, buffers), not counted as saved."""

    def __init__(self, forward, compile_forward, backward, exclude):
        self.forward, self.compile_forward, self.backward, self.exclude = forward, compile_forward, backward, exclude
        # W8, W9: wall-clock ms of each part (PHASES) of every eager and compiled step run.
        self.eager_phases, self.compiled_phases = [], []


class TrainingRow:
    def __init__(self, wid, what, make_block, make_opt, x, param_atol, seed):
        self.id, self.what, self.x, self.param_atol = wid, what, x, param_atol
        torch.manual_seed(seed)
        self.block = make_block().train().to(x.device)
        self.cblock = copy.deepcopy(self.block)
        self.opt, self.copt = make_opt(self.block.parameters()), make_opt(self.cblock.parameters())
        self.parts = TrainingParts(
            forward=lambda: self.block(x).sum(),
            compile_forward=lambda: (lambda cf=torch_settings.compile(lambda t: self.cblock(t).sum()): cf(x)),
            backward=lambda loss: loss.backward(),
            exclude=[x] + list(self.block.parameters()) + list(self.block.buffers()) +
            list(self.cblock.parameters()) + list(self.cblock.buffers()))

    @staticmethod
    def _step(opt, forward, opt_step, phases):
        with torch.enable_grad():
            t = [time.perf_counter()]
            opt.zero_grad(set_to_none=True)
            t.append(time.perf_counter())
            loss = forward()
            t.append(time.perf_counter())
            loss.backward()
            t.append(time.perf_counter())
            opt_step()
            t.append(time.perf_counter())
        phases.append([(b - a) * 1e3 for a, b in zip(t, t[1:])])
        return loss

    def eager_step(self):
        return self._step(self.opt, self.parts.forward, self.opt.step, self.parts.eager_phases)

    def make_compiled_step(self, mode=None):
        """The compiled step: the forward and loss, and the optimizer's step, each compiled
        (with torch.compile's `mode` when given, e.g. "reduce-overhead" on a GPU)."""
        if mode is None:
            forward = self.parts.compile_forward()
        else:
            cf = torch_settings.compile(lambda t: self.cblock(t).sum(), mode=mode)
            forward = lambda: cf(self.x)  # noqa: E731
        opt_step = torch_settings.compile(self.copt.step, **({} if mode is None else {"mode": mode}))
        if mode == "reduce-overhead":
            # cudagraph trees: each step is a new iteration, whose replays may overwrite the
            # outputs of the last one (its loss, its saved tensors) once backward is done.
            def step():
                torch.compiler.cudagraph_mark_step_begin()
                return self._step(self.copt, forward, opt_step, self.parts.compiled_phases)
            return step
        return lambda: self._step(self.copt, forward, opt_step, self.parts.compiled_phases)

    def results(self, loss, compiled):
        """(what, tensors, atol, of_max) groups of the copy that made `loss`."""
        block = self.cblock if compiled else self.block
        params = list(block.parameters())
        return [("loss", [loss.detach()], ATOL, 0),
                ("gradients", [p.grad.detach().clone() if p.grad is not None else None for p in params], ATOL, OF_MAX),
                ("parameters after the step", [p.detach().clone() for p in params], self.param_atol, OF_MAX),
                ("buffers (running stats)", [b.detach().double() for b in block.buffers()], ATOL, OF_MAX)]


def training_workloads(device="cpu"):
    """W8 and W9 at docs/workloads.md's sizes, inputs and blocks made on the CPU and moved
    to `device`."""
    torch.manual_seed(0)
    x8 = torch.randn(8, 128, 768).to(device)
    x9 = torch.randn(8, 64, 56, 56).to(device)
    return [
        TrainingRow("W8", "W5 train step + AdamW, x[8,128,768]", Block,
                    lambda p: torch.optim.AdamW(p, lr=W8_LR, weight_decay=0.01), x8, 2 * W8_LR + ATOL, 8),
        TrainingRow("W9", "W6 train step + SGD, x[8,64,56,56]", BasicBlock,
                    lambda p: torch.optim.SGD(p, lr=0.01, momentum=0.9), x9, ATOL, 9),
    ]


def saved_bytes(out, exclude):
    """Bytes of the distinct storages the graph behind `out` saved for backward, those of
    `exclude` left out."""
    skip = {t.untyped_storage().data_ptr() for t in exclude}
    storages, seen, stack = {}, set(), [out.grad_fn]
    while stack:
        fn = stack.pop()
        if fn is None or fn in seen:
            continue
        seen.add(fn)
        saved = []
        if hasattr(fn, "saved_tensors"):  # Python autograd Functions, CompiledFunctionBackward among them
            saved += [t for t in fn.saved_tensors]
        for name in dir(fn):
            if name.startswith("_saved_"):
                try:
                    v = getattr(fn, name)
                except RuntimeError:
                    continue
                saved += list(v) if isinstance(v, (tuple, list)) else [v]
        for t in saved:
            if isinstance(t, torch.Tensor):
                st = t.untyped_storage()
                if st.data_ptr() not in skip:
                    storages[st.data_ptr()] = st.nbytes()
        stack += [f for f, _ in fn.next_functions]
    return sum(storages.values())


def _fresh_cache():
    import torch._inductor.utils as utils
    return (getattr(utils, "fresh_cache", None) or utils.fresh_inductor_cache)()


def _cold_seconds(call):
    """Seconds of `call` with a fresh inductor cache (directory and in-memory)."""
    torch._dynamo.reset()
    with _fresh_cache():
        t0 = time.perf_counter()
        call()
        return time.perf_counter() - t0


def measure_training(parts):
    """The second table's figures for a training row (see the module's docstring)."""
    forward_only = parts.compile_forward()

    def forward_only_call():
        with torch.no_grad():
            forward_only()

    fwd_s = _cold_seconds(forward_only_call)
    train = parts.compile_forward()

    def train_call():
        with torch.enable_grad():
            parts.backward(train())

    train_s = _cold_seconds(train_call)
    with torch.enable_grad():
        eager_out = parts.forward()
        eager = saved_bytes(eager_out, parts.exclude)
        del eager_out
        compiled_out = train()
        compiled = saved_bytes(compiled_out, parts.exclude)
        is_aot = compiled_out.grad_fn is not None and compiled_out.grad_fn.name() == "CompiledFunctionBackward"
        del compiled_out
    return {"saved_bytes_eager": eager, "saved_bytes_compiled": compiled, "compiled_is_aot": is_aot,
            "train_graphs_cold_compile_s": train_s, "forward_only_cold_compile_s": fwd_s}


def print_training_table(rows):
    mib = 1024.0 * 1024.0
    print("\nTraining rows. saved MB: the distinct storages the autograd graph behind the forward+loss saved for\n"
          "backward (eager: the grad_fn nodes' _saved_* tensors; compiled: CompiledFunctionBackward's saved_tensors),\n"
          "inputs and parameters left out. fwd peak MB: not measured (PyTorch has no CPU allocator statistics).\n"
          "train compile s: cold (fresh inductor cache) compile of the forward+loss recording the graph, then\n"
          "backward: the AOT forward and backward graphs, one execution of each. fwd-only compile s: cold compile\n"
          "of the same forward+loss under torch.no_grad() (the inference graph), one execution. W8, W9 compiled\n"
          "step: forward+loss by torch.compile (backward runs the compiled backward graph), optimizer step by\n"
          "torch.compile(opt.step); zero_grad and the call of backward() eager.")
    print(f"{'id':8} | {'saved MB eager':>14} | {'saved MB compiled':>17} | {'fwd peak MB eager':>17} | "
          f"{'fwd peak MB compiled':>20} | {'train compile s':>15} | {'fwd-only compile s':>18} | {'ratio':>6} | notes")
    for r in rows:
        note = "" if r["compiled_is_aot"] else "compiled forward's result is not a CompiledFunctionBackward"
        print(f"{r['id']:8} | {r['saved_bytes_eager'] / mib:14.1f} | {r['saved_bytes_compiled'] / mib:17.1f} | "
              f"{'-':>17} | {'-':>20} | {r['train_graphs_cold_compile_s']:15.2f} | "
              f"{r['forward_only_cold_compile_s']:18.2f} | "
              f"{r['train_graphs_cold_compile_s'] / r['forward_only_cold_compile_s']:5.2f}x | {note}", flush=True)
