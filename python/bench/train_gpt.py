"""A GPT-style decoder trained end to end through torch's operations or dnngraph.torch's, on
synthetic tokens made here (no download), with the same initial weights and data for both.

The model: token embedding; per layer a pre-norm block of rms_norm, a fused QKV projection,
rotary embeddings (computed in torch for both), causal attention with grouped-query heads, an
output projection, rms_norm and an MLP of linear + activation (fused by dnngraph) and linear;
a final rms_norm and an untied LM head. The operations that differ between the implementations
are rms_norm, linear (+ activation) and attention (dense, or packed sequences with --varlen);
everything else is the same torch code.

Data: a Markov chain over the vocabulary in which each token has four equally likely successors
(fixed by the seed), so the loss falls from ln(vocab) towards ln(4) = 1.386 as the model learns
it. Each step's batch is drawn from a generator seeded by the step, so every run sees the same
tokens. --varlen packs documents of random lengths (64 to the sequence length) into each row,
with rotary positions restarting per document and attention confined to each document
(cu_seqlens), so the shapes the attention sees change every step.

Training: AdamW (betas 0.9, 0.95, weight decay 0.1), bf16 autocast, linear warm-up, gradient
clipping at 1.0. For each implementation asked (--impl) and compile mode (--compile), a fresh
model from the seed trains --steps steps; printed per run: tokens/s and step time (after
--warmup steps), peak GPU memory, the time dnngraph spent building plans (total, per step after
the warm-up), the kernel caches' entries and revisions; then the loss agreement of the runs
(mean over the last 50 steps) and, with --out, every step's loss as JSON and an SVG chart of the
curves. Under --compile-mode reduce-overhead (CUDA graphs) dnngraph builds static plans at a
shape's first run (dnngraph.torch.set_static_after(0)): a replay runs what was captured.

Usage:
    python3 python/bench/train_gpt.py --config small --steps 300
    python3 python/bench/train_gpt.py --config large --steps 40 --impl torch,dnngraph
    python3 python/bench/train_gpt.py --config small --varlen --steps 300
    python3 python/bench/train_gpt.py --config small --compile on --compile-mode reduce-overhead
    python3 python/bench/train_gpt.py --config tiny --device cpu --impl torch   (program check)
"""

import argparse
import json
import math
import os
import sys
import time

import torch
import torch.nn.functional as F

CONFIGS = {
    # GPT-2 small's shape (vocabulary 32768: the LM head stays a realistic share of the work).
    "small": dict(layers=12, d_model=768, heads=12, kv_heads=12, seq=1024, batch=8,
                  vocab=32768, mlp=3072, activation="gelu_tanh", lr=6e-4),
    # A larger GQA model that fills the H200 far more (about 1.2 B parameters).
    "large": dict(layers=24, d_model=2048, heads=16, kv_heads=4, seq=4096, batch=4,
                  vocab=32768, mlp=5632, activation="silu", lr=3e-4),
    # For checking the program on a CPU.
    "tiny": dict(layers=2, d_model=128, heads=4, kv_heads=2, seq=64, batch=2, vocab=512,
                 mlp=256, activation="gelu_tanh", lr=1e-3),
}

ACTIVATIONS = {None: lambda t: t, "relu": F.relu, "gelu": F.gelu, "silu": F.silu,
               "gelu_tanh": lambda t: F.gelu(t, approximate="tanh")}


