#!/usr/bin/env python3
"""One layer's CPU training step, modsim against PyTorch CPU autograd, in one run.

For every shape (the product of the shape arguments) and every capacity and recomputation,
the same layer is run forward + backward (dL/dout fixed, every weight's and the input's
gradient; no optimizer step) by modsim's CPU kernels (kernels/train.hpp, through
`modsim-bench-train --csv`) and by PyTorch autograd, both fp32 on --threads threads (2 by
default), interleaved: each round runs modsim's repeats in a fresh modsim-bench-train process,
then PyTorch's repeats, so load on a shared machine hits both. A round's time is the median of
its repeats (after one warm-up step each round); a layer's time is the median over rounds, and
the ratio printed is the median over rounds of modsim's round time / PyTorch's round time.

The PyTorch layer (written here as kernels/train.hpp states the layer):
  RMSNorm (x·rsqrt(mean(x²) + 1e-6)·g) -> Q, K, V as explicit matmuls (x @ W, W [in, out]) ->
  attention written out (default, --attention explicit): scores = q @ kᵀ / sqrt(d_head) on the
  full n×n square, masked_fill(-inf) above the diagonal, softmax, @ v (GQA: each kv head
  repeated for its group of query heads) -> @ W_o + residual -> RMSNorm -> gelu (tanh) MLP or
  swiglu (silu(u @ W_gate) · (u @ W_up)) @ W_down + residual.
  --attention sdpa-math: F.scaled_dot_product_attention(is_causal=True) forced to its math
  backend; --attention sdpa: the backend PyTorch picks on the CPU (its fused flash kernel).
  Capacity < 1 is the MoD layer: r = x @ w_router per token, torch.topk per sequence, indices
  sorted by position, torch.gather of x̃ and r̃, the block on x̃, and
  out = x.scatter_add(r̃·(block(x̃) − x̃)) (Equation 1); capacity 1 is the dense layer.
  Recomputation: selective wraps the attention core (scores, softmax, @ v) in
  torch.utils.checkpoint, full the whole layer.

Output: one line per (shape, capacity, recompute) with both step times, both GFLOP/s (modsim's
FLOP convention: 3x the forward's matmul FLOPs, attention the full square), modsim's sgemm
rate and the ratio; --csv FILE writes the same rows. Exit 1 when PyTorch is missing or
modsim-bench-train fails, 2 on bad arguments.

  scripts/bench-train-peer.py [--bench build/kernels/modsim-bench-train] [--threads 2]
      [--batch 2] [--seq 512] [--d-model 512] [--heads 8] [--kv-heads H] [--d-ff 2048]
      [--mlp gelu|swiglu] [--capacity 1 0.125 0.5] [--recompute none]
      [--rounds 7] [--repeats 3] [--attention explicit|sdpa-math|sdpa] [--csv FILE]
"""
import argparse
import csv
import itertools
import math
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLUMNS = ["batch", "seq_len", "d_model", "n_heads", "n_kv_heads", "d_ff", "mlp", "capacity", "recompute", "threads",
           "attention", "rounds", "repeats", "modsim_step_s", "torch_step_s", "ratio", "modsim_gflops",
           "torch_gflops", "sgemm_gflops"]


