#!/usr/bin/env python3
"""The MoD block written in PyTorch the way public implementations do, timed on the GPU.

Router nn.Linear(d, 1) -> torch.topk per sequence -> sort the indices by position ->
torch.gather -> a pre-norm block (scaled_dot_product_attention, causal; gelu MLP) ->
delta = block(x~) - x~ -> out = x.scatter_add(routed, r~ * delta)   (Equation 1).

It is the peer that modsim's CUDA block is compared with (same shapes, same GPU, same run).
Writes one CSV row per (implementation, shape, capacity): the median seconds over
CUDA-event-timed repeats after warm-up, rotating several input tensors so a repeat does not
time a warm L2.

--train times one training step of the same layer instead, as modsim's block_dense_train and
block_mod_train rows do (`modsim profile --preset train`): the forward and the backward from a
fixed dL/dout (every weight's gradient, the router's, and dL/dx; no optimizer step), ops
block_dense_train / block_mod_train with a `recompute` column: none, or full (the layer under
torch.utils.checkpoint: its forward runs again in the backward, routing included). A forced SDPA
backend covers the whole step (the backward, and full recomputation's second forward).
--device cpu runs the same on the CPU (perf_counter timing; a check of the script, not a peer).

Implementations (--impls):
  eager       the block above, as public implementations write it (impl torch-eager)
  compiled    the same under torch.compile (impl torch-compiled)
  sdpa-cudnn, sdpa-flash, sdpa-math
              a lean block: F.rms_norm, one fused QKV matmul, scaled_dot_product_attention
              forced to one backend (cuDNN, FlashAttention, the unfused math path), routing
              with index_select / index_add (impl torch-sdpa-cudnn, ...). A backend this
              PyTorch or GPU lacks is reported on stderr and skipped.
"""
import argparse
import contextlib
import csv
import math
import os
import statistics
import sys
import tempfile
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x):
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype) * self.weight


class Block(nn.Module):
    """Pre-norm attention + MLP with their inner residuals; returns the block output y."""

    def __init__(self, d, heads, d_ff):
        super().__init__()
        self.heads = heads
        self.norm1 = RMSNorm(d)
        self.qkv = nn.Linear(d, 3 * d, bias=False)
        self.out = nn.Linear(d, d, bias=False)
        self.norm2 = RMSNorm(d)
        self.up = nn.Linear(d, d_ff, bias=False)
        self.down = nn.Linear(d_ff, d, bias=False)

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, n, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        h = x + self.out(a.transpose(1, 2).reshape(b, n, d))
        return h + self.down(F.gelu(self.up(self.norm2(h)), approximate="tanh"))


class MoDBlock(nn.Module):
    def __init__(self, d, heads, d_ff, capacity):
        super().__init__()
        self.capacity = capacity
        self.router = nn.Linear(d, 1, bias=False)
        self.block = Block(d, heads, d_ff)

    def forward(self, x):
        b, s, d = x.shape
        k = min(s, max(1, math.ceil(self.capacity * s - 1e-9)))
        r = self.router(x).squeeze(-1)                       # [b, s]
        idx = torch.topk(r, k, dim=1, sorted=False).indices  # per sequence
        idx, _ = torch.sort(idx, dim=1)                      # causal order
        gidx = idx.unsqueeze(-1).expand(-1, -1, d)
        xt = torch.gather(x, 1, gidx)
        rt = torch.gather(r, 1, idx).unsqueeze(-1)
        delta = self.block(xt) - xt
        return x.scatter_add(1, gidx, rt * delta)


