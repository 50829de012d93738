"""Measure the kernels and steps of a Llama-3.1-8B-shaped decoder on a CUDA GPU, for checking ironlaw's GPU law.

    python benchmarks/gpu_llm.py --out measured.json [--budget-s 180]

Writes one JSON file (schema ironlaw.gpu-measured/1) with, each timed with CUDA events (median of repeats
after warm-up, and the spread):
  gemm        bf16 and fp8 (e4m3, per-tensor scales, torch._scaled_mm) GEMMs at the projection shapes of the
              model (N, K of qkv, o, gate+up, down, lm_head) for M = 1 … 16384 tokens
  copy        device-to-device copy of 4 GiB (bytes read + written)
  attention   torch SDPA (flash) causal prefill and single-token decode over a KV cache, GQA 32/8 heads
  step        a whole decoder written plainly in torch (RMSNorm, fused QKV, RoPE, SDPA, fused gate+up, SiLU,
              down, LM head on the last token), bf16: decode steps at batch 1 … 256 over a 2048-token cache,
              eager and replayed as a CUDA graph, and prefill of one 2048/8192-token prompt
Random weights; nothing is downloaded. Sections past the time budget are skipped and say so. On a machine
without CUDA it runs a tiny dry run on the CPU (shapes ÷ 64) to check the script itself.
"""
from __future__ import annotations

import argparse
import json
import statistics
import time

HIDDEN, INTER, LAYERS, HEADS, KV_HEADS, HEAD_DIM, VOCAB = 4096, 14336, 32, 32, 8, 128, 128256


def timed(fn, device: str, repeats: int = 10, warmup: int = 3) -> dict:
    """Median and spread of ``fn``'s time in seconds (CUDA events on a GPU)."""
    import torch
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        if device == "cuda":
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            fn()
            b.record()
            b.synchronize()
            times.append(a.elapsed_time(b) / 1e3)
        else:
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
    med = statistics.median(times)
    return {"time_s": med, "min_s": min(times), "max_s": max(times), "repeats": repeats}