def routed_tokens(capacity, seq):
    """k = clamp(ceil(capacity·S), 1, S), as modsim's routed_tokens (robust to rounding)."""
    return min(seq, max(1, math.ceil(capacity * seq - 1e-9)))


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bench", default=os.path.join(ROOT, "build", "kernels", "modsim-bench-train"),
                   help="the modsim-bench-train binary (default: build/kernels/modsim-bench-train)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--batch", type=int, nargs="+", default=[2])
    p.add_argument("--seq", type=int, nargs="+", default=[512])
    p.add_argument("--d-model", type=int, nargs="+", default=[512])
    p.add_argument("--heads", type=int, nargs="+", default=[8])
    p.add_argument("--kv-heads", type=int, nargs="+", default=None, help="default: --heads (MHA)")
    p.add_argument("--d-ff", type=int, nargs="+", default=[2048])
    p.add_argument("--mlp", nargs="+", choices=["gelu", "swiglu"], default=["gelu"])
    p.add_argument("--capacity", type=float, nargs="+", default=[1.0, 0.125, 0.5],
                   help="routed fraction per sequence; 1 is the dense layer (default 1 0.125 0.5)")
    p.add_argument("--recompute", nargs="+", choices=["none", "selective", "full"], default=["none"])
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--repeats", type=int, default=3, help="timed steps per round and side (after one warm-up)")
    p.add_argument("--attention", choices=["explicit", "sdpa-math", "sdpa"], default="explicit")
    p.add_argument("--csv", help="also write the rows to this CSV file")
    a = p.parse_args()
    for name in ["threads", "rounds", "repeats"]:
        if getattr(a, name) < 1:
            p.error(f"--{name} must be at least 1")
    for c in a.capacity:
        if not 0.0 < c <= 1.0:
            p.error(f"--capacity {c}: must be in (0, 1]")
    return a


def layer_flops(b, s, d, heads, kv_heads, d_ff, mlp, capacity):
    """The step's FLOPs as modsim-bench-train counts them: 3x the forward's matmul FLOPs."""
    dh = d // heads
    dq, dkv = heads * dh, kv_heads * dh
    n = s if capacity >= 1.0 else routed_tokens(capacity, s)
    m = b * n
    mats = 3 if mlp == "swiglu" else 2
    fwd = 2.0 * m * d * (dq + 2 * dkv) + 4.0 * b * n * n * dq + 2.0 * m * dq * d + mats * 2.0 * m * d * d_ff
    if capacity < 1.0:
        fwd += 2.0 * b * s * d
    return 3.0 * fwd


