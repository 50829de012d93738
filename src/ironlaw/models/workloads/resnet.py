"""The ResNet family (torchvision architecture, v1.5), built analytically without torch.

Architecture (``torchvision.models.resnet``): 7×7/2 stem conv (no bias), BN, ReLU, 3×3/2 max-pool;
four stages of basic (18, 34) or bottleneck (50, 101, 152) blocks with 64/128/256/512 planes, the
stride on the 3×3 conv (v1.5), a 1×1 conv + BN downsample where the shape changes; global average
pool and a 1000-way FC. Convs have no bias; BN has a weight and a bias per channel (running
statistics are buffers, not parameters).

Op conventions (one row per op; identical blocks of a stage share a row with ``count``):
- conv: 2·MACs FLOPs; reads its input and weights, writes its output.
- batchnorm (kind "norm"): inference applies a per-channel scale and shift (2 FLOPs/element, one
  read, one write); training computes batch statistics first, a second read of the input
  (5 FLOPs/element: sum, sum of squares, one scale and shift; ``ironlaw.core.flopcount``).
- relu / residual add: elementwise, 1 FLOP/element; max-pool k² comparisons per output element;
  average pool one add per input element.
- train = forward + backward (``common.backward``: 2× FLOPs and 2× activation traffic) + one AdamW
  step, with the activation traffic of three backward kernels set from what autograd runs: ReLU
  (threshold_backward reads grad and output, writes grad: 3 accesses for the forward's 2 → 1.5×),
  residual add (AddBackward passes the gradient through; the one kernel is the gradient sum where the
  block input forks: 3 accesses → 1×), training BN (reads x and dy for the reductions, again to form
  dx, writes dx: 5 accesses for the forward's 3 → 5/3×). Saved activations for the backward = every
  forward op's output (what autograd keeps, before in-place reuse) plus the image.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import reduce

import numpy as np

from ...core import flopcount, passes
from ...core.errors import IronlawError
from ...core.graph import Graph, Num, Op, dtype_bytes
from .registry import Request, builtin, check_phase
from .common import backward, dim, elementwise, linear, optimizer_step, training_footprint

# name -> (block kind, blocks per stage)
ARCHS = {
    "resnet18": ("basic", (2, 2, 2, 2)),
    "resnet34": ("basic", (3, 4, 6, 3)),
    "resnet50": ("bottleneck", (3, 4, 6, 3)),
    "resnet101": ("bottleneck", (3, 4, 23, 3)),
    "resnet152": ("bottleneck", (3, 8, 36, 3)),
}
PLANES = (64, 128, 256, 512)
NUM_CLASSES = 1000
DEFAULT_IMAGE = 224
MAX_IMAGE = 16384
PHASES = ("infer", "train")


def _out(h: int, k: int, s: int, p: int) -> int:
    return (h + 2 * p - k) // s + 1


@dataclass
class _Net:
    """Accumulates forward ops, exact parameter and MAC counts, and activation sizes."""
    batch: Num
    dtype: str
    train: bool
    ops: list[Op] = field(default_factory=list)
    params: int = 0
    macs_per_image: int = 0
    saved_elems_per_image: int = 0      # outputs autograd keeps for the backward
    bwd_act_scale: dict = field(default_factory=dict)   # op name -> backward/forward activation traffic
    live: list = field(default_factory=list)   # activation bytes of each op (for the inference peak)

    @property
    def b(self) -> float:
        return dtype_bytes(self.dtype)

    def _add(self, op: Op, out_elems_per_image: int, count: int) -> None:
        self.ops.append(op)
        self.saved_elems_per_image += out_elems_per_image * count
        self.live.append(op.bytes.get("activations", 0.0))

    def conv(self, name: str, cin: int, cout: int, k: int, s: int, p: int, h: int, count: int = 1) -> int:
        ho = _out(h, k, s, p)
        macs = ho * ho * cout * cin * k * k
        self.params += cin * cout * k * k * count
        self.macs_per_image += macs * count
        B, b = self.batch, self.b
        op = Op(name, "conv", flops=2.0 * B * macs,
                bytes={"activations": B * (h * h * cin + ho * ho * cout) * b, "weights": cin * cout * k * k * b},
                dtype=self.dtype, count=count, module=name.rsplit(".", 1)[0],
                shapes=f"[{dim(B)},{cin},{h},{h}]*[{cout},{cin},{k},{k}]/{s}", bytes_written=B * ho * ho * cout * b,
                attrs={"nk": (cout, cin * k * k)})
        self._add(op, ho * ho * cout, count)
        return ho

    def bn(self, name: str, c: int, h: int, count: int = 1) -> None:
        self.params += 2 * c * count
        elems = self.batch * c * h * h
        # training: a statistics pass reads the input once more
        op = elementwise(name, elems, self.dtype,
                         flops_per_elem=flopcount.BATCHNORM_TRAIN if self.train else flopcount.BATCHNORM_EVAL,
                         inputs=2 if self.train else 1, count=count, kind="norm",
                         weight_bytes=4 * c * self.b, module=name.rsplit(".", 1)[0])
        self._add(op, c * h * h, count)
        self.bwd_act_scale[name] = 5.0 / 3.0 if self.train else 2.0

    def relu(self, name: str, c: int, h: int, count: int = 1) -> None:
        op = elementwise(name, self.batch * c * h * h, self.dtype, count=count, module=name.rsplit(".", 1)[0])
        self._add(op, c * h * h, count)
        self.bwd_act_scale[name] = 1.5

    def add(self, name: str, c: int, h: int, count: int = 1) -> None:
        op = elementwise(name, self.batch * c * h * h, self.dtype, inputs=2, count=count,
                         module=name.rsplit(".", 1)[0])
        self._add(op, c * h * h, count)
        self.bwd_act_scale[name] = 1.0

    def maxpool(self, name: str, c: int, h: int, k: int = 3, s: int = 2, p: int = 1) -> int:
        ho = _out(h, k, s, p)
        B, b = self.batch, self.b
        op = Op(name, "pool", flops=float(k * k) * B * c * ho * ho,
                bytes={"activations": B * c * (h * h + ho * ho) * b}, dtype=self.dtype, module=name,
                shapes=f"[{dim(B)},{c},{h},{h}] {k}x{k}/{s}", bytes_written=B * c * ho * ho * b)
        self._add(op, c * ho * ho, 1)
        return ho

    def avgpool(self, name: str, c: int, h: int) -> None:
        B, b = self.batch, self.b
        op = Op(name, "pool", flops=B * c * (h * h + 1.0), bytes={"activations": B * c * (h * h + 1) * b},
                dtype=self.dtype, module=name, shapes=f"[{dim(B)},{c},{h},{h}] -> [{dim(B)},{c}]",
                bytes_written=B * c * b)
        self._add(op, c, 1)

    def fc(self, name: str, k: int, n: int) -> None:
        self.params += k * n + n
        self.macs_per_image += k * n
        self._add(linear(name, self.batch, k, n, self.dtype, bias=True, module=name), n, 1)


def _basic(net: _Net, pre: str, cin: int, planes: int, stride: int, h: int, count: int) -> tuple[int, int]:
    ho = net.conv(f"{pre}.conv1", cin, planes, 3, stride, 1, h, count)
    net.bn(f"{pre}.bn1", planes, ho, count)
    net.relu(f"{pre}.relu1", planes, ho, count)
    net.conv(f"{pre}.conv2", planes, planes, 3, 1, 1, ho, count)
    net.bn(f"{pre}.bn2", planes, ho, count)
    return _residual(net, pre, cin, planes, stride, h, ho, count, "relu2")


def _bottleneck(net: _Net, pre: str, cin: int, planes: int, stride: int, h: int, count: int) -> tuple[int, int]:
    width, cout = planes, planes * 4
    net.conv(f"{pre}.conv1", cin, width, 1, 1, 0, h, count)
    net.bn(f"{pre}.bn1", width, h, count)
    net.relu(f"{pre}.relu1", width, h, count)
    ho = net.conv(f"{pre}.conv2", width, width, 3, stride, 1, h, count)      # v1.5: stride on the 3x3
    net.bn(f"{pre}.bn2", width, ho, count)
    net.relu(f"{pre}.relu2", width, ho, count)
    net.conv(f"{pre}.conv3", width, cout, 1, 1, 0, ho, count)
    net.bn(f"{pre}.bn3", cout, ho, count)
    return _residual(net, pre, cin, cout, stride, h, ho, count, "relu3")


def _residual(net: _Net, pre: str, cin: int, cout: int, stride: int, h: int, ho: int, count: int,
              relu: str) -> tuple[int, int]:
    """A block's end: the 1x1 downsample of its input where the shape changes, the add, the last ReLU."""
    if stride != 1 or cin != cout:
        net.conv(f"{pre}.downsample.0", cin, cout, 1, stride, 0, h, count)
        net.bn(f"{pre}.downsample.1", cout, ho, count)
    net.add(f"{pre}.add", cout, ho, count)
    net.relu(f"{pre}.{relu}", cout, ho, count)
    return cout, ho


