"""Where vLLM's tensor-parallel all-reduce changes kernel by message size: the regimes of its measured curve.

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
