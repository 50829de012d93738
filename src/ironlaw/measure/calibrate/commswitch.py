"""Where vLLM's and SGLang's tensor-parallel all-reduces change kernel by message size: the regimes of their
measured curves.

vLLM picks the kernel of an all-reduce by the message's bytes and the group, not by which is faster at that size
(vllm/distributed/device_communicators/cuda_communicator.py ``CudaCommunicator.all_reduce``: its custom all-reduce
where ``CustomAllreduce.should_custom_ar`` takes the message, else torch symmetric memory where
``SymmMemCommunicator.should_use_symm_mem`` does, else NCCL), so its measured time jumps at those sizes where one
min-of-lines curve (machine/network/curves.py) can only bend. Each switch is a size from which another kernel runs:

- the custom kernel's two algorithms (csrc/custom_all_reduce.cuh, ``CustomAllreduce::allreduce``): two GPUs always
  run ``cross_device_reduce_1stage``; a fully NVLink-connected group of up to 4 GPUs runs it below 512 KiB, of up to 8
  below 256 KiB, and ``cross_device_reduce_2stage`` (a reduce-scatter then an all-gather over peer memory) from there;
- the custom kernel's ceiling: ``should_custom_ar`` takes a message below ``max_size``, 8 MiB
  (``CustomAllreduce.__init__``, ``max_size=8192 * 1024``), lowered where symmetric memory is on for the device's
  compute capability to ``CUSTOM_ALL_REDUCE_MAX_SIZES[capability][world_size]``
  (vllm/distributed/device_communicators/all_reduce_utils.py); symmetric memory then runs up to
  ``SYMM_MEM_ALL_REDUCE_MAX_SIZES[capability][world_size]``, NCCL beyond;
- more than two GPUs without NVLink between them (PCIe): no custom kernel (``CustomAllreduce.__init__``: "not
  supported on more than two PCIe-only GPUs"), NCCL at every size: no switch; nor on a group that spans hosts
  (``in_the_same_node_as``): GB200 and GB300 trays hold 4 GPUs, their 8- and 16-GPU tables cross trays.

The measured tables (aiconfigurator-core 0.12.0, comm/vllm/<version>/custom_allreduce_perf, vllm_graph rows, bf16)
show each switch (docs/accuracy.md, "vLLM's own all-reduce"): 8 B200 0.13 → 0.26 MiB 9.4 → 25.8 µs (1-stage →
2-stage), 0.5 → 1 MiB 26.2 → 17.2 µs (2-stage → symmetric memory), NCCL's own table's time from 128 MiB on; 4 B200,
B300, GB300 at 0.25 → 0.5 MiB 8.6 → 18.0 µs; A100 (capability 8.0, no symmetric memory) NCCL's time from 8 MiB on,
2 GPUs 4 → 8 MiB 25.2 → 89.7 µs.

SGLang's all-reduce (sglang/srt/distributed/parallel_state.py ``GroupCoordinator.all_reduce``) takes its custom
all-reduce where the communicator's ``should_custom_ar`` takes the message, else NCCL (torch symmetric memory and
MSCCL++ are off unless asked for). At the tables' versions that is the JIT custom all-reduce
(sglang/srt/distributed/device_communicators/custom_all_reduce_v2.py ``CustomAllReduceV2``): ``should_custom_ar``
takes a message of at most ``max_size`` bytes (``inp_size <= self.max_size``), by default its 16 MiB pull workspace
(``max_pull_size``); the older ``CustomAllreduce`` (custom_all_reduce.py, ``_MAX_CAR_SIZE`` 8 MiB, below it) does
not match the tables, whose 16 MiB rows run the custom kernel's time on every NVLink GPU of version 0.5.14 (8 H100
110.5 µs against NCCL's own table's 121.9, 8 B200 57.5 against 99.1) and NCCL's from 32 MiB (198.0 / 199.8, 169.7 /
167.8). So one switch (``sglang_switches``), from 16 MiB + 1 byte. The JIT kernel's one-shot push / one-shot pull /
two-shot pull thresholds inside that range are tuned per architecture and world size and moved between versions
(``_maybe_init_config``'s ``THRESHOLD_2_SHOT_MAP``; configs/custom_all_reduce_v2.py), so they are not switches here:
the custom regime's lines bend there. ``can_use_custom_all_reduce_v2`` needs every GPU of the group joined by
NVLink: PCIe GPUs (L40S, RTX PRO 6000) and a GB200/GB300 group beyond a 4-GPU tray have no switch (one curve).

aiconfigurator's collector (collector/network/collect_all_reduce.py ``benchmark_sglang_allreduce``) times SGLang's
``tensor_model_parallel_all_reduce`` with the custom all-reduce on and MSCCL++ and symmetric memory off, its
``sglang_graph`` rows by replaying a captured CUDA graph, as SGLang's decode steps run it. A100's table is SGLang
0.5.10's, whose 16 MiB row already runs NCCL's time (126.9 µs against 128.2); it stays in the custom regime here.
"""
from __future__ import annotations

