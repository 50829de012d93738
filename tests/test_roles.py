"""Rules keyed by op roles pick the same ops as the op-name rules they replace, on every built-in workload.

The name rules below are the ones ``precision``, ``gemm_rows`` and ``host`` applied before they read
``attrs["role"]`` (kept here, and only here, as the reference).
"""
from __future__ import annotations

import pytest

from ironlaw.core.errors import IronlawError
from ironlaw.models import gemm_rows, host, parallel, precision, workloads
from ironlaw.models.serving import step
from ironlaw.models.serving.features import speculative

OLD_LINEARS = ("attn_pre_proj", "attn_post_proj", "mlp_up_proj", "mlp_down_proj")
OLD_COLUMN_INPUT = ("attn_pre_proj", "mlp_up_proj")
OLD_AFTER_SYNC = ("experts", "ep", "shared_experts")
OLD_HEAD_OPS = ("lm_head", "final_norm")                          # serving.step
OLD_ROUTED_ROWS = ("moe_permute", "mlp_act", "moe_combine")
OLD_MOE_GLUE = ("moe_router", "moe_topk", "moe_combine")          # serving.features.speculative
OLD_OUTSIDE = ("embedding", "final_norm", "lm_head")


def _builtins() -> list[tuple[str, str]]:
    return [(c["name"], "train" if "train" in c["phases"] else c["phases"][0], c["family"] in ("llm", "encoder"))
            for c in workloads.catalog() if c["family"] != "spec"]


def _old_lowers(op, L) -> bool:
    return (op.name.split(".")[0] in OLD_LINEARS and op.kind == "matmul" and not op.name.endswith(".backward")
            and precision.in_layers(op, L))


def _old_after_sync(op) -> bool:
    return op.module in OLD_AFTER_SYNC and not op.name.startswith("moe_permute")


def _graphs(spec: str, phase: str, seq: bool = True):
    """The workload's graph, its FP8 and NVFP4 lowerings (training transformers), and those sharded over TP 2 with
    sequence parallelism and, for MoE, EP 2 (the collectives and the casts are there)."""
    g = workloads.resolve(workloads.Request(spec, phase=phase, batch=1, seq=128 if seq else None))
    out = [g]
    if phase == "train" and "hidden" in g.meta and "tokens" in g.meta:
        for dt in ("fp8", "fp4"):
            try:
                out.append(precision.lower(g, dt, False))
            except IronlawError:
                pass
        ep = 2 if g.meta.get("experts") else 1
        out += [parallel.tp_shard(x, 2, True, ep=ep) for x in list(out)]
    return out


@pytest.mark.parametrize("spec,phase,seq", _builtins())
def test_role_rules_pick_the_ops_the_name_rules_picked(spec, phase, seq):
    checked = 0
    for g in _graphs(spec, phase, seq):
        L = g.meta.get("layers")
        for op in g.ops:
            base, bwd = op.name.split(".")[0], op.name.endswith(".backward")
            assert precision.lowers(op, L) == _old_lowers(op, L), (g.name, op.name)
            if _old_lowers(op, L):
                for b in (False, True):
                    assert precision.LOWERED[op.attrs["role"]](b) == ((base in OLD_COLUMN_INPUT) == b), op.name
            is_linear = op.attrs.get("role", "") in gemm_rows.RING
            if op.kind == "matmul" and "weights" in op.bytes:
                assert is_linear == (base in OLD_LINEARS), (g.name, op.name)
                if is_linear:
                    assert gemm_rows.RING[op.attrs["role"]] == (base not in OLD_COLUMN_INPUT), op.name
            if not host.backward(op.name):
                assert host.after_sync(op) == _old_after_sync(op), (g.name, op.name)
            checked += 1
        assert host.moe_layers(g.ops) == next((op.count for op in g.ops if op.name == "moe_router"), 0.0)
    assert checked


def test_the_identity_covers_moe_casts_and_expert_collectives():
    """The reference graphs hold what the host and precision rules tell apart: expert GEMMs, the permute and the
    combine, the FP8 casts of expert linears, the expert all-to-alls."""
    gs = _graphs("qwen3-30b-a3b", "train")
    ops = [op for g in gs for op in g.ops]
    roles = {op.attrs.get("role") for op in ops}
    assert {"permute", "combine", "cast", "column", "row", "router"} <= roles
    assert any(op.kind == "collective" and op.module == "ep" for op in ops)
    assert any(host.after_sync(op) for op in ops) and not all(host.after_sync(op) for op in ops)
    assert any(precision.lowers(op, gs[0].meta["layers"]) for op in gs[0].ops)


def test_a_graph_without_linear_roles_is_not_lowered():
    """precision reads roles: the same training graph with its linears' roles taken away has nothing to lower."""
    from dataclasses import replace

    from ironlaw.core.graph import Graph
    g = workloads.resolve(workloads.Request("llama3-8b", phase="train", batch=1, seq=128))
    ops = [replace(op, attrs={k: v for k, v in op.attrs.items() if k != "role"}) for op in g.ops]
    bare = Graph(g.name, g.phase, g.dtype, ops, footprint=dict(g.footprint), meta=dict(g.meta))
    with pytest.raises(IronlawError, match="linears known"):
        precision.lower(bare, "fp8")
    assert precision.lower(g, "fp8").meta["precision"] == "fp8"


def _llms() -> list[str]:
    return [c["name"] for c in workloads.catalog() if c["family"] == "llm"]


@pytest.mark.parametrize("spec", _llms())
@pytest.mark.parametrize("phase", ["prefill", "decode"])
def test_serving_role_rules_pick_the_ops_the_name_rules_picked(spec, phase):
    """The serving step's head, its bf16 ops under ModelOpt and its routed rows; speculative decoding's MoE glue
    and the ops outside the layers; attention DP's expert exchanges around the experts' first and last GEMM."""
    g = workloads.resolve(workloads.Request(spec, phase=phase, batch=2, seq=128))
    for op in g.ops:
        role = op.attrs.get("role")
        assert step.is_head(op) == (op.name in OLD_HEAD_OPS), op.name
        assert (role in step.BF16_ROLES) == (op.name in ("lm_head", "embedding")), op.name
        assert (op.module == "experts" and role in step.ROUTED_ROLES) == \
            (op.module == "experts" and op.name in OLD_ROUTED_ROWS), op.name
        assert (role in speculative.MOE_GLUE) == (op.name in OLD_MOE_GLUE), op.name
        assert (role in speculative.OUTSIDE and not op.attrs.get("per_layer")) == (op.name in OLD_OUTSIDE), op.name
        assert (role == "router" and op.kind == "matmul") == (op.name == "moe_router"), op.name
        if op.module == "experts":
            assert (role == "column") == (op.name == "mlp_up_proj") and (role == "row") == (op.name == "mlp_down_proj")


def test_a_role_given_two_rules_in_one_registry_is_an_error():
    from ironlaw.core.registry import registrar
    from ironlaw.models import host, parallel, precision
    for register, table in ((parallel.sharding, parallel.SHARDING), (precision.lowered, precision.LOWERED),
                            (host.issued_after, host.AFTER_SYNC)):
        role = next(iter(table))
        with pytest.raises(RuntimeError, match=f"duplicate .* rule for role {role}"):
            register(role)(lambda *a: None)
    table = {}
    registrar(table, "demo")("x")(len)
    assert table == {"x": len}
