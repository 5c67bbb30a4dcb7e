#!/usr/bin/env python3
"""One KV-cached decode step of a (MoD) transformer written in PyTorch the way HF-style code
does, timed on the GPU: the peer of modsim's decode_step (kernels/decode.hpp).

B sequences, one new token each (hidden states x [B, d], as modsim's set_input), through
n_layers pre-norm decoder layers, then the final RMSNorm and the LM head:
  dense layer   u = RMSNorm(x); q, k, v = u·W_q, u·W_k, u·W_v (GQA: n_kv_heads K/V heads);
                k, v are written into a static, preallocated cache of context+1 slots per
                sequence at index `context`; F.scaled_dot_product_attention of q over
                cache[:context+1]; h = x + o·W_o; x = h + MLP(RMSNorm(h)) (gelu or swiglu).
  routed layer  (MoD, the model's schedule: every_other = odd layers) a causal predictor
                p = Linear(d, h) -> ReLU -> Linear(h, 1) scores the B tokens; the m =
                round(capacity·B) with the largest p enter (torch.topk: a static count, the same
                forced count modsim's profiler uses); they are gathered (index_select) with
                their sequences' routed-layer caches, which hold routed_tokens(capacity,
                context) = ceil(capacity·context) entries (+1 slot for the new token); the same
                block runs on them; r = router(x~) and x = x.index_add(idx, r·(y − x~))
                (Equation 1). The others pass unchanged.
Every step is uncommitted, as modsim's timed steps: it writes the new K/V at the same slot and
attends over it, so it repeats on the same cache.

Implementations (--impls): eager (impl torch-decode-eager) and graph (torch-decode-graph: the
whole step captured once with torch.cuda.graphs and replayed; possible because the routed
count is static, so every shape in the step is). Timing as mod_block_torch.py: warm-up, then
CUDA events around each step, the median of --repeats; decode steps run back to back (no L2
flush), rotating --input-copies new-token inputs, as modsim's decode_step rows.

Output: one CSV row per (model, impl, batch, context) with the peer columns impl, op
(decode_step), dtype, batch, seq_len (= context), d_model, n_heads, d_ff, capacity (the
model's routed fraction; 1 for a dense model), median_s, then p10_s, p90_s, samples, model,
n_layers, n_kv_heads, mlp, routed_count, device, torch. profiler/peer/peer_csv.py joins them
with modsim's decode_step rows (`modsim profile --backend cuda --preset decode --model ...`).

  decode_torch.py --model mod-220m --model dense-220m --batch 1 8 32 128 --context 512 2048 8192 \
      --out decode-torch.csv
--model takes a name under configs/models/ or a path to a modsim model JSON (d_model,
n_layers, n_heads, n_kv_heads, d_head, d_ff, vocab_size, mlp, routing.capacity,
routing.schedule, routing.predictor_hidden). Imports without PyTorch (the torch import is
inside main); without a CUDA device it exits 3.
"""
import argparse
import csv
import json
import math
import os
import statistics
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
FIELDS = ["impl", "op", "dtype", "batch", "seq_len", "d_model", "n_heads", "d_ff", "capacity", "median_s",
          "p10_s", "p90_s", "samples", "model", "n_layers", "n_kv_heads", "mlp", "routed_count", "device", "torch"]


# --- the model config (no torch needed) ---

def routed_tokens(capacity, n):
    """core/types.hpp routed_tokens: ceil(capacity·n) forgiving 1e-9, clamped to [1, n] (0 for n <= 0)."""
    if n <= 0:
        return 0
    exact = capacity * n
    k = math.ceil(exact - 1e-9 * max(1.0, abs(exact)))
    return int(min(max(k, 1), n))


def forced_count(capacity, batch):
    """profiler decode_routed_count: std::round (half away from zero) of capacity·B, in [0, B]."""
    return int(min(max(math.floor(capacity * batch + 0.5), 0), batch))


def routed_layers(n_layers, schedule):
    """The routed layer indices of a modsim schedule (docs/contracts.md: none, all, every_other = odd
    indices, every_nth:N = index % N == N-1, or an explicit list)."""
    if isinstance(schedule, list):
        return sorted({int(i) for i in schedule if 0 <= int(i) < n_layers})
    if schedule in (None, "none"):
        return []
    if schedule == "all":
        return list(range(n_layers))
    if schedule == "every_other":
        return [i for i in range(n_layers) if i % 2 == 1]
    if isinstance(schedule, str) and schedule.startswith("every_nth:"):
        n = int(schedule.split(":", 1)[1])
        return [i for i in range(n_layers) if i % n == n - 1]
    raise ValueError(f"routing.schedule: unknown schedule {schedule!r}")