class TorchOps:
    name = "torch"

    @staticmethod
    def rms_norm(x, w):
        return F.rms_norm(x, (x.shape[-1],), w)

    @staticmethod
    def linear(x, w, b=None, activation=None):
        return ACTIVATIONS[activation](F.linear(x, w, b))

    @staticmethod
    def attention(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                              enable_gqa=q.shape[1] != k.shape[1])

    @staticmethod
    def varlen(q, k, v, cu, max_len):
        from torch.nn.attention.varlen import varlen_attn
        if q.shape[1] != k.shape[1]:  # torch's varlen_attn: the same head count for all three
            k = k.repeat_interleave(q.shape[1] // k.shape[1], dim=1)
            v = v.repeat_interleave(q.shape[1] // v.shape[1], dim=1)
        return varlen_attn(q, k, v, cu, cu, max_len, max_len, window_size=(-1, 0))


class DnngraphOps:
    name = "dnngraph"

    def __init__(self):
        import dnngraph.torch as dt
        self.dt = dt

    def rms_norm(self, x, w):
        return self.dt.rms_norm(x, (x.shape[-1],), w)

    def linear(self, x, w, b=None, activation=None):
        return self.dt.linear(x, w, b, activation=activation)

    def attention(self, q, k, v):
        return self.dt.scaled_dot_product_attention(q, k, v, is_causal=True,
                                                    enable_gqa=q.shape[1] != k.shape[1])

    def varlen(self, q, k, v, cu, max_len):
        return self.dt.varlen_attn(q, k, v, cu, cu, max_len, max_len, window_size=(-1, 0))


def rotary(x, cos, sin):
    """x [..., s, h, d] rotated by position (cos, sin [s, 1, d / 2], x's dtype): the pairs
    (x[2i], x[2i+1]) of each head, as GPT-NeoX and Llama do with halves."""
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


def rotary_tables(positions, head_dim, dtype):
    inverse = 1.0 / (10000 ** (torch.arange(0, head_dim, 2, device=positions.device,
                                            dtype=torch.float32) / head_dim))
    angles = positions.float()[:, None] * inverse[None, :]
    return angles.cos().to(dtype)[:, None, :], angles.sin().to(dtype)[:, None, :]


class GPT(torch.nn.Module):
    def __init__(self, cfg, seed, device):
        super().__init__()
        self.cfg = cfg
        gen = torch.Generator().manual_seed(seed)
        d, layers = cfg["d_model"], cfg["layers"]
        head_dim = d // cfg["heads"]
        qkv_out = (cfg["heads"] + 2 * cfg["kv_heads"]) * head_dim

        def normal(*shape, std):
            return torch.nn.Parameter((torch.randn(*shape, generator=gen) * std).to(device))

        def const(*shape, value):
            return torch.nn.Parameter(torch.full(shape, value, device=device))

        self.embed = normal(cfg["vocab"], d, std=0.02)
        out_std = 0.02 / math.sqrt(2 * layers)
        self.blocks = torch.nn.ModuleList()
        for _ in range(layers):
            block = torch.nn.Module()
            block.norm1 = const(d, value=1.0)
            block.qkv = normal(qkv_out, d, std=0.02)
            block.proj = normal(d, d, std=out_std)
            block.norm2 = const(d, value=1.0)
            block.up = normal(cfg["mlp"], d, std=0.02)
            block.up_bias = const(cfg["mlp"], value=0.0)
            block.down = normal(d, cfg["mlp"], std=out_std)
            block.down_bias = const(d, value=0.0)
            self.blocks.append(block)
        self.norm = const(d, value=1.0)
        self.head = normal(cfg["vocab"], d, std=0.02)

    def forward(self, ops, tokens, targets, positions, cu=None, max_len=None):
        """tokens, targets [b, s]; positions [s] (dense) or [b * s] (packed, per document);
        cu, max_len: the packed documents' offsets (int32 [docs + 1]) and longest length."""
        cfg = self.cfg
        b, s = tokens.shape
        h, kv, d = cfg["heads"], cfg["kv_heads"], cfg["d_model"]
        head_dim = d // h
        x = F.embedding(tokens, self.embed)
        cos, sin = rotary_tables(positions, head_dim, torch.bfloat16
                                 if torch.is_autocast_enabled(tokens.device.type)
                                 else x.dtype)
        for block in self.blocks:
            qkv = ops.linear(ops.rms_norm(x, block.norm1), block.qkv)
            q, k, v = qkv.split([h * head_dim, kv * head_dim, kv * head_dim], dim=-1)
            if cu is None:
                q = rotary(q.view(b, s, h, head_dim), cos, sin).transpose(1, 2)
                k = rotary(k.view(b, s, kv, head_dim), cos, sin).transpose(1, 2)
                v = v.view(b, s, kv, head_dim).transpose(1, 2)
                o = ops.attention(q, k, v).transpose(1, 2).reshape(b, s, d)
            else:  # one row of packed documents per batch entry, flattened
                q = rotary(q.reshape(b * s, h, head_dim), cos, sin)
                k = rotary(k.reshape(b * s, kv, head_dim), cos, sin)
                v = v.reshape(b * s, kv, head_dim).contiguous()
                o = ops.varlen(q, k, v, cu, max_len).reshape(b, s, d)
            x = x + ops.linear(o, block.proj)
            up = ops.linear(ops.rms_norm(x, block.norm2), block.up, block.up_bias,
                            cfg["activation"])
            x = x + ops.linear(up, block.down, block.down_bias)
        logits = ops.linear(ops.rms_norm(x, self.norm), self.head)
        return F.cross_entropy(logits.float().view(-1, cfg["vocab"]), targets.reshape(-1))


def markov_table(cfg, seed):
    gen = torch.Generator().manual_seed(seed + 1)
    return torch.randint(0, cfg["vocab"], (cfg["vocab"], 4), generator=gen)


def batch(cfg, table, step, seed, device, varlen):
    """(tokens, targets, positions, cu, max_len) of one step, the same for every run."""
    gen = torch.Generator().manual_seed(seed * 1_000_003 + step)
    b, s = cfg["batch"], cfg["seq"]
    choices = torch.randint(0, 4, (b, s + 1), generator=gen)
    rows = torch.empty(b, s + 1, dtype=torch.int64)
    rows[:, 0] = torch.randint(0, cfg["vocab"], (b,), generator=gen)
    for t in range(s):  # the chain, on the CPU: one gather per position
        rows[:, t + 1] = table[rows[:, t], choices[:, t]]
    rows = rows.to(device)
    tokens, targets = rows[:, :-1].contiguous(), rows[:, 1:].contiguous()
    if not varlen:
        return tokens, targets, torch.arange(s, device=device), None, None
    lengths = []
    for _ in range(b):  # documents of 64..s tokens filling each row exactly
        row = []
        while sum(row) < s:
            row.append(int(torch.randint(64, s + 1, (1,), generator=gen)))
        row[-1] -= sum(row) - s
        if row[-1] == 0:
            row.pop()
        lengths += row
    cu = torch.tensor([0] + lengths).cumsum(0)
    positions = torch.arange(b * s) - torch.repeat_interleave(cu[:-1], torch.tensor(lengths))
    return (tokens, targets, positions.to(device), cu.to(torch.int32).to(device),
            max(lengths))


def peak_gib(device):
    return torch.cuda.max_memory_allocated() / 2**30 if device.type == "cuda" else 0.0


def run(cfg, args, ops, compiled, device):
    torch.manual_seed(args.seed)
    model = GPT(cfg, args.seed, device)
    table = markov_table(cfg, args.seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg["lr"], betas=(0.9, 0.95),
                                  weight_decay=0.1, fused=device.type == "cuda")
    forward = model.forward
    if compiled:
        forward = torch.compile(model.forward, dynamic=args.varlen, mode=args.compile_mode)
    dt = getattr(ops, "dt", None)
    if dt is not None:  # CUDA graphs replay what they captured: static plans from the first run
        if compiled and args.compile_mode == "reduce-overhead":
            dt.set_static_after(0)
        else:  # a hot shape's static plan builds beside the steps (--static-plans)
            dt.set_static_after(dt._runtime.STATIC_AFTER,
                                background=args.static_plans == "background")
    dnngraph_info = getattr(dt, "cache_info", lambda: None)
    if device.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    losses, step_ms, build_s, background_s = [], [], [], []
    # Which ops built after the warm-up, and for how long: where a late build share comes from
    # (builds in the step; static plans built beside the steps are listed apart).
    per_op = getattr(getattr(dt, "_runtime", None), "_build_seconds", None)
    per_op_background = getattr(getattr(dt, "_runtime", None), "_background_seconds", None)
    late_builds, background_builds = [], []
    for step in range(args.steps):
        tokens, targets, positions, cu, max_len = batch(cfg, table, step, args.seed, device,
                                                        args.varlen)
        for group in optimizer.param_groups:
            group["lr"] = cfg["lr"] * min(1.0, (step + 1) / args.warmup_lr)
        before = dnngraph_info()
        before_ops = dict(per_op) if per_op is not None else {}
        before_background = dict(per_op_background) if per_op_background is not None else {}
        if device.type == "cuda":
            torch.cuda.synchronize()
        started = time.perf_counter()
        with torch.autocast(device.type, dtype=torch.bfloat16):
            loss = forward(ops, tokens, targets, positions, cu, max_len)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if device.type == "cuda":
            torch.cuda.synchronize()
        step_ms.append((time.perf_counter() - started) * 1e3)
        losses.append(loss.item())
        after = dnngraph_info()
        build_s.append(after["build_seconds"] - before["build_seconds"] if after else 0.0)
        background_s.append(after["background_build_seconds"]
                            - before["background_build_seconds"] if after else 0.0)
        if step >= args.warmup and build_s[-1] > 0 and per_op is not None:
            late_builds.append({"step": step, "max_len": max_len, "ms": {
                op: round((seconds - before_ops.get(op, 0.0)) * 1e3, 1)
                for op, seconds in per_op.items() if seconds != before_ops.get(op, 0.0)}})
        if background_s[-1] > 0 and per_op_background is not None:
            background_builds.append({"step": step, "ms": {
                op: round((seconds - before_background.get(op, 0.0)) * 1e3, 1)
                for op, seconds in per_op_background.items()
                if seconds != before_background.get(op, 0.0)}})
        if args.verbose and (step % 10 == 0 or step == args.steps - 1):
            print(f"  step {step:4d} loss {losses[-1]:.4f} {step_ms[-1]:8.1f} ms "
                  f"build {build_s[-1] * 1e3:7.1f} ms", flush=True)
    if args.profile:
        profile_step(args, cfg, model, optimizer, forward, ops, table, device, compiled)
    timed = step_ms[args.warmup:]
    tokens_per_step = cfg["batch"] * cfg["seq"]
    step_time = sum(timed) / len(timed) if timed else float("nan")
    info = dnngraph_info() or {}
    result = {
        "impl": ops.name, "compile": compiled,
        "compile_mode": args.compile_mode if compiled else None,
        "config": args.config, "varlen": args.varlen,
        "steps": args.steps, "step_ms": step_time, "tokens_per_s": tokens_per_step / step_time
        * 1e3, "peak_gib": peak_gib(device), "final_loss": losses[-1],
        "mean_loss_last_50": sum(losses[-50:]) / len(losses[-50:]),
        "build_s_total": sum(build_s),  # in the steps: what the steps waited for
        "background_build_s_total": sum(background_s),  # beside the steps (--static-plans)
        "build_share_after_warmup": (sum(build_s[args.warmup:]) * 1e3 / sum(timed)
                                     if timed else None),
        "kernel_cache_entries": info.get("kernel_cache_entries"),
        "kernel_cache_revisions": info.get("kernel_cache_revisions"),
        "graphs_built": sum(info.get("builds", {}).values()) if info else None,
        "static_plans": sum(info.get("static_plans", {}).values()) if info else None,
        "late_builds": late_builds,
        "background_builds": background_builds,  # finished during the step named
        "static_plans_mode": args.static_plans,
    }
    return result, losses


def profile_step(args, cfg, model, optimizer, forward, ops, table, device, compiled):
    """One more step under torch.profiler: the operators by their total GPU (or CPU) time,
    printed, and a Chrome trace in --out: where a step's time goes."""
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda"
                                           else [])
    tokens, targets, positions, cu, max_len = batch(cfg, table, args.steps, args.seed, device,
                                                    args.varlen)
    with profile(activities=activities) as prof:
        with torch.autocast(device.type, dtype=torch.bfloat16):
            loss = forward(ops, tokens, targets, positions, cu, max_len)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if device.type == "cuda":
            torch.cuda.synchronize()
    key = "cuda_time_total" if device.type == "cuda" else "cpu_time_total"
    name = f"{ops.name}{'-compiled' if compiled else ''}"
    print(f"# profile of one step, {name}, by {key}:")
    print(prof.key_averages().table(sort_by=key, row_limit=25))
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        prof.export_chrome_trace(os.path.join(args.out, f"trace-{args.config}-{name}.json"))


def svg_chart(curves, path, title):
    """Loss curves (name -> losses) as a small SVG line chart."""
    width, height, pad = 720, 420, 50
    top = max(max(c) for c in curves.values())
    bottom = min(min(c) for c in curves.values())
    steps = max(len(c) for c in curves.values())
    colors = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd"]

    def xy(i, value):
        x = pad + (width - 2 * pad) * i / max(1, steps - 1)
        y = height - pad - (height - 2 * pad) * (value - bottom) / max(1e-9, top - bottom)
        return f"{x:.1f},{y:.1f}"

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'font-family="sans-serif" font-size="12">',
             f'<rect width="{width}" height="{height}" fill="white"/>',
             f'<text x="{pad}" y="20">{title}</text>',
             f'<line x1="{pad}" y1="{height - pad}" x2="{width - pad}" y2="{height - pad}" '
             'stroke="black"/>',
             f'<line x1="{pad}" y1="{pad}" x2="{pad}" y2="{height - pad}" stroke="black"/>',
             f'<text x="{pad}" y="{height - pad + 18}">0</text>',
             f'<text x="{width - pad - 20}" y="{height - pad + 18}">{steps - 1}</text>',
             f'<text x="{width // 2 - 20}" y="{height - 10}">step</text>',
             f'<text x="5" y="{pad + 4}">{top:.2f}</text>',
             f'<text x="5" y="{height - pad}">{bottom:.2f}</text>']
    for n, (name, losses) in enumerate(curves.items()):
        points = " ".join(xy(i, v) for i, v in enumerate(losses))
        color = colors[n % len(colors)]
        parts.append(f'<polyline fill="none" stroke="{color}" stroke-width="1.2" '
                     f'points="{points}"/>')
        parts.append(f'<text x="{width - pad - 190}" y="{pad + 16 * n}" fill="{color}">'
                     f'{name}</text>')
    parts.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(parts))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", choices=sorted(CONFIGS), default="small")
    parser.add_argument("--impl", default="torch,dnngraph")
    parser.add_argument("--compile", default="off", help="off, on, or off,on")
    parser.add_argument("--compile-mode", default=None,
                        help="torch.compile's mode for the compiled runs of both implementations, "
                             "e.g. reduce-overhead (CUDA graphs: no host time per operator)")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=10, help="steps left out of the timing")
    parser.add_argument("--warmup-lr", type=int, default=20)
    parser.add_argument("--varlen", action="store_true")
    parser.add_argument("--batch", type=int, help="override the configuration's batch")
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--static-plans", choices=("background", "inline"), default="background",
                        help="dnngraph eager: build a hot shape's static plan on a thread of its "
                        "own while the steps run the dynamic plan (background), or in the call "
                        "that reaches its 16th run (inline)")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--out", help="folder for losses-*.json and the SVG chart")
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument("--profile", action="store_true",
                        help="after the run, one step under torch.profiler (top operators)")
    args = parser.parse_args()
    cfg = dict(CONFIGS[args.config])
    if args.batch:
        cfg["batch"] = args.batch
    device = torch.device(args.device)
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
    makers = {"torch": TorchOps, "dnngraph": DnngraphOps}
    runs = [(impl, mode == "on") for impl in args.impl.split(",")
            for mode in args.compile.split(",")]
    print(f"# {args.config} {cfg}, varlen {args.varlen}, {args.steps} steps, device "
          f"{torch.cuda.get_device_name() if device.type == 'cuda' else device}, torch "
          f"{torch.__version__}", flush=True)
    results, curves = [], {}
    for impl, compiled in runs:
        ops = makers[impl]()
        name = f"{impl}{' compiled' if compiled else ''}"
        if name in curves:  # an implementation run again (--impl torch,torch,...): its own name
            name += f" #{sum(n.split(' #')[0] == name for n in curves) + 1}"
        print(f"# run: {name}", flush=True)
        result, losses = run(cfg, args, ops, compiled, device)
        result["run"] = name
        print(json.dumps(result), flush=True)
        results.append(result)
        curves[name] = losses
        torch._dynamo.reset()
    print("#\n# run                 | tokens/s   | step ms | peak GiB | build s | build share "
          "| beside s | loss (last 50)")
    for r in results:
        share = r["build_share_after_warmup"]
        print(f"# {r['run']:17s} | "
              f"{r['tokens_per_s']:10.0f} | {r['step_ms']:7.1f} | {r['peak_gib']:8.2f} | "
              f"{r['build_s_total']:7.2f} | {share * 100 if share is not None else 0:10.3f}% | "
              f"{r['background_build_s_total']:8.2f} | {r['mean_loss_last_50']:.4f}")
    base: "dict[bool, dict]" = {}
    for r in results:  # the first torch run of each mode is the reference
        if r["impl"] == "torch":
            base.setdefault(r["compile"], r)
    for r in results:
        if r["impl"] == "torch" and base.get(r["compile"]) is not r:
            ref = base[r["compile"]]
            difference = abs(r["mean_loss_last_50"] - ref["mean_loss_last_50"])
            print(f"# {r['run']} against {ref['run']}: mean loss of the last 50 steps differs by "
                  f"{difference / ref['mean_loss_last_50'] * 100:.3f}% (one implementation run "
                  "twice: the spread a comparison of two has to be read against)")
        if r["impl"] != "torch":
            ref = base.get(False) or next(iter(base.values()), None)
            if ref is None:
                continue
            difference = abs(r["mean_loss_last_50"] - ref["mean_loss_last_50"])
            print(f"# {r['impl']}{' compiled' if r['compile'] else ''} against torch eager: "
                  f"tokens/s {r['tokens_per_s'] / ref['tokens_per_s']:.3f}x, mean loss of the "
                  f"last 50 steps differs by {difference / ref['mean_loss_last_50'] * 100:.3f}%")
            if base.get(True):
                print(f"#   against torch.compile: tokens/s "
                      f"{r['tokens_per_s'] / base[True]['tokens_per_s']:.3f}x")
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        tag = f"{args.config}{'-varlen' if args.varlen else ''}"
        with open(os.path.join(args.out, f"losses-{tag}.json"), "w") as f:
            json.dump({"results": results, "losses": curves}, f)
        svg_chart(curves, os.path.join(args.out, f"losses-{tag}.svg"),
                  f"GPT {tag}: training loss, torch and dnngraph, seed {args.seed}")


if __name__ == "__main__":
    sys.exit(main())
