"""PCIe cards joined by an NVLink bridge: two levels inside a node (machine/network/topology.py). A group inside one
bridge runs over NVLink; one past it over PCIe, however many of its ranks share a bridge."""
import pytest

from ironlaw.core.errors import IronlawError
from ironlaw.machine import hardware
from ironlaw.machine.network.calibration import DEFAULT
from ironlaw.machine.network.collectives import collective_time
from ironlaw.machine.network.topology import build, node_size, nodes_for
from ironlaw.models import parallel

GIB = 2 ** 30


def _allreduce_s(hw, p: int) -> float:
    a, b = collective_time("allreduce", GIB, build(hw, p, 1))
    return float(a + b)


def _ring_s(p: int, link) -> float:
    """β of a ring all-reduce of 1 GiB over ``p`` ranks on ``link`` at the default η."""
    return 2 * (p - 1) / p * GIB / (DEFAULT.efficiency("collective", link.kind) * link.bw_Bps)


def _flat(tmp_path, name: str = "h100-nvl", bridge: int | None = None):
    """The catalog file of ``name`` with its links' ``max_devices`` removed (one NVLink domain over any number of
    cards), or with the NVLink bridge joining ``bridge`` cards."""
    text = (hardware.CATALOG_DIR / f"{name}.toml").read_text()
    lines = text.splitlines()
    if bridge is None:
        lines = [ln for ln in lines if not ln.startswith("max_devices")]
    else:
        i = next(i for i, ln in enumerate(lines) if ln == 'kind = "nvlink"')
        j = next(j for j in range(i, len(lines)) if lines[j].startswith("max_devices"))
        lines[j] = f"max_devices = {bridge}"
    out = tmp_path / f"{name}-{bridge or 'flat'}.toml"
    out.write_text("\n".join(ln.replace(f'name = "{name}"', f'name = "{name}-x"') for ln in lines) + "\n")
    return out


def test_eight_card_allreduce_on_h100_nvl_runs_at_the_pcie_rate():
    """1 GiB over 8 H100 NVL: their NVLink bridges join pairs, so the ring crosses PCIe Gen5 (64 GB/s) between
    pairs and runs at its rate, ~4.4× the time of one NVLink domain; over one pair it runs on the bridge."""
    hw = hardware.get("h100-nvl")
    pcie, nvl = hw.link("pcie"), hw.link("nvlink")
    assert _allreduce_s(hw, 8) == pytest.approx(_ring_s(8, pcie), rel=0.01)
    assert _allreduce_s(hw, 4) == pytest.approx(_ring_s(4, pcie), rel=0.01)
    assert _allreduce_s(hw, 2) == pytest.approx(_ring_s(2, nvl), rel=0.01)
    assert _allreduce_s(hw, 8) > 4 * _ring_s(8, nvl)


def test_h200_nvl_four_way_bridge_and_a_two_way_file(tmp_path):
    """H200 NVL's catalog bridge joins 4 (the MGX reference servers'); a file saying 2 puts 4 cards on PCIe."""
    hw = hardware.get("h200-nvl")
    assert [build(hw, p, 1).intra.kind for p in (2, 4, 8)] == ["nvlink", "nvlink", "pcie"]
    two = hardware.get(str(_flat(tmp_path, "h200-nvl", bridge=2)))
    assert [build(two, p, 1).intra.kind for p in (2, 4, 8)] == ["nvlink", "pcie", "pcie"]


def test_which_ranks_share_a_bridge():
    """Megatron's layout puts TP ranks next to each other: TP 2 shares an H100 NVL pair, the DP group under it
    (stride 2) spans two pairs and runs over PCIe; on H200 NVL's 4-way bridge DP 2 under TP 2 stays inside, under
    TP 4 it does not. An NVSwitch node is one level whatever the stride."""
    def link(name, stride, size):
        return parallel.group_topology(hardware.get(name), parallel.group(stride, size, 8)).intra.kind
    assert [link("h100-nvl", s, n) for s, n in ((1, 2), (2, 2), (2, 4), (1, 8))] == ["nvlink", "pcie", "pcie", "pcie"]
    assert [link("h200-nvl", s, n) for s, n in ((1, 4), (2, 2), (4, 2))] == ["nvlink", "nvlink", "pcie"]
    assert link("h100", 4, 2) == "nvlink" and link("h100", 3, 2) == "nvlink"


def test_a_pipeline_over_several_bridges_sends_over_pcie():
    """PP 2 on one H100 NVL pair sends on the bridge; PP 4 (TP 1) spans two pairs, and its slowest boundary, between
    them, crosses PCIe; PP 2 under TP 2 too. On an NVSwitch board every boundary is NVLink."""
    def link(name, stage, pp):
        return parallel.group_topology(hardware.get(name), parallel.pp_group(stage, pp, 8, 1)).intra.kind
    assert [link("h100-nvl", s, p) for s, p in ((1, 2), (1, 4), (2, 2))] == ["nvlink", "pcie", "pcie"]
    assert link("h100", 1, 8) == "nvlink"