class TorchLayer:
    """The layer of kernels/train.hpp in PyTorch autograd (see the module docstring)."""

    def __init__(self, torch, b, s, d, heads, kv_heads, d_ff, mlp, capacity, recompute, attention):
        self.torch = torch
        self.F = torch.nn.functional
        self.b, self.s, self.d, self.heads, self.kv_heads = b, s, d, heads, kv_heads
        self.dh = d // heads
        self.mlp, self.capacity, self.recompute, self.attention = mlp, capacity, recompute, attention
        g = torch.Generator().manual_seed(0)

        def weight(rows, cols):
            return (torch.randn(rows, cols, generator=g) / math.sqrt(rows)).requires_grad_()

        def gain():
            return (1.0 + 0.1 * torch.randn(d, generator=g)).requires_grad_()

        dq, dkv = heads * self.dh, kv_heads * self.dh
        self.params = {"g_attn": gain(), "w_q": weight(d, dq), "w_k": weight(d, dkv), "w_v": weight(d, dkv),
                       "w_o": weight(dq, d), "g_mlp": gain(), "w_up": weight(d, d_ff), "w_down": weight(d_ff, d)}
        if mlp == "swiglu":
            self.params["w_gate"] = weight(d, d_ff)
        if capacity < 1.0:
            self.params["router_w"] = (torch.randn(d, generator=g) / math.sqrt(d)).requires_grad_()
            self.k = routed_tokens(capacity, s)
        self.x = torch.randn(b, s, d, generator=g).requires_grad_()
        self.dout = torch.randn(b, s, d, generator=g)
        n = self.k if capacity < 1.0 else s
        self.mask = torch.ones(n, n, dtype=torch.bool).triu(1)
        if attention == "sdpa-math":
            from torch.nn.attention import SDPBackend, sdpa_kernel
            self.sdpa_context = lambda: sdpa_kernel([SDPBackend.MATH])
        else:
            import contextlib
            self.sdpa_context = contextlib.nullcontext

    def rms(self, x, g):
        return x * self.torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * g

    def attention_core(self, q, k, v):
        if self.attention == "explicit":
            scores = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(self.dh))
            probs = self.torch.softmax(scores.masked_fill(self.mask, float("-inf")), dim=-1)
            return probs @ v
        with self.sdpa_context():
            return self.F.scaled_dot_product_attention(q, k, v, is_causal=True)

    def block(self, x):
        p, torch = self.params, self.torch
        b, n, _ = x.shape
        a = self.rms(x, p["g_attn"])
        q = (a @ p["w_q"]).view(b, n, self.heads, self.dh).transpose(1, 2)
        k = (a @ p["w_k"]).view(b, n, self.kv_heads, self.dh).transpose(1, 2)
        v = (a @ p["w_v"]).view(b, n, self.kv_heads, self.dh).transpose(1, 2)
        if self.kv_heads != self.heads:
            group = self.heads // self.kv_heads
            k = k.repeat_interleave(group, dim=1)
            v = v.repeat_interleave(group, dim=1)
        if self.recompute == "selective":
            o = torch.utils.checkpoint.checkpoint(self.attention_core, q, k, v, use_reentrant=False)
        else:
            o = self.attention_core(q, k, v)
        h = x + o.transpose(1, 2).reshape(b, n, self.heads * self.dh) @ p["w_o"]
        u = self.rms(h, p["g_mlp"])
        if self.mlp == "swiglu":
            act = self.F.silu(u @ p["w_gate"]) * (u @ p["w_up"])
        else:
            act = self.F.gelu(u @ p["w_up"], approximate="tanh")
        return h + act @ p["w_down"]

    def layer(self, x):
        if self.capacity >= 1.0:
            return self.block(x)
        torch = self.torch
        r = x @ self.params["router_w"]                              # [b, s]
        idx = torch.topk(r, self.k, dim=1, sorted=False).indices
        idx, _ = torch.sort(idx, dim=1)                              # position order
        gidx = idx.unsqueeze(-1).expand(-1, -1, self.d)
        xt = torch.gather(x, 1, gidx)
        rt = torch.gather(r, 1, idx).unsqueeze(-1)
        return x.scatter_add(1, gidx, rt * (self.block(xt) - xt))

    def step(self):
        """Seconds of one forward + backward (gradients freed before, outside the time)."""
        for t in list(self.params.values()) + [self.x]:
            t.grad = None
        start = time.perf_counter()
        if self.recompute == "full":
            out = self.torch.utils.checkpoint.checkpoint(self.layer, self.x, use_reentrant=False)
        else:
            out = self.layer(self.x)
        out.backward(self.dout)
        return time.perf_counter() - start


def modsim_round(a, shape, capacity, recompute):
    """modsim-bench-train's median step seconds over a.repeats (one fresh process), and its row."""
    b, s, d, heads, kv_heads, d_ff, mlp = shape
    cmd = [a.bench, "--csv", "--threads", str(a.threads), "--repeats", str(a.repeats), "--batch", str(b), "--seq",
           str(s), "--d-model", str(d), "--heads", str(heads), "--kv-heads", str(kv_heads), "--d-ff", str(d_ff),
           "--mlp", mlp, "--capacity", repr(capacity), "--recompute", recompute]
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {run.returncode}: {run.stderr.strip()}")
    rows = list(csv.DictReader(run.stdout.splitlines()))
    if len(rows) != 1:
        raise RuntimeError(f"{' '.join(cmd)} printed {len(rows)} rows, expected 1")
    return float(rows[0]["step_s"]), rows[0]