class LeanBlock(nn.Module):
    """The same block with PyTorch's fused pieces: F.rms_norm, one QKV matmul, SDPA."""

    def __init__(self, d, heads, d_ff):
        super().__init__()
        self.heads = heads
        self.g1 = nn.Parameter(torch.ones(d))
        self.g2 = nn.Parameter(torch.ones(d))
        self.qkv = nn.Linear(d, 3 * d, bias=False)
        self.out = nn.Linear(d, d, bias=False)
        self.up = nn.Linear(d, d_ff, bias=False)
        self.down = nn.Linear(d_ff, d, bias=False)

    def forward(self, x):
        b, n, d = x.shape
        u = F.rms_norm(x, (d,), self.g1, eps=1e-6)
        q, k, v = self.qkv(u).view(b, n, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        h = x + self.out(a.transpose(1, 2).reshape(b, n, d))
        return h + self.down(F.gelu(self.up(F.rms_norm(h, (d,), self.g2, eps=1e-6)), approximate="tanh"))


class LeanMoDBlock(nn.Module):
    """MoD routing on flat token rows: index_select to gather, index_add to scale and scatter."""

    def __init__(self, d, heads, d_ff, capacity):
        super().__init__()
        self.capacity = capacity
        self.router = nn.Linear(d, 1, bias=False)
        self.block = LeanBlock(d, heads, d_ff)

    def forward(self, x):
        b, s, d = x.shape
        k = min(s, max(1, math.ceil(self.capacity * s - 1e-9)))
        r = self.router(x).squeeze(-1)                                  # [b, s]
        idx = torch.topk(r, k, dim=1, sorted=False).indices
        idx, _ = torch.sort(idx, dim=1)
        rows = (idx + torch.arange(b, device=x.device).unsqueeze(1) * s).reshape(-1)  # flat token rows
        flat = x.reshape(b * s, d)
        xt = flat.index_select(0, rows)
        rt = r.reshape(-1).index_select(0, rows).unsqueeze(-1)
        delta = self.block(xt.view(b, k, d)).reshape(b * k, d) - xt
        return flat.index_add(0, rows, rt * delta).view(b, s, d)


def sdpa_backend(name):
    """The torch.nn.attention backend for 'cudnn', 'flash' or 'math' (None if unknown here)."""
    try:
        from torch.nn.attention import SDPBackend
    except ImportError:
        return None
    return {"cudnn": getattr(SDPBackend, "CUDNN_ATTENTION", None), "flash": getattr(SDPBackend, "FLASH_ATTENTION", None),
            "math": getattr(SDPBackend, "MATH", None)}.get(name)


def forced(fn, backend):
    """fn run with SDPA restricted to `backend` (no fallback: an unsupported case raises)."""
    from torch.nn.attention import sdpa_kernel

    def run(x):
        with sdpa_kernel([backend]):
            return fn(x)

    return run


def training_step(mod, recompute, dout):
    """One training step of `mod` on x: forward (under checkpoint when recompute is full) and
    backward from `dout`; gradients are dropped first, so each step allocates and writes them."""
    from torch.utils.checkpoint import checkpoint

    def run(x):
        for p in mod.parameters():
            p.grad = None
        x.grad = None
        out = checkpoint(mod, x, use_reentrant=False) if recompute == "full" else mod(x)
        out.backward(dout)

    return run


def time_module(fn, inputs, warmup, repeats, cuda=True):
    for i in range(warmup):
        fn(inputs[i % len(inputs)])
    if cuda:
        torch.cuda.synchronize()
    times = []
    for i in range(repeats):
        x = inputs[i % len(inputs)]
        if not cuda:
            t0 = time.perf_counter()
            fn(x)
            times.append(time.perf_counter() - t0)
            continue
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn(x)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    times.sort()
    return statistics.median(times), times[len(times) // 10], times[(len(times) * 9) // 10]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, help="CSV to write (temporary file + rename)")
    p.add_argument("--batch", type=int, nargs="+", default=[8])
    p.add_argument("--seq", type=int, nargs="+", default=[2048])
    p.add_argument("--d-model", type=int, nargs="+", default=[2048])
    p.add_argument("--heads", type=int, default=16)
    p.add_argument("--ff-mult", type=int, default=4)
    p.add_argument("--capacities", type=float, nargs="+", default=[0.125, 0.25, 0.5, 1.0])
    p.add_argument("--dtype", choices=["bf16", "fp32"], default="bf16")
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--repeats", type=int, default=50)
    p.add_argument("--compile", action="store_true", help="also time torch.compile'd modules (as --impls ... compiled)")
    p.add_argument("--impls", nargs="+", default=["eager"],
                   choices=["eager", "compiled", "sdpa-cudnn", "sdpa-flash", "sdpa-math"],
                   help="implementations to time (see above); default eager")
    p.add_argument("--train", action="store_true",
                   help="time one training step (forward + backward) per point, ops block_*_train")
    p.add_argument("--recompute", nargs="+", choices=["none", "full"], default=["none"],
                   help="with --train: activation recomputation (default none)")
    p.add_argument("--device", choices=["cuda", "cpu"], default="cuda",
                   help="cpu: run on the CPU (a check of the script; its times are no GPU peer)")
    a = p.parse_args()
    cuda = a.device == "cuda"
    if cuda and not torch.cuda.is_available():
        print("mod_block_torch: no CUDA device", file=sys.stderr)
        return 3
    if a.recompute != ["none"] and not a.train:
        print("mod_block_torch: --recompute applies to --train only", file=sys.stderr)
        return 2
    dtype = torch.bfloat16 if a.dtype == "bf16" else torch.float32
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device(a.device)
    device_name = torch.cuda.get_device_name() if cuda else "cpu"
    impls = list(dict.fromkeys(a.impls + (["compiled"] if a.compile else [])))
    recomputes = a.recompute if a.train else [None]
    suffix = "_train" if a.train else ""
    rows = []
    interrupted = False
    try:
        measure(a, impls, recomputes, suffix, dtype, dev, device_name, cuda, rows)
    except KeyboardInterrupt:  # SIGINT (timeout -s INT): keep what was timed
        interrupted = True
        print(f"mod_block_torch: interrupted after {len(rows)} rows", file=sys.stderr)
    if not rows:
        print("mod_block_torch: nothing was timed", file=sys.stderr)
        return 130 if interrupted else 1
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(a.out)) or ".", suffix=".tmp")
    with os.fdopen(fd, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)
    os.replace(tmp, a.out)
    return 130 if interrupted else 0


