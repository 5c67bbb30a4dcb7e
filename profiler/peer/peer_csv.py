#!/usr/bin/env python3
"""Joins one GPU run's modsim and PyTorch MoD-block timings into the peer comparison.

Inputs (both from the same run on the same GPU):
  --modsim FILE   modsim's measurements CSV of the peer grid (`modsim profile --backend cuda
                  --grid configs/grids/peer-gpu.json`): block_dense and block_mod rows.
  --torch FILE    profiler/peer/mod_block_torch.py's CSV (impl, op, ..., median_s, device).
  --modsim-decode FILE
                  modsim's decode measurements (`modsim profile --backend cuda --preset decode
                  --model mod-220m --model dense-220m`): its decode_step rows, one per
                  decode_routing (sync, pad, graph).
  --torch-decode FILE
                  profiler/peer/decode_torch.py's CSV (torch-decode-eager, torch-decode-graph).
  --train         the block files hold training steps instead: modsim's train preset CSV
                  (`modsim profile --backend cuda --preset train`: block_dense_train and
                  block_mod_train rows) and mod_block_torch.py --train's, joined on the shape, the
                  capacity and the recomputation; written to peer-train-<gpu>-<date>.csv (the
                  columns below and recompute) and <gpu>-train.md.
  Either pair may be left out (not both). decode_step rows join on the same columns: seq_len is
  the cached context, capacity the model's routed fraction (1 for a dense model). The CSV's
  modsim-cuda decode_step rows are those of one routing (--decode-routing, default graph: the
  whole step in one CUDA graph, as torch-decode-graph); the .md shows every routing.
Outputs:
  <out-dir>/peer-<gpu>-<date>.csv with exactly the columns
      impl, op, dtype, batch, seq_len, d_model, n_heads, d_ff, capacity, median_s
  (impl: modsim-cuda for modsim's rows, torch-... for PyTorch's), and <out-dir>/<gpu>.md: the
  table of milliseconds and each block's time relative to the fastest PyTorch implementation.
The GPU name is read from the rows (NVIDIA H100 80GB HBM3 -> h100) unless --gpu names it;
rows of two different GPUs are refused.
"""
import argparse
import csv
import datetime
import os
import re
import sys
import tempfile

COLUMNS = ["impl", "op", "dtype", "batch", "seq_len", "d_model", "n_heads", "d_ff", "capacity", "median_s"]
SHAPE = ["dtype", "batch", "seq_len", "d_model", "n_heads", "d_ff"]


def gpu_slug(name):
    """'NVIDIA H100 80GB HBM3' -> 'h100'; a name without such a model number -> its lowercase slug."""
    m = re.search(r"\b([A-Za-z]{1,2}\d{2,4}[A-Za-z]?)\b", name.replace("NVIDIA", ""))
    if m:
        return m.group(1).lower()
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "gpu"


def read(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def capacity_text(c):
    return f"{float(c):g}"


def write_atomically(path, text):
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)) or ".", suffix=".tmp")
    with os.fdopen(fd, "w", newline="") as fh:
        fh.write(text)
    os.replace(tmp, path)