def main():
    a = parse_args()
    try:
        import torch
        import torch.utils.checkpoint  # noqa: F401
    except ImportError:
        print("bench-train-peer.py: PyTorch is not installed for " + sys.executable +
              " (pip install torch, or run this script with a Python that has it)", file=sys.stderr)
        return 1
    if not os.access(a.bench, os.X_OK):
        print(f"bench-train-peer.py: {a.bench}: no modsim-bench-train there (ninja -C build modsim-bench-train, "
              "or --bench PATH)", file=sys.stderr)
        return 1
    torch.set_num_threads(a.threads)
    torch.set_grad_enabled(True)
    kv_list = a.kv_heads if a.kv_heads else [None]
    shapes = []
    for b, s, d, heads, kv, d_ff, mlp in itertools.product(a.batch, a.seq, a.d_model, a.heads, kv_list, a.d_ff, a.mlp):
        kv = heads if kv is None else kv
        if d % heads or heads % kv:
            print(f"bench-train-peer.py: skipped d_model {d}, heads {heads}, kv heads {kv}: heads must divide "
                  "d_model and kv heads divide heads", file=sys.stderr)
            continue
        shapes.append((b, s, d, heads, kv, d_ff, mlp))
    print(f"# torch {torch.__version__}, {a.threads} threads (torch.get_num_threads() = {torch.get_num_threads()}), "
          f"attention {a.attention}, {a.rounds} rounds x {a.repeats} repeats; load {os.getloadavg()[0]:.2f}")
    header = (f"{'B':>3} {'S':>5} {'d':>5} {'H':>3} {'kv':>3} {'d_ff':>5} {'mlp':>6} {'cap':>6} {'recompute':>9} "
              f"{'modsim ms':>10} {'torch ms':>9} {'ratio':>6} {'modsim GF/s':>11} {'torch GF/s':>10} {'sgemm GF/s':>10}")
    print(header)
    rows = []
    try:
        for shape in shapes:
            b, s, d, heads, kv, d_ff, mlp = shape
            for capacity, recompute in itertools.product(a.capacity, a.recompute):
                layer = TorchLayer(torch, b, s, d, heads, kv, d_ff, mlp, capacity, recompute, a.attention)
                ours, theirs, ratios, sgemm = [], [], [], []
                for _ in range(a.rounds):
                    t_ours, row = modsim_round(a, shape, capacity, recompute)
                    layer.step()  # warm-up
                    t_theirs = statistics.median(layer.step() for _ in range(a.repeats))
                    ours.append(t_ours)
                    theirs.append(t_theirs)
                    ratios.append(t_ours / t_theirs)
                    sgemm.append(float(row["sgemm_gflops"]))
                flops = layer_flops(b, s, d, heads, kv, d_ff, mlp, capacity)
                m_s, t_s = statistics.median(ours), statistics.median(theirs)
                out = {"batch": b, "seq_len": s, "d_model": d, "n_heads": heads, "n_kv_heads": kv, "d_ff": d_ff,
                       "mlp": mlp, "capacity": capacity, "recompute": recompute, "threads": a.threads,
                       "attention": a.attention, "rounds": a.rounds, "repeats": a.repeats,
                       "modsim_step_s": f"{m_s:.6g}", "torch_step_s": f"{t_s:.6g}",
                       "ratio": f"{statistics.median(ratios):.4f}", "modsim_gflops": f"{flops / m_s * 1e-9:.2f}",
                       "torch_gflops": f"{flops / t_s * 1e-9:.2f}", "sgemm_gflops": f"{statistics.median(sgemm):.2f}"}
                rows.append(out)
                print(f"{b:>3} {s:>5} {d:>5} {heads:>3} {kv:>3} {d_ff:>5} {mlp:>6} {capacity:>6.4g} {recompute:>9} "
                      f"{m_s * 1e3:>10.2f} {t_s * 1e3:>9.2f} {out['ratio']:>6.6} {out['modsim_gflops']:>11} "
                      f"{out['torch_gflops']:>10} {out['sgemm_gflops']:>10}", flush=True)
    except RuntimeError as e:
        print(f"bench-train-peer.py: {e}", file=sys.stderr)
        return 1
    print(f"# load {os.getloadavg()[0]:.2f} at the end; ratio = modsim / torch (median over rounds), < 1: modsim faster")
    if a.csv:
        with open(a.csv, "w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=COLUMNS)
            w.writeheader()
            w.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