def measure(a, impls, recomputes, suffix, dtype, dev, device_name, cuda, rows):
    """Times every point of `a`'s grid, appending one row each to `rows`."""
    with contextlib.nullcontext() if a.train else torch.no_grad():
        for b in a.batch:
            for s in a.seq:
                for d in a.d_model:
                    f = a.ff_mult * d
                    torch.manual_seed(0)
                    inputs = [torch.randn(b, s, d, device=dev, dtype=dtype, requires_grad=a.train) for _ in range(4)]
                    dout = torch.randn(b, s, d, device=dev, dtype=dtype) if a.train else None
                    shapes = [("block_dense", 1.0)] + [("block_mod", c) for c in a.capacities]
                    for impl in impls:
                        lean = impl.startswith("sdpa-")
                        backend = sdpa_backend(impl[len("sdpa-"):]) if lean else None
                        if lean and backend is None:
                            print(f"mod_block_torch: {impl}: this PyTorch has no such SDPA backend; skipped",
                                  file=sys.stderr)
                            continue
                        for (op, c), recompute in [(sh, r) for sh in shapes for r in recomputes]:
                            torch.manual_seed(1)
                            if op == "block_dense":
                                mod = (LeanBlock if lean else Block)(d, a.heads, f).to(dev, dtype)
                            else:
                                mod = (LeanMoDBlock if lean else MoDBlock)(d, a.heads, f, c).to(dev, dtype)
                            fn = torch.compile(mod) if impl == "compiled" else mod
                            if a.train:
                                fn = training_step(fn, recompute, dout)
                            if lean:
                                fn = forced(fn, backend)
                            try:
                                med, p10, p90 = time_module(fn, inputs, a.warmup, a.repeats, cuda)
                            except RuntimeError as e:  # e.g. a forced SDPA backend that cannot run this case
                                print(f"mod_block_torch: {impl} {op}{suffix} c={c:g}: {str(e).splitlines()[0]}; "
                                      "skipped", file=sys.stderr)
                                continue
                            row = dict(impl=f"torch-{impl}", op=op + suffix, dtype=a.dtype, batch=b, seq_len=s,
                                       d_model=d, n_heads=a.heads, d_ff=f, capacity=c, median_s=med,
                                       p10_s=p10, p90_s=p90, samples=a.repeats, device=device_name,
                                       torch=torch.__version__)
                            if a.train:
                                row["recompute"] = recompute
                            rows.append(row)
                            print(f"{impl:10s} {op + suffix:17s} B={b} S={s} d={d} c={c:<6g}"
                                  f"{' ' + recompute if recompute else ''} {med * 1e3:9.3f} ms", file=sys.stderr)
                            del fn, mod


if __name__ == "__main__":
    sys.exit(main())