def forward(arch: str, batch: Num, dtype: str, image: int, train: bool) -> _Net:
    kind, blocks = ARCHS[arch]
    block = _basic if kind == "basic" else _bottleneck
    net = _Net(batch, dtype, train)
    h = net.conv("conv1", 3, 64, 7, 2, 3, image)
    net.ops[-1].attrs["graph_input"] = True          # the image needs no gradient
    net.bn("bn1", 64, h)
    net.relu("relu", 64, h)
    h = net.maxpool("maxpool", 64, h)
    c = 64
    for stage, (planes, n) in enumerate(zip(PLANES, blocks), start=1):
        stride = 1 if stage == 1 else 2
        c, h = block(net, f"layer{stage}.0", c, planes, stride, h, 1)
        if n > 1:   # the remaining blocks of a stage are identical: one row each, count n-1
            rest = f"layer{stage}.1" if n == 2 else f"layer{stage}.1-{n - 1}"
            c, h = block(net, rest, c, planes, 1, h, n - 1)
    net.avgpool("avgpool", c, h)
    net.fc("fc", c, NUM_CLASSES)
    return net


def _image(req: Request, name: str) -> int:
    image = req.options.get("image", DEFAULT_IMAGE)
    if isinstance(image, bool) or not isinstance(image, (int, np.integer)) or not 0 < image <= MAX_IMAGE:
        raise IronlawError(f"{name}: option image must be one whole number of pixels from 1 to {MAX_IMAGE} "
                           f"(the side of a square input), got {image!r}")
    return int(image)


