"""The host's side of a served step: the kernels it launches (``launches``, ``host_launches``, ``piecewise``,
``host_floor_s``), its work beside the device's under the overlap scheduler (``HostStep``, ``host_step``), the
seconds the engine charges a step (``charged_s``) and what binds it (``bottleneck``)."""
from __future__ import annotations

from dataclasses import dataclass

from ....core.graph import Graph
from .constants import ServingConstants


def launches(g: Graph) -> int:
    """Kernels one step of ``g`` launches: every op once per layer it runs in."""
    return int(sum(op.count for op in g.ops))


def host_floor_s(g: Graph, constants: ServingConstants, eager: bool) -> float:
    """The least time an eager step takes: the host launches its kernels one after another."""
    return host_launches(g, constants, eager) * constants.launch_s


def piecewise(g: Graph, constants: ServingConstants) -> bool:
    """Whether a step with prompt tokens replays piecewise CUDA graphs (``ServingConstants.piecewise_tokens``):
    vLLM V1 pads a step of up to its largest capture size in tokens to a captured size and replays the graphs
    between its attention layers, whatever its mix of prompt and decode tokens (vllm/v1/worker/gpu_model_runner.py
    ``_determine_batch_execution_and_padding``: ``pad_for_cudagraph``; vllm/config/compilation.py ``CUDAGraphMode``
    FULL_AND_PIECEWISE, the V1 default: piecewise graphs for prefill and mixed batches)."""
    return 0 < float(g.meta.get("tokens", 0.0)) <= constants.piecewise_tokens


def host_launches(g: Graph, constants: ServingConstants, eager: bool) -> int:
    """The launches the host pays for a step: none for a replayed graph; for piecewise graphs each attention
    kernel (run eagerly between the pieces) and each piece (one more than the attention layers); else every
    kernel (``launches``)."""
    if not eager:
        return 0
    if piecewise(g, constants):
        attention = int(sum(op.count for op in g.ops if op.kind == "attention"))
        return 2 * attention + 1
    return launches(g)