KiB, MiB = 1 << 10, 1 << 20
CUSTOM_MAX_BYTES = 8 * MiB             # CustomAllreduce's default max_size
# GPU -> its CUDA compute capability (NVIDIA, "CUDA GPUs - Compute Capability"), the key of vLLM's size tables
CAPABILITY = {"a100": "8.0", "l40s": "8.9", "h100": "9.0", "h200": "9.0", "b200": "10.0", "gb200": "10.0",
              "b300": "10.3", "gb300": "10.3", "rtx-pro-6000": "12.0"}
# GPU -> the most GPUs of one host joined all to all by NVLink (HGX boards: 8; GB200/GB300 NVL72 compute trays: 4
# GPUs on one host, NVIDIA GB200 NVL72 datasheet); 0: PCIe only (L40S, RTX PRO 6000 Server: no NVLink)
NVLINK_HOST_GPUS = {"a100": 8, "h100": 8, "h200": 8, "b200": 8, "b300": 8, "gb200": 4, "gb300": 4,
                    "l40s": 0, "rtx-pro-6000": 0}
# all_reduce_utils.py: capability -> world size -> bytes, where symmetric memory is on (vllm/envs.py
# ``VLLM_ALLREDUCE_USE_SYMM_MEM``, default 1; a capability without an entry keeps the 8 MiB ceiling and NCCL beyond)
CUSTOM_MAX = {"9.0": {2: 64 * MiB, 4: 32 * MiB, 6: MiB // 2, 8: MiB // 4},
              "10.0": {2: 2 * MiB, 4: 2 * MiB, 6: MiB, 8: MiB},
              "10.3": {2: 4 * MiB, 4: 4 * MiB, 6: 8 * MiB, 8: 4 * MiB}}
SYMM_MEM_MAX = {"9.0": {2: 64 * MiB, 4: 32 * MiB, 6: 64 * MiB, 8: 64 * MiB},
                "10.0": {2: 8 * MiB, 4: 32 * MiB, 6: 128 * MiB, 8: 128 * MiB},
                "10.3": {2: 4 * MiB, 4: 32 * MiB, 6: 32 * MiB, 8: 64 * MiB}}
CUSTOM_WORLD_SIZES = (2, 4, 6, 8)      # CustomAllreduce._SUPPORTED_WORLD_SIZES
SGLANG_CUSTOM_MAX_BYTES = 16 * MiB     # SGLang's CustomAllReduceV2 default max_pull_size: it takes messages up to it


def vllm_switches(gpu: str, gpus: int) -> tuple[int, ...]:
    """The message sizes (bytes, ascending) at which vLLM's all-reduce on ``gpus`` GPUs of ``gpu`` on one host
    changes kernel (module docstring); () where it runs one kernel throughout or the GPU is not in these tables."""
    cap, joined = CAPABILITY.get(gpu), NVLINK_HOST_GPUS.get(gpu, 0)
    if cap is None or gpus not in CUSTOM_WORLD_SIZES or (gpus > 2 and gpus > joined):
        return ()
    ceiling = min(CUSTOM_MAX[cap][gpus], CUSTOM_MAX_BYTES) if cap in CUSTOM_MAX else CUSTOM_MAX_BYTES
    out = {ceiling}
    if gpus > 2:
        stage = 512 * KiB if gpus <= 4 else 256 * KiB
        if stage < ceiling:
            out.add(stage)
    if cap in SYMM_MEM_MAX and SYMM_MEM_MAX[cap][gpus] > ceiling:
        out.add(SYMM_MEM_MAX[cap][gpus])
    return tuple(sorted(out))


def sglang_switches(gpu: str, gpus: int) -> tuple[int, ...]:
    """The message sizes (bytes, ascending) at which SGLang's all-reduce on ``gpus`` GPUs of ``gpu`` on one host
    changes kernel (module docstring): NCCL above its JIT custom kernel's 16 MiB; () where that kernel does not run
    (a group not all joined by NVLink) or the GPU is not in these tables."""
    if gpu not in CAPABILITY or not 2 <= gpus <= NVLINK_HOST_GPUS.get(gpu, 0):
        return ()
    return (SGLANG_CUSTOM_MAX_BYTES + 1,)


# the table's framework column (aiconfigurator's custom_allreduce_perf ``framework``) -> its engine's switches
SWITCHES = {"vllm": vllm_switches, "sglang": sglang_switches}


def switches(framework: str, gpu: str, gpus: int) -> tuple[int, ...]:
    """The switches of the all-reduce of ``framework`` (a table's framework column, any case) on ``gpus`` GPUs of
    ``gpu``; () for an engine whose dispatch is not known here (one curve throughout)."""
    rule = SWITCHES.get(framework.lower())
    return rule(gpu, gpus) if rule else ()