def gemm_rows(device: str, scale: int) -> list[dict]:
    import torch
    shapes = {"qkv": (HIDDEN + 2 * KV_HEADS * HEAD_DIM, HIDDEN), "o": (HIDDEN, HIDDEN),
              "gate_up": (2 * INTER, HIDDEN), "down": (HIDDEN, INTER), "lm_head": (VOCAB, HIDDEN)}
    rows = []
    for name, (n, k) in shapes.items():
        n, k = max(n // scale, 8), max(k // scale, 16)
        w = torch.randn(n, k, device=device, dtype=torch.bfloat16)
        w8 = w.to(torch.float8_e4m3fn) if device == "cuda" else None
        for m in (1, 16, 64, 256, 1024, 4096, 16384):
            m = max(m // scale, 1) if scale > 1 else m
            x = torch.randn(m, k, device=device, dtype=torch.bfloat16)
            r = timed(lambda: torch.nn.functional.linear(x, w), device)
            rows.append({"op": name, "dtype": "bf16", "m": m, "n": n, "k": k, "flops": 2.0 * m * n * k, **r})
            if w8 is not None:
                x8 = x.to(torch.float8_e4m3fn)
                one = torch.ones((), device=device, dtype=torch.float32)
                mp = max(16, (m + 15) // 16 * 16)          # _scaled_mm wants M a multiple of 16
                x8p = torch.zeros(mp, k, device=device, dtype=torch.float8_e4m3fn)
                x8p[:m] = x8
                fn = lambda: torch._scaled_mm(x8p, w8.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
                r = timed(fn, device)
                rows.append({"op": name, "dtype": "fp8", "m": m, "m_padded": mp, "n": n, "k": k,
                             "flops": 2.0 * m * n * k, **r})
        del w, w8
    return rows


def copy_row(device: str, scale: int) -> dict:
    import torch
    n = (4 << 30) // 4 // scale
    a = torch.empty(n, dtype=torch.float32, device=device)
    b = torch.empty_like(a)
    r = timed(lambda: b.copy_(a), device)
    return {"bytes_moved": 2.0 * 4 * n, **r}


def attention_rows(device: str, scale: int) -> list[dict]:
    import torch
    import torch.nn.functional as F
    dt = torch.bfloat16
    rows = []
    for s in (2048, 8192):
        s = max(s // scale, 16)
        q = torch.randn(1, HEADS, s, HEAD_DIM, device=device, dtype=dt)
        k = torch.randn(1, KV_HEADS, s, HEAD_DIM, device=device, dtype=dt)
        r = timed(lambda: F.scaled_dot_product_attention(q, k, k, is_causal=True, enable_gqa=True), device)
        rows.append({"phase": "prefill", "batch": 1, "seq": s, **r})
    for ctx in (2048, 8192):
        for b in (1, 16, 64, 256):
            c, bb = max(ctx // scale, 16), max(b // scale, 1)
            q = torch.randn(bb, HEADS, 1, HEAD_DIM, device=device, dtype=dt)
            k = torch.randn(bb, KV_HEADS, c, HEAD_DIM, device=device, dtype=dt)
            v = torch.randn_like(k)
            r = timed(lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=True), device)
            rows.append({"phase": "decode", "batch": bb, "context": c, "kv_bytes": 2.0 * k.numel() * 2, **r})
    return rows


class Decoder:
    """A Llama-3.1-8B-shaped decoder in plain torch with a preallocated KV cache (one tensor per layer)."""

    def __init__(self, device: str, scale: int, batch: int, cache: int):
        import torch
        self.torch, self.dev, dt = torch, device, torch.bfloat16
        self.h, self.i, self.hd = HIDDEN // scale, INTER // scale, HEAD_DIM if scale == 1 else 16
        self.nh, self.L, self.V = self.h // self.hd, LAYERS if scale == 1 else 4, VOCAB // scale
        self.nkv = self.nh * KV_HEADS // HEADS
        r = lambda *s: torch.randn(*s, device=device, dtype=dt) * 0.02
        self.wqkv = [r((self.nh + 2 * self.nkv) * self.hd, self.h) for _ in range(self.L)]
        self.wo = [r(self.h, self.nh * self.hd) for _ in range(self.L)]
        self.wgu = [r(2 * self.i, self.h) for _ in range(self.L)]
        self.wd = [r(self.h, self.i) for _ in range(self.L)]
        self.emb, self.head = r(self.V, self.h), r(self.V, self.h)
        self.kv = [torch.zeros(2, batch, self.nkv, cache, self.hd, device=device, dtype=dt) for _ in range(self.L)]

    def _norm(self, x):
        return x * self.torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-5).to(x.dtype)

    def _rope(self, x, pos):
        t = self.torch
        half = self.hd // 2
        freq = 1.0 / (500000.0 ** (t.arange(half, device=self.dev, dtype=t.float32) / half))
        ang = pos.float()[:, None] * freq[None, :]
        cos, sin = ang.cos().to(x.dtype)[:, None, :], ang.sin().to(x.dtype)[:, None, :]
        x1, x2 = x[..., :half], x[..., half:]
        return t.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)

    def forward(self, ids, start: int, length: int, causal: bool):
        """Tokens ``ids`` (batch, n) at positions start … start+n−1; attends to the first ``length`` cached."""
        t, F = self.torch, self.torch.nn.functional
        b, n = ids.shape
        x = F.embedding(ids, self.emb)
        pos = t.arange(start, start + n, device=self.dev)
        for l in range(self.L):
            qkv = F.linear(self._norm(x), self.wqkv[l]).view(b, n, self.nh + 2 * self.nkv, self.hd)
            q = self._rope(qkv[:, :, : self.nh], pos).transpose(1, 2)
            k = self._rope(qkv[:, :, self.nh: self.nh + self.nkv], pos).transpose(1, 2)
            v = qkv[:, :, self.nh + self.nkv:].transpose(1, 2)
            self.kv[l][0, :, :, start:start + n] = k
            self.kv[l][1, :, :, start:start + n] = v
            kk, vv = self.kv[l][0, :, :, :length], self.kv[l][1, :, :, :length]
            a = F.scaled_dot_product_attention(q, kk, vv, is_causal=causal, enable_gqa=True)
            x = x + F.linear(a.transpose(1, 2).reshape(b, n, -1), self.wo[l])
            gu = F.linear(self._norm(x), self.wgu[l])
            g, u = gu.chunk(2, dim=-1)
            x = x + F.linear(F.silu(g) * u, self.wd[l])
        return F.linear(self._norm(x[:, -1]), self.head)


def step_rows(device: str, scale: int, deadline: float) -> list[dict]:
    import torch
    rows = []
    ctx = max(2048 // scale, 16)
    for b in (1, 8, 32, 64, 128, 256):
        if time.time() > deadline:
            rows.append({"skipped": f"decode batch {b}: past the time budget"})
            break
        m = Decoder(device, scale, b, ctx + 1)
        ids = torch.zeros(b, 1, dtype=torch.long, device=device)
        eager = timed(lambda: m.forward(ids, ctx, ctx + 1, False), device, repeats=5, warmup=2)
        row = {"phase": "decode", "batch": b, "context": ctx, "eager": eager}
        if device == "cuda":
            try:
                s = torch.cuda.Stream()
                s.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(s):
                    for _ in range(2):
                        m.forward(ids, ctx, ctx + 1, False)
                torch.cuda.current_stream().wait_stream(s)
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g):
                    m.forward(ids, ctx, ctx + 1, False)
                row["graph"] = timed(g.replay, device, repeats=10, warmup=3)
            except Exception as e:                      # report, do not hide: the row says why
                row["graph_error"] = f"{type(e).__name__}: {e}"[:300]
        rows.append(row)
        del m
        if device == "cuda":
            torch.cuda.empty_cache()
    for s in (2048, 8192):
        s = max(s // scale, 16)
        m = Decoder(device, scale, 1, s)
        ids = torch.zeros(1, s, dtype=torch.long, device=device)
        rows.append({"phase": "prefill", "batch": 1, "seq": s,
                     "eager": timed(lambda: m.forward(ids, 0, s, True), device, repeats=5, warmup=2)})
        del m
    return rows


def main() -> None:
    import torch
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="gpu_measured.json")
    ap.add_argument("--budget-s", type=float, default=180.0)
    a = ap.parse_args()
    t0 = time.time()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    scale = 1 if device == "cuda" else 64
    doc = {"schema": "ironlaw.gpu-measured/1", "date": time.strftime("%Y-%m-%d"), "torch": torch.__version__,
           "device": torch.cuda.get_device_name(0) if device == "cuda" else "cpu (dry run, shapes / 64)",
           "model": "Llama-3.1-8B shapes (hidden 4096, 32 layers, 32/8 heads, MLP 14336, vocab 128256), bf16"}
    for name, fn in (("copy", lambda: copy_row(device, scale)), ("gemm", lambda: gemm_rows(device, scale)),
                     ("attention", lambda: attention_rows(device, scale)),
                     ("step", lambda: step_rows(device, scale, t0 + a.budget_s))):
        if time.time() - t0 > a.budget_s:
            doc[name] = {"skipped": "past the time budget"}
            continue
        try:
            doc[name] = fn()
        except Exception as e:
            doc[name] = {"error": f"{type(e).__name__}: {e}"[:500]}
        print(f"{name}: done at {time.time() - t0:.0f} s", flush=True)
        with open(a.out, "w") as f:
            json.dump(doc, f, indent=1)


if __name__ == "__main__":
    main()