@dataclass(frozen=True)
class HostStep:
    """The host's work for one engine step, on the device's host CPU (``hostcpu``: its ``[host]`` table).

    TensorRT-LLM's PyTorch executor with the overlap scheduler (tensorrt_llm/_torch/pyexecutor/py_executor.py,
    ``PyExecutor._executor_loop_overlap``, NVIDIA/TensorRT-LLM, Apache-2.0) schedules step n, launches its forward
    on the previous step's sampled tokens still on the device (``_forward_step(scheduled_batch,
    previous_tensors_device)``), and only then updates step n−1's requests and sends their responses
    (``_update_requests(previous_batch.sample_state)``, ``_process_previous_batch``): the host's Python work for
    one step runs while the device runs another. The step lasts the longer of the two — the law's ``L_lat`` at
    work: when the host takes longer than the device, the host is the critical path.

        host = launches · launch_s (an eager step's kernels; a replayed CUDA graph: none)
             + speed · (host_step_s + host_sequence_s · sequences + host_prompt_s · prompts)
        speed = linear_s of this host / linear_s of the fit's (``ServingConstants.host_linear_s``)

    The launch floor keeps the fitted ``launch_s`` on every host, as it did before the executor's work had a
    term (so that the executor's terms at zero leave every prediction as it was); the per-core speed scales
    the executor's own work.

    A step that carries prompt tokens runs eagerly: TensorRT-LLM captures CUDA graphs for generation-only batches
    (tensorrt_llm/_torch/pyexecutor/model_engine.py ``_maybe_get_cuda_graph``: a batch with context requests
    runs without one), SGLang for decode batches (python/sglang/srt/model_executor/model_runner.py
    ``ModelRunner.forward``: a graph only where ``forward_mode.is_cuda_graph()``, decode and target-verify). vLLM V1
    replays piecewise graphs around its attention for any step of up to its largest capture size in tokens
    (``piecewise``): its host launches the attention kernels and the graphs. The line says so, and what the term
    is: kernels · ``launch_s``, a constant fitted end to end
    on TensorRT-LLM's H100 throughput cells (``engine.FITTED``), not a measured launch. On a short prompt it is most
    of the TTFT: Llama-3.1-8B's 355 kernels × 109 µs = 38.7 ms. This project's own H200 run of Llama-3.1-8B's shapes
    in eager PyTorch (tests/data/h200_llama8b_measured.json) took 26–40 ms per decode step against 7.6–26 ms
    replayed as one graph: an eager host of that order. Under TensorRT-LLM's C++ executor (``runtime``: ``cpp``)
    ``launch_s`` is a measured C++ launch instead and every step is eager (no CUDA graphs); the line names it.
    """
    cpu: str                  # the host CPU the device's hardware file names
    launch_s: float           # the eager step's kernel launches (0 for a replayed CUDA graph)
    python_s: float           # the executor's per-step and per-request work on this host
    sequences: float          # requests the step carries
    speed: float              # this host's seconds per unit of the fit host's (> 1: slower)
    stated: bool              # False: the hardware file states no ``linear_s``; the fit host's speed is carried
    prompts: float = 0.0      # prompts the step admits (context requests)
    eager: bool = True        # False: the step replays one captured CUDA graph (no launches)
    kernels: int = 0          # the kernels an eager step launches (piecewise: its attention kernels and graphs)
    per_launch_s: float = 0.0  # host seconds per launch (``ServingConstants.launch_s``)
    piecewise: bool = False   # the step replays piecewise graphs around its attention (vLLM V1)
    runtime: str = "pytorch"  # the executor launching the kernels (``runtime.RUNTIMES``): whose ``per_launch_s``
    serial: bool = False      # the executor's work runs between device steps (``ServingConstants.host_serial``)

    @property
    def time_s(self) -> float:
        return self.launch_s + self.python_s

    def step_s(self, device_s: float) -> float:
        """The step's seconds beside the device's ``device_s``, ``step_s`` aside. Overlapped (an overlap scheduler):
        the longer of the device's time and the host's whole work. Serial (vLLM V1 without async scheduling): the
        host launches the step's kernels while the device runs them (the longer of the two), and its scheduling,
        input preparation and output handling (``python_s``) run before and after, the device idle: they add."""
        if self.serial:
            return max(device_s, self.launch_s) + self.python_s
        return max(device_s, self.time_s)

    def why(self, device_s: float) -> str:
        """One line: what the host does in the step, against the device's time for it."""
        from ....core.units import fmt_time
        speed = (f"{self.speed:.2f}× the fit host's time (linear_s)" if self.stated else
                 "no linear_s stated: the fit host's speed carried")
        who = ("the host binds" if self.time_s > device_s else
               "launches hidden under the device's, executor work added" if self.serial else "hidden under the device's")
        how = ("piecewise CUDA graphs around attention: attention kernels and graphs" if self.piecewise else
               "eager, as a step with prompt tokens runs: kernels" if self.runtime == "pytorch" else
               "TensorRT-LLM's C++ executor, no CUDA graphs: kernels")
        per = ("launch_s fitted on TensorRT-LLM's H100 throughput cells" if self.runtime == "pytorch" else
               "a C++ launch, measured: step.runtime.CPP_LAUNCH_S")
        launches = (f"launches {fmt_time(self.launch_s)} ({how}, {self.kernels:,} × {fmt_time(self.per_launch_s)}, "
                    f"{per})" if self.eager else "launches 0 s (one replayed CUDA graph)")
        mode = "serial executor: its work between device steps, no async scheduling" if self.serial else \
            "overlap scheduler"
        return (f"{fmt_time(self.time_s)} of host work per step on {self.cpu}: {launches} + executor "
                f"{fmt_time(self.python_s)} ({self.sequences:,.0f} request{'' if round(self.sequences) == 1 else 's'}, {speed}) vs {fmt_time(device_s)} on "
                f"the device: {who} ({mode})")


def host_step(run, g: Graph, eager: bool, sequences: float, prompts: float = 0.0) -> HostStep:
    """The host's work for the step ``g`` carrying ``sequences`` requests, ``prompts`` of them admitted in it
    (``HostStep``)."""
    from ....machine.hostcpu import of
    c = run.constants
    cpu = of(run.hw)
    stated = cpu is not None and cpu.linear_s is not None
    speed = cpu.linear_s / c.host_linear_s if stated else 1.0
    name = cpu.cpu if cpu is not None else f"{run.hw.name}'s host (not named)"
    python = speed * (c.host_step_s + c.host_sequence_s * sequences + c.host_prompt_s * prompts)
    n = host_launches(g, c, eager)
    return HostStep(name, n * c.launch_s, python, float(sequences), speed, stated, float(prompts), eager, n,
                    c.launch_s if eager else 0.0, eager and piecewise(g, c), c.runtime, c.host_serial)


def charged_s(est, constants: ServingConstants) -> float:
    """The seconds the engine charges a priced step ``est`` (``priced``): the device's law time and the host's work
    as the executor orders them (``HostStep.step_s``: the longer of the two where they overlap; the executor's
    work added where it runs serially), plus the fixed ``step_s``."""
    return est.graph.meta["host"].step_s(float(est.time_s)) + constants.step_s


def bottleneck(est) -> dict:
    """{'resource', 'tier', 'why'} of a priced engine step: the law's, or the host where its work outlasts the
    device's (``HostStep``)."""
    host = est.graph.meta.get("host")
    if host is not None and host.time_s > float(est.time_s):
        return {"resource": "host", "tier": None, "why": host.why(float(est.time_s))}
    return est.bottleneck()