def test_a_server_of_bridged_cards():
    """The node is the server (8 cards), not the bridge: 8 fit on one node, 16 are refused naming the PCIe link."""
    hw = hardware.get("h100-nvl")
    assert node_size(hw) == 8 and nodes_for(hw, 8) == 1
    assert "pcie5 inside a node (past the 2-device nvlink4-bridge)" in build(hw, 8, 1).describe()
    with pytest.raises(IronlawError, match="its pcie5 joins at most 8 devices"):
        build(hw, 16, 1)


@pytest.mark.parametrize("name", ["l40s", "l4", "rtx-pro-6000", "rtx-4090", "t4"])
def test_cards_without_nvlink_run_on_pcie(name):
    assert build(hardware.get(name), 4, 1).intra.kind == "pcie"


def _network_s(cli, on, *args) -> float:
    r = cli("analyze", "llama3-8b", "--on", str(on), *args, "--format", "json")
    assert r.rc == 0, r.err
    return sum(o["network_s"] for o in r.json()["ops"])


def test_analyze_prices_tp_past_the_bridge_on_pcie(cli, tmp_path):
    """TP 8 on H100 NVL: its all-reduces cross PCIe (> 4× one NVLink domain's); TP 2 stays on the bridge. Training
    with TP 2 × DP 2: the gradient all-reduce spans two pairs, so it is slower than on one NVLink domain."""
    flat = _flat(tmp_path)
    prefill = ("--phase", "prefill", "--seq", "4096")
    assert _network_s(cli, "h100-nvl", *prefill, "--gpus", "2", "--tp", "2") == \
        pytest.approx(_network_s(cli, flat, *prefill, "--gpus", "2", "--tp", "2"))
    assert _network_s(cli, "h100-nvl", *prefill, "--gpus", "8", "--tp", "8") > \
        4 * _network_s(cli, flat, *prefill, "--gpus", "8", "--tp", "8")

    def train(on):
        r = cli("analyze", "llama3-8b", "--on", str(on), "--phase", "train", "--gpus", "4", "--tp", "2",
                "--global-batch", "8", "--format", "json")
        assert r.rc == 0, r.err
        return r.json()["breakdown"]
    nvl, one = train("h100-nvl"), train(flat)
    assert nvl["tp_ep_network_s"] == pytest.approx(one["tp_ep_network_s"])
    assert nvl["dp_grad_comm_s"] > 4 * one["dp_grad_comm_s"]


def test_search_prices_tp_past_the_bridge_on_pcie(cli, tmp_path):
    """The serving search's TP 8 layout on H100 NVL pays PCIe all-reduces: well under the tokens/s of one NVLink
    domain, the network binding."""
    def best(on, tp):
        r = cli("search", "llama3-8b", "--phase", "serve", "--on", str(on), "--gpus", "8", "--tp", str(tp),
                "--format", "json")
        assert r.rc == 0, r.err
        return r.json()["top"][0]
    flat = _flat(tmp_path)
    nvl8, one8 = best("h100-nvl", 8), best(flat, 8)
    assert nvl8["tokens_per_s_per_gpu"] < 0.7 * one8["tokens_per_s_per_gpu"]
    assert nvl8["bottleneck"]["resource"] == "network"


def test_gh200_is_an_nvl2_node():
    """A GH200's NVLink reaches one other superchip in NVIDIA's GH200 NVL2 node; past it a group crosses nodes,
    and the catalog entry names no network link: one line, never a 450 GB/s NVLink domain over 8."""
    for name in ("gh200-96gb", "gh200-144gb"):
        hw = hardware.get(name)
        assert node_size(hw) == 2 and build(hw, 2, 1).intra.kind == "nvlink"
        with pytest.raises(IronlawError, match="joins at most 2 devices"):
            build(hw, 8, 1)
        with pytest.raises(IronlawError, match=r"no network link.*at most 2 devices \(one node\)"):
            build(hw, 8, 4)


def test_disaggregated_pools_past_the_bridge_move_the_cache_over_pcie(cli):
    """Prefill 2 + decode 2 on H100 NVL: two pairs of one server, the KV cache crosses PCIe (it was refused)."""
    r = cli("serve", "llama3-8b", "--on", "h100-nvl", "--disaggregate", "prefill=2,decode=2", "--concurrency", "8",
            "--format", "json")
    assert r.rc == 0, r.err
    given = r.json()["disaggregate"]["given"]
    assert given["link"] == "pcie5" and given["link_bw_Bps"] == hardware.get("h100-nvl").link("pcie").bw_Bps


def test_hardware_show_names_the_bridge(cli):
    r = cli("hardware", "show", "h100-nvl", "--format", "text")
    assert r.rc == 0, r.err
    flat = " ".join(r.out.split())
    assert "≤ 2 devices per bridge" in flat and "≤ 8 devices per node" in flat