def load_model(name_or_path):
    """A modsim model JSON (configs/models format; HF config.json keys accepted too)."""
    path = name_or_path
    if not os.path.exists(path):
        path = os.path.join(ROOT, "configs", "models", name_or_path + ("" if name_or_path.endswith(".json") else ".json"))
    with open(path) as fh:
        j = json.load(fh)
    if "hidden_size" in j and "d_model" not in j:  # a HuggingFace config.json
        act = j.get("hidden_act", "gelu")
        j = {"name": j.get("_name_or_path") or os.path.basename(os.path.dirname(os.path.abspath(path))),
             "d_model": j["hidden_size"], "n_layers": j["num_hidden_layers"], "n_heads": j["num_attention_heads"],
             "n_kv_heads": j.get("num_key_value_heads", j["num_attention_heads"]), "d_head": j.get("head_dim", 0),
             "d_ff": j["intermediate_size"], "vocab_size": j["vocab_size"],
             "mlp": "swiglu" if act in ("silu", "swish") else "gelu"}
    if j.get("mode"):
        raise ValueError(f"{path}: MoE / MoDE layers have no decode peer")
    d, h = int(j["d_model"]), int(j["n_heads"])
    m = {"name": j.get("name") or os.path.splitext(os.path.basename(path))[0], "d_model": d, "n_layers": int(j["n_layers"]),
         "n_heads": h, "n_kv_heads": int(j.get("n_kv_heads") or h), "d_head": int(j.get("d_head") or d // h),
         "d_ff": int(j["d_ff"]), "vocab_size": int(j.get("vocab_size", 0)), "mlp": j.get("mlp", "gelu"),
         "capacity": 1.0, "routed": [], "predictor_hidden": 0}
    if m["mlp"] not in ("gelu", "swiglu"):
        raise ValueError(f"{path}: mlp: expected gelu or swiglu, got {m['mlp']!r}")
    if h % m["n_kv_heads"]:
        raise ValueError(f"{path}: n_kv_heads must divide n_heads")
    r = j.get("routing")
    if r and r.get("schedule", "every_other") != "none":
        if r.get("inference", "predictor") != "predictor":
            raise ValueError(f"{path}: routing.inference: the decode step routes with the causal predictor")
        m["capacity"] = float(r["capacity"])
        m["routed"] = routed_layers(m["n_layers"], r.get("schedule", "every_other"))
        m["predictor_hidden"] = int(r.get("predictor_hidden") or d)  # as modsim: default d_model
        if not m["routed"]:
            m["capacity"] = 1.0
    return m


# --- the step (torch imported in main; nothing below runs at import) ---

def build(torch, m, batch, context, dtype, dev, seed=1):
    """Weights and static caches of model m for `batch` sequences with `context` cached tokens."""
    g = torch.Generator(device=dev)
    g.manual_seed(seed)
    d, H, KV, dh, f = m["d_model"], m["n_heads"], m["n_kv_heads"], m["d_head"], m["d_ff"]

    def w(n_in, n_out):
        return (torch.randn(n_in, n_out, generator=g, device=dev, dtype=torch.float32) / math.sqrt(n_in)).to(dtype)

    def gain(n):
        return (1.0 + 0.1 * torch.randn(n, generator=g, device=dev, dtype=torch.float32)).to(dtype)

    def cache(slots):  # [B, KV, slots, dh], the cached entries drawn N(0, 0.5²) as modsim's fill_cache
        return torch.empty(batch, KV, slots, dh, device=dev, dtype=dtype).normal_(0.0, 0.5, generator=g)

    layers = []
    for i in range(m["n_layers"]):
        routed = i in m["routed"]
        L = routed_tokens(m["capacity"], context) if routed else context
        lw = {"routed": routed, "len": L, "g1": gain(d), "wq": w(d, H * dh), "wk": w(d, KV * dh),
              "wv": w(d, KV * dh), "wo": w(H * dh, d),
              "g2": gain(d), "wup": w(d, f), "wgate": w(d, f) if m["mlp"] == "swiglu" else None, "wdown": w(f, d),
              "k": cache(L + 1), "v": cache(L + 1)}
        if routed:
            ph = m["predictor_hidden"]
            lw.update(router=w(d, 1), p1=w(d, ph), p2=w(ph, 1), pb=torch.zeros(1, device=dev, dtype=dtype))
        layers.append(lw)
    out = {"layers": layers, "gf": gain(d), "wvocab": w(d, m["vocab_size"]) if m["vocab_size"] > 0 else None}
    return out


def make_step(torch, m, weights, capacity_count):
    import torch.nn.functional as F

    d, H, KV, dh = m["d_model"], m["n_heads"], m["n_kv_heads"], m["d_head"]
    gqa = KV != H
    try:  # enable_gqa: PyTorch >= 2.5; else the K/V heads are repeated
        import inspect
        has_enable_gqa = "enable_gqa" in inspect.signature(F.scaled_dot_product_attention).parameters
    except (TypeError, ValueError):
        has_enable_gqa = False

    def rms(x, g):
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)).to(x.dtype) * g

    def attend(q, k, v):  # q [n, H, 1, dh]; k, v [n, KV, L+1, dh]
        if not gqa:
            return F.scaled_dot_product_attention(q, k, v)
        if has_enable_gqa:
            return F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
        rep = H // KV
        return F.scaled_dot_product_attention(q, k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1))

    def block(lw, x, kc, vc, rows):
        """The pre-norm layer on x [n, d] whose sequences' caches are kc, vc [n, KV, L+1, dh];
        writes the new K/V at slot L (the static index `context` of a dense layer). `rows`:
        the batch rows of x (None: all, in order) for writing into the layer's own cache."""
        n = x.shape[0]
        L = lw["len"]
        u = rms(x, lw["g1"])
        q = (u @ lw["wq"]).view(n, H, 1, dh)  # q_proj, k_proj, v_proj: three GEMMs, as HF's layers
        k = (u @ lw["wk"]).view(n, KV, dh)
        v = (u @ lw["wv"]).view(n, KV, dh)
        if rows is None:
            kc[:, :, L].copy_(k)
            vc[:, :, L].copy_(v)
        else:  # the gathered copies and the layer's own cache both get the new entry
            kc[:, :, L].copy_(k)
            vc[:, :, L].copy_(v)
            lw["k"][:, :, L].index_copy_(0, rows, k)
            lw["v"][:, :, L].index_copy_(0, rows, v)
        a = attend(q, kc, vc).reshape(n, H * dh)
        h = x + a @ lw["wo"]
        u = rms(h, lw["g2"])
        if lw["wgate"] is not None:
            z = F.silu(u @ lw["wgate"]) * (u @ lw["wup"])
        else:
            z = F.gelu(u @ lw["wup"], approximate="tanh")
        return h + z @ lw["wdown"]

    def step(x):
        for lw in weights["layers"]:
            if not lw["routed"]:
                x = block(lw, x, lw["k"], lw["v"], None)
                continue
            p = (torch.relu(x @ lw["p1"]) @ lw["p2"]).squeeze(-1) + lw["pb"]  # [B] predictor logits
            if capacity_count == 0:
                continue  # nobody enters: the predictor ran, x passes unchanged
            idx = torch.topk(p, capacity_count, sorted=False).indices  # the forced count, static
            xt = x.index_select(0, idx)
            kc = lw["k"].index_select(0, idx)  # the routed sequences' caches, gathered
            vc = lw["v"].index_select(0, idx)
            y = block(lw, xt, kc, vc, idx)
            r = xt @ lw["router"]  # [m, 1]
            x = x.index_add(0, idx, r * (y - xt))
        if weights["wvocab"] is None:
            return x
        return rms(x, weights["gf"]) @ weights["wvocab"]

    return step


