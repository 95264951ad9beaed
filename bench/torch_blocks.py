"""The blocks of docs/workloads.md W4-W6 in PyTorch, with the same parameter names
and the same ops as Ember's ember/nn/blocks.h (key for key), for bench/torch_workloads.py
and the test-data generator tests/data/gen_blocks.py. Runs on PyTorch 1.13 and 2.x."""
import math

import torch
import torch.nn.functional as F
from torch import nn


class MLPBlock(nn.Module):
    """W4: x + fc2(gelu(fc1(ln(x)))), exact (erf) GELU."""

    def __init__(self, d=1024, hidden=4096):
        super().__init__()
        self.ln = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, hidden)
        self.fc2 = nn.Linear(hidden, d)

    def forward(self, x):
        return x + self.fc2(F.gelu(self.fc1(self.ln(x))))


class CausalSelfAttention(nn.Module):
    """nanoGPT's attention on its non-flash path: matmul, masked softmax, matmul. The mask
    is cached per sequence length, not a buffer, so it is not in the state dict."""

    def __init__(self, n_embd, n_head):
        super().__init__()
        assert n_embd % n_head == 0
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.n_embd, self.n_head = n_embd, n_head
        self._mask = None

    def causal_mask(self, T, device):
        if self._mask is None or self._mask.size(0) != T or self._mask.device != device:
            self._mask = torch.ones(T, T, dtype=torch.bool, device=device).triu(1)
        return self._mask

    def forward(self, x):
        B, T, C = x.size()
        hs = C // self.n_head
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        q = q.view(B, T, self.n_head, hs).transpose(1, 2)
        k = k.view(B, T, self.n_head, hs).transpose(1, 2)
        v = v.view(B, T, self.n_head, hs).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))
        att = F.softmax(att.masked_fill(self.causal_mask(T, x.device), float("-inf")), dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class MLP(nn.Module):
    """nanoGPT's MLP with GPT-2's tanh-approximated GELU."""

    def __init__(self, n_embd, hidden):
        super().__init__()
        self.c_fc = nn.Linear(n_embd, hidden)
        self.gelu = nn.GELU(approximate="tanh")
        self.c_proj = nn.Linear(hidden, n_embd)

    def forward(self, x):
        return self.c_proj(self.gelu(self.c_fc(x)))


class Block(nn.Module):
    """W5: nanoGPT's pre-LN GPT-2 block, dropout 0 (no dropout modules)."""

    def __init__(self, n_embd=768, n_head=12, hidden=3072):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, n_head)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.mlp = MLP(n_embd, hidden)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


GPT2Block = Block


class BasicBlock(nn.Module):
    """W6: torchvision's BasicBlock, stride 1, no downsample (identity shortcut)."""

    def __init__(self, channels=64):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, stride=1, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(channels, channels, 3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + x)