def decode_table(rows, routing):
    """The decode_step section of the .md: per model shape (d, H, d_ff, capacity), one line per
    implementation (every modsim routing), one column per (batch, context), and the ratio of
    modsim-cuda (the CSV's routing) over the fastest PyTorch step."""
    md = ["## Decode step (KV-cached, one new token per sequence)", "",
          "op decode_step; S is the cached context; capacity the routed fraction (1: dense). modsim's rows: "
          "`modsim profile --backend cuda --preset decode` (forced count round(capacity·B) per routed layer; "
          "sync reads the count back, pad runs a padded block of ceil(pad_capacity·B) rows, graph is pad in one "
          "CUDA graph); PyTorch's: `profiler/peer/decode_torch.py` (the same forced count by top-k, exactly that "
          "many rows; graph = the whole step captured). Milliseconds.", ""]
    key = ["dtype", "d_model", "n_heads", "d_ff", "capacity"]
    for shape in sorted({tuple(r[k] for k in key) for r in rows}):
        sub = [r for r in rows if tuple(r[k] for k in key) == shape]
        cols = sorted({(int(r["batch"]), int(r["seq_len"])) for r in sub})
        impls = sorted(dict.fromkeys(r["impl"] for r in sub), key=lambda i: (i.startswith("modsim"), i))
        t = {(r["impl"], int(r["batch"]), int(r["seq_len"])): float(r["median_s"]) for r in sub}
        md.append("%s d=%s H=%s d_ff=%s capacity=%s" % shape)
        md.append("")
        md.append("| impl | " + " | ".join(f"B={b} S={c}" for b, c in cols) + " |")
        md.append("|---|" + "---|" * len(cols))
        for impl in impls:
            md.append(f"| {impl} | " + " | ".join("%.4f" % (t[(impl, b, c)] * 1e3) if (impl, b, c) in t else "–"
                                                   for b, c in cols) + " |")
        ratio = []
        for b, c in cols:
            peers = [(v, i) for (i, bb, cc), v in t.items() if (bb, cc) == (b, c) and i.startswith("torch-")]
            mine = t.get((f"modsim-cuda {routing}", b, c))
            ratio.append("%.2f (%s)" % (mine / min(peers)[0], min(peers)[1]) if mine and peers else "–")
        md.append(f"| modsim-cuda {routing} / fastest torch | " + " | ".join(ratio) + " |")
        md.append("")
    return md


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--modsim", help="modsim's peer-grid CSV (block rows)")
    p.add_argument("--torch", help="mod_block_torch.py's CSV")
    p.add_argument("--modsim-decode", help="modsim's decode CSV (decode_step rows)")
    p.add_argument("--torch-decode", help="decode_torch.py's CSV")
    p.add_argument("--decode-routing", default="graph", choices=["sync", "pad", "graph"],
                   help="the routing of the modsim-cuda decode_step rows in the CSV (the .md shows all)")
    p.add_argument("--out-dir", required=True)
    p.add_argument("--gpu", help="short GPU name for the file names (default: from the rows)")
    p.add_argument("--date", default=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"))
    p.add_argument("--attention", default="unfused", choices=["unfused", "fused"],
                   help="which of modsim's attention implementations its rows are taken from")
    p.add_argument("--train", action="store_true",
                   help="--modsim and --torch hold training steps (block_*_train rows, joined with recompute)")
    a = p.parse_args()
    if bool(a.modsim) != bool(a.torch) or bool(a.modsim_decode) != bool(a.torch_decode):
        print("peer_csv: give --modsim with --torch and --modsim-decode with --torch-decode", file=sys.stderr)
        return 2
    if not a.modsim and not a.modsim_decode:
        print("peer_csv: nothing to join (--modsim/--torch or --modsim-decode/--torch-decode)", file=sys.stderr)
        return 2
    for path in (a.modsim, a.torch, a.modsim_decode, a.torch_decode):
        if path and not os.path.exists(path):
            print(f"peer_csv: {path} does not exist (did its run fail?)", file=sys.stderr)
            return 1

    torch_rows, modsim_rows, decode_all = [], [], []
    columns = COLUMNS + (["recompute"] if a.train else [])
    block_ops = ("block_dense_train", "block_mod_train") if a.train else ("block_dense", "block_mod")
    if a.modsim:
        torch_rows = [r for r in read(a.torch) if r["op"] in block_ops]
        # modsim's training layer runs unfused attention whatever --attention says.
        modsim_rows = [r for r in read(a.modsim) if r["op"] in block_ops and r.get("timing", "isolated") == "isolated"
                       and (a.train or r.get("attention", "unfused") == a.attention)]
        if not torch_rows or not modsim_rows:
            print("peer_csv: no block rows to join (torch: %d, modsim: %d)" % (len(torch_rows), len(modsim_rows)),
                  file=sys.stderr)
            return 1
    torch_decode = []
    if a.modsim_decode:
        torch_decode = [r for r in read(a.torch_decode) if r["op"] == "decode_step"]
        dtypes = {r["dtype"] for r in torch_decode}
        decode_all = [r for r in read(a.modsim_decode) if r["op"] == "decode_step" and r["dtype"] in dtypes]
        if not torch_decode or not decode_all:
            print("peer_csv: no decode_step rows to join (torch: %d, modsim: %d)" % (len(torch_decode), len(decode_all)),
                  file=sys.stderr)
            return 1
    gpus = {r["device"] for r in torch_rows + torch_decode}
    if len(gpus) != 1:
        print(f"peer_csv: the PyTorch rows come from several GPUs: {sorted(gpus)}", file=sys.stderr)
        return 1
    gpu_name = gpus.pop()
    for r in modsim_rows + decode_all:
        if gpu_name not in r["device"]:
            print(f"peer_csv: modsim row on '{r['device']}', PyTorch on '{gpu_name}': not one GPU", file=sys.stderr)
            return 1
    slug = a.gpu or gpu_slug(gpu_name)

    out = []
    for r in modsim_rows:
        out.append(dict(impl="modsim-cuda", **{k: r[k] for k in columns[1:]}))
    for r in torch_rows:
        out.append({k: r[k] for k in columns})
    decode_out = [dict(impl="modsim-cuda", **{k: r[k] for k in COLUMNS[1:]}) for r in decode_all
                  if r.get("decode_routing", "sync") == a.decode_routing]
    decode_out += [{k: r[k] for k in COLUMNS} for r in torch_decode]
    decode_md = [dict(r, impl="modsim-cuda " + r.get("decode_routing", "sync")) for r in decode_all]
    decode_md += [dict(r) for r in torch_decode]
    for r in decode_md:
        r["capacity"] = capacity_text(r["capacity"])
    out += decode_out
    for r in out:
        r["capacity"] = capacity_text(r["capacity"])
        r["median_s"] = "%.9g" % float(r["median_s"])
    os.makedirs(a.out_dir, exist_ok=True)
    train = "train-" if a.train else ""
    csv_path = os.path.join(a.out_dir, f"peer-{train}{slug}-{a.date}.csv")
    lines = [",".join(columns)] + [",".join(str(r.get(k, "")) for k in columns) for r in out]
    write_atomically(csv_path, "\n".join(lines) + "\n")

    # The table: one column per (op, capacity[, recompute]) of the modsim rows, one line per impl.
    def col(r):
        c = "dense" if r["op"].startswith("block_dense") else "c=" + r["capacity"]
        return c + (" " + r["recompute"] if a.train else "")

    block_out = [r for r in out if r["op"] != "decode_step"]
    shapes = sorted({tuple(r[k] for k in SHAPE) for r in block_out})
    what = " and ".join(w for w, rows in (("MoD layer's training step" if a.train else "MoD block", block_out),
                                          ("decode step", decode_md)) if rows)
    md = [f"# modsim's CUDA {what} against PyTorch on one {gpu_name} ({a.date})", "",
          f"All rows from one run on one GPU: `{os.path.basename(csv_path)}` (milliseconds, median of each "
          "implementation's repeats)." + (f" modsim's attention: {'unfused (its training layer)' if a.train else a.attention}." if block_out else "") +
          " Ratio: modsim-cuda's time over the fastest PyTorch implementation's at the same point (below 1: modsim "
          "faster).", ""]
    for shape in shapes:
        rows = [r for r in block_out if tuple(r[k] for k in SHAPE) == shape]
        cols = []
        for r in sorted(rows, key=lambda r: (not r["op"].startswith("block_dense"), float(r["capacity"]),
                                             r.get("recompute", "none") != "none")):
            if col(r) not in cols:
                cols.append(col(r))
        impls = list(dict.fromkeys(r["impl"] for r in rows))
        t = {(r["impl"], col(r)): float(r["median_s"]) for r in rows}
        md.append("%s B=%s S=%s d=%s H=%s d_ff=%s" % shape)
        md.append("")
        md.append("| impl | " + " | ".join(cols) + " |")
        md.append("|---|" + "---|" * len(cols))
        for impl in impls:
            md.append(f"| {impl} | " + " | ".join("%.3f" % (t[(impl, c)] * 1e3) if (impl, c) in t else "–"
                                                   for c in cols) + " |")
        ratio = []
        for c in cols:
            peers = [(v, i) for (i, cc), v in t.items() if cc == c and i.startswith("torch-")]
            if ("modsim-cuda", c) in t and peers:
                best, who = min(peers)
                ratio.append("%.2f (%s)" % (t[("modsim-cuda", c)] / best, who))
            else:
                ratio.append("–")
        md.append("| modsim-cuda / fastest torch | " + " | ".join(ratio) + " |")
        md.append("")
    if decode_md:
        md += decode_table(decode_md, a.decode_routing)
    md_path = os.path.join(a.out_dir, f"{slug}{'-train' if a.train else ''}.md")
    write_atomically(md_path, "\n".join(md))
    print(csv_path)
    print(md_path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