def build(arch: str, req: Request) -> Graph:
    phase = check_phase(req, PHASES, "infer", arch)     # first: serve and search ask for decode with a seq
    if req.seq is not None:
        raise IronlawError(f"{arch}: --seq does not apply to a CNN; drop it (its input is a square image of "
                           f"{req.options.get('image', DEFAULT_IMAGE)} pixels a side, the builder option image: "
                           f"--opt image=N on the command line, image=N in ironlaw.analyze)")
    image = _image(req, arch)
    dtype = req.dtype or "bf16"
    train = phase == "train"
    net = forward(arch, req.batch, dtype, image, train)
    b = dtype_bytes(dtype)
    fwd_flops = sum((op.flops * op.count for op in net.ops), 0.0)
    image_bytes = req.batch * 3 * image * image * b
    if train:
        bwd = backward(net.ops)
        for op in bwd:
            scale = net.bwd_act_scale.get(passes.forward_of(op.name))
            if scale is not None:
                op.bytes["activations"] = op.bytes["activations"] * (scale / 2.0)
        ops = net.ops + bwd + [optimizer_step(net.params, dtype)]
        saved = req.batch * net.saved_elems_per_image * b + image_bytes
        footprint = training_footprint(net.params, dtype, saved)
        model_flops = 3.0 * fwd_flops
    else:
        ops = net.ops
        # live at once: the largest op's input + output, plus a held residual of the same order
        peak = reduce(np.maximum, net.live)
        footprint = {"weights": net.params * b, "activations": 1.5 * peak}
        model_flops = fwd_flops
    meta = {"batch": req.batch, "image": image, "params": int(net.params), "model_flops": model_flops,
            "macs_per_image": int(net.macs_per_image), "arch": arch}
    return Graph(arch, phase, dtype, ops, footprint=footprint, meta=meta)



def _register(arch: str) -> None:
    kind, blocks = ARCHS[arch]
    depth = arch[len("resnet"):]

    @builtin(arch, f"ResNet-{depth} (torchvision v1.5, {kind} blocks {'-'.join(map(str, blocks))}), "
                   f"image {DEFAULT_IMAGE} (option image=N)", PHASES, "cnn", options=("image",))
    def _build(req: Request, arch=arch) -> Graph:
        return build(arch, req)


for _a in ARCHS:
    _register(_a)