def time_step(torch, fn, inputs, static_x, warmup, repeats):
    """Median, p10, p90 seconds of fn() (CUDA events), inputs copied into static_x first."""
    for i in range(warmup):
        static_x.copy_(inputs[i % len(inputs)])
        fn()
    torch.cuda.synchronize()
    times = []
    for i in range(repeats):
        static_x.copy_(inputs[i % len(inputs)])
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    times.sort()
    return statistics.median(times), times[len(times) // 10], times[(len(times) * 9) // 10]


def capture(torch, step, static_x):
    """step(static_x) captured in a CUDA graph (after warm-up on a side stream); returns replay."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            step(static_x)
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        step(static_x)
    return graph.replay, graph


def write_rows(path, rows):
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)) or ".", suffix=".tmp")
    with os.fdopen(fd, "w", newline="") as fh:
        wr = csv.DictWriter(fh, fieldnames=FIELDS)
        wr.writeheader()
        wr.writerows(rows)
    os.replace(tmp, path)


def run_point(torch, m, b, ctx, impls, a, dtype, dev):
    """The rows of one (model, batch, context): weights and caches live only in this call."""
    count = forced_count(m["capacity"], b) if m["routed"] else b
    weights = build(torch, m, b, ctx, dtype, dev)
    gen = torch.Generator(device=dev)
    gen.manual_seed(3000)
    inputs = [torch.randn(b, m["d_model"], generator=gen, device=dev, dtype=dtype) for _ in range(max(1, a.input_copies))]
    static_x = torch.empty_like(inputs[0])
    step = make_step(torch, m, weights, count)
    rows = []
    for impl in impls:
        graph = None
        if impl == "graph":
            fn, graph = capture(torch, step, static_x)
        else:
            def fn():
                return step(static_x)
        med, p10, p90 = time_step(torch, fn, inputs, static_x, a.warmup, a.repeats)
        del fn, graph
        rows.append(dict(impl=f"torch-decode-{impl}", op="decode_step", dtype=a.dtype, batch=b, seq_len=ctx,
                         d_model=m["d_model"], n_heads=m["n_heads"], d_ff=m["d_ff"], capacity=m["capacity"],
                         median_s=med, p10_s=p10, p90_s=p90, samples=a.repeats, model=m["name"],
                         n_layers=m["n_layers"], n_kv_heads=m["n_kv_heads"], mlp=m["mlp"], routed_count=count,
                         device=torch.cuda.get_device_name(), torch=torch.__version__))
        print(f"{m['name']:12s} {impl:5s} B={b:<4d} context={ctx:<6d} routed={count:<4d} {med * 1e3:9.4f} ms",
              file=sys.stderr, flush=True)
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, help="CSV to write (rewritten after every point: temporary file + rename)")
    p.add_argument("--model", action="append", required=True,
                   help="a name under configs/models/ or a modsim model JSON; repeat for several")
    p.add_argument("--batch", type=int, nargs="+", default=[1, 8, 32, 128])
    p.add_argument("--context", type=int, nargs="+", default=[512, 2048, 8192])
    p.add_argument("--dtype", choices=["bf16", "fp32"], default="bf16")
    p.add_argument("--impls", nargs="+", choices=["eager", "graph"], default=["eager", "graph"])
    p.add_argument("--cuda-graph", action="store_true", help="time only the CUDA-graph step (as --impls graph)")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--repeats", type=int, default=30)
    p.add_argument("--input-copies", type=int, default=4)
    p.add_argument("--max-seconds", type=float, default=0,
                   help="stop starting new points after this many seconds (0: no limit); rows so far are kept")
    a = p.parse_args()
    models = []
    for name in a.model:
        try:
            models.append(load_model(name))
        except (OSError, KeyError, ValueError) as e:
            print(f"decode_torch: --model {name}: {e}", file=sys.stderr)
            return 2
    impls = ["graph"] if a.cuda_graph else list(dict.fromkeys(a.impls))
    try:
        import torch
    except ImportError:
        print("decode_torch: PyTorch is not installed", file=sys.stderr)
        return 3
    if not torch.cuda.is_available():
        print("decode_torch: no CUDA device", file=sys.stderr)
        return 3
    dtype = torch.bfloat16 if a.dtype == "bf16" else torch.float32
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    t_start = time.monotonic()
    rows = []
    stopped = False
    with torch.no_grad():
        for m in models:
            for b in a.batch:
                for ctx in a.context:
                    if a.max_seconds and time.monotonic() - t_start > a.max_seconds:
                        stopped = True
                        break
                    try:
                        rows += run_point(torch, m, b, ctx, impls, a, dtype, dev)
                    except (RuntimeError, torch.cuda.OutOfMemoryError) as e:  # OOM, an unsupported kernel
                        print(f"decode_torch: {m['name']} B={b} context={ctx}: {str(e).splitlines()[0]}; skipped",
                              file=sys.stderr, flush=True)
                    torch.cuda.synchronize()
                    torch.cuda.empty_cache()  # run_point's caches are gone: give their memory back
                    if rows:
                        write_rows(a.out, rows)
                if stopped:
                    break
            if stopped:
                break
    if stopped:
        print(f"decode_torch: --max-seconds {a.max_seconds:g} reached; {len(rows)} rows written", file=sys.stderr)
    if not rows:
        print("decode_torch: nothing was timed", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
