"""Record every aten op a model executes, with its work, its traffic and where it ran.

A ``TorchDispatchMode`` sees each op after autograd and composite decompositions (``conv2d`` →
``aten::convolution``, ``linear`` → ``aten::t`` + ``aten::addmm``), so the op list is flat and its
names are the keys ``torch.profiler`` shows: predicted and measured rows join on (index, name).

On fake tensors (``real=False``) nothing is allocated and no kernel runs: parameters and inputs are
swapped for ``FakeTensor``s of the target device (from real tensors or from ``meta`` ones), so the
backend picks the kernels it would pick for real (on CPU the flash attention kernel, not the math
path that ``meta`` falls back to). On real tensors (``real=True``) each op is also timed
(``perf_counter`` around the dispatched call).
"""
from __future__ import annotations

import contextlib
import sys
import time
import weakref
from dataclasses import dataclass, field

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.module_tracker import ModuleTracker

from ...core.errors import IronlawError
from . import formulas

SKIP_NAMESPACES = ("prim", "profiler")
PHASES = ("forward", "backward", "optimizer")


@dataclass
class OpRecord:
    index: int
    name: str                     # 'aten::addmm' — the key torch.profiler shows
    overload: str                 # 'default', 'Tensor' …
    module: str                   # innermost module path ('' = the root module)
    phase: str                    # forward | backward | optimizer
    kind: str                     # an ironlaw.core.graph.KINDS member
    in_shapes: list
    in_dtypes: list
    out_shapes: list
    out_dtypes: list
    flops: float | None           # None: no formula for this op (listed as uncounted)
    bytes_read: dict = field(default_factory=dict)       # storage class -> bytes
    bytes_written: dict = field(default_factory=dict)
    param_bytes: float = 0.0      # bytes of parameters (or views of them) among the inputs
    time_s: float | None = None   # measured wall time on real tensors
    no_work: bool = False         # a view or an allocation: no kernel, no traffic
    weights_kn: bool = False      # mm/addmm/bmm whose matrix operand is a row-major K×N parameter (x @ W, as
                                  # GPT-2's Conv1D), not the transposed view nn.Linear passes (x @ Wᵀ)
    weight_nk: tuple | None = None  # mm/addmm (or bmm over one matrix) with a parameter as its matrix operand: its (N, K)
    weight_key: int | None = None   # the storage key of that parameter (a linear's forward and its dgrad)
    act_in: list = field(default_factory=list)   # (storage key, elements) of each input that is not a weight
    out_keys: list = field(default_factory=list)  # storage keys of the outputs (the data flow ``roles`` follows)
    _reads: list = field(default_factory=list, repr=False)    # (storage key, bytes) until classified
    _writes: list = field(default_factory=list, repr=False)

    @property
    def total_bytes(self) -> float:
        return sum(self.bytes_read.values()) + sum(self.bytes_written.values())

    @property
    def dtype(self) -> str:
        return (self.in_dtypes or self.out_dtypes or ["float32"])[0]


@dataclass
class Capture:
    """Records of one run plus what the graph needs: parameter count and resident bytes per class."""
    records: list[OpRecord]
    params: int
    footprint: dict               # storage class -> resident bytes
    device: str
    notes: list = field(default_factory=list)


def storage_key(t: torch.Tensor) -> int:
    try:
        return t.untyped_storage()._cdata
    except Exception:   # a tensor subclass without storage
        return id(t)


def tensor_bytes(t: torch.Tensor, elements: int) -> float:
    return float(elements * t.element_size())


class Recorder(TorchDispatchMode):
    def __init__(self, tracker: ModuleTracker, weight_keys: set, kv_keys: set, real: bool, root: str):
        super().__init__()
        self.tracker, self.real, self.root = tracker, real, root
        self.weight_keys, self.kv_keys = weight_keys, kv_keys     # grow as ops derive from them
        self.records: list[OpRecord] = []
        self.phase = "forward"
        self.keep: list = []          # storages held so that their keys are never reused (fake only)
        self.live_bytes = 0.0
        self.tracked: dict[int, float] = {}    # storage key -> bytes counted as live activations
        self.peak_live_bytes = 0.0
        self.checkpointed = 0         # torch.utils.checkpoint regions run as plain forward code
        self.checkpoint_missing: list[str] = []   # the names plain_checkpoints replaces that torch lacks

    def module_path(self) -> str:
        parents = [p for p in self.tracker.parents if p != "Global"]
        if not parents:
            return ""
        inner = max(parents, key=len)
        return inner.split(".", 1)[1] if "." in inner else ""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        ns = func.namespace
        if ns in SKIP_NAMESPACES or _is_metadata(func):
            return func(*args, **kwargs)
        if self.real:
            t0 = time.perf_counter()
            out = func(*args, **kwargs)
            elapsed = time.perf_counter() - t0
        else:
            out = func(*args, **kwargs)
            elapsed = None
        self._record(func, args, kwargs, out, elapsed)
        return out

    def _record(self, func, args, kwargs, out, elapsed):
        ins = formulas.tensors((args, kwargs))
        outs = formulas.tensors(out)
        no_work = formulas.is_no_work(func)
        flops = formulas.flops_of(func, args, kwargs, out)
        reads, writes = formulas.traffic_of(func, args, kwargs, out)
        phase = self.phase
        if phase == "forward" and torch._C._current_graph_task_id() != -1:
            phase = "backward"
        rec = OpRecord(
            index=len(self.records), name=func._schema.name, overload=func._overloadname,
            module=self.module_path(), phase=phase, kind=formulas.kind_of(func),
            in_shapes=[tuple(t.shape) for t in ins], in_dtypes=[_dt(t) for t in ins],
            out_shapes=[tuple(t.shape) for t in outs], out_dtypes=[_dt(t) for t in outs],
            flops=flops, time_s=elapsed, no_work=no_work,
            _reads=[(storage_key(t), tensor_bytes(t, n)) for t, n in reads],
            _writes=[(storage_key(t), tensor_bytes(t, n)) for t, n in writes])
        in_keys = [storage_key(t) for t in ins]
        rec.param_bytes = sum(t.numel() * t.element_size() for t, k in zip(ins, in_keys) if k in self.weight_keys)
        rec.act_in = [(k, t.numel()) for t, k in zip(ins, in_keys) if k not in self.weight_keys]
        rec.out_keys = [storage_key(t) for t in outs]
        if rec.name in ("aten::mm", "aten::addmm", "aten::bmm") and ins:
            w = ins[-1]
            shape, stride = tuple(w.shape), tuple(w.stride())
            if rec.name == "aten::bmm" and len(shape) == 3 and (shape[0] == 1 or stride[0] == 0):
                shape, stride = shape[1:], stride[1:]      # one weight matrix for the batch: a linear layer on a
                #                                            3-D slice (GPT-2's lm_head on the last position)
            is_weight = len(shape) == 2 and storage_key(w) in self.weight_keys
            rec.weights_kn = is_weight and stride[1] == 1 and stride[0] != 1
            if is_weight:
                rec.weight_nk = (int(shape[1]), int(shape[0]))
                rec.weight_key = storage_key(w)
        self.records.append(rec)
        if no_work:
            for t in outs:                 # a view of a weight is a weight; of a cache, a cache
                k = storage_key(t)
                if any(ik in self.weight_keys for ik in in_keys):
                    self.weight_keys.add(k)
            return
        # derived classes: a function of weights only is weight data (a cast or a transposed copy
        # of a weight); a copy that involves the KV cache is the KV cache (cat / index_copy_)
        derived_weight = bool(in_keys) and all(k in self.weight_keys for k in in_keys)
        derived_kv = rec.kind == "copy" and any(k in self.kv_keys for k in in_keys)
        for t in outs:
            k = storage_key(t)
            if k in in_keys:
                continue                   # in-place: the class is the input's
            if not self.real:
                self.keep.append(t.untyped_storage())
            if derived_weight:
                self.weight_keys.add(k)
            elif derived_kv:
                self.kv_keys.add(k)
            else:
                self._track_live(t)
                self.tracked[k] = self.tracked.get(k, 0.0) + float(t.numel() * t.element_size())

    def _track_live(self, t: torch.Tensor) -> None:
        nbytes = float(t.numel() * t.element_size())
        self.live_bytes += nbytes
        self.peak_live_bytes = max(self.peak_live_bytes, self.live_bytes)
        weakref.finalize(t, self._free, nbytes)

    def _free(self, nbytes: float) -> None:
        self.live_bytes -= nbytes


_METADATA = None


def _is_metadata(func) -> bool:
    global _METADATA
    if _METADATA is None:
        a = torch.ops.aten
        _METADATA = {getattr(a, n).default for n in ("sym_size", "sym_stride", "sym_numel", "sym_storage_offset",
                                                     "size", "stride", "numel", "dim", "is_contiguous",
                                                     "storage_offset", "sym_is_contiguous")
                     if hasattr(a, n) and hasattr(getattr(a, n), "default")}
    return func in _METADATA


def _dt(t: torch.Tensor) -> str:
    return str(t.dtype).replace("torch.", "")


# ---------------------------------------------------------------- fake tensors
def make_fake_mode():
    from torch._subclasses.fake_tensor import FakeTensorMode
    return FakeTensorMode(allow_non_fake_inputs=False)


def to_fake(mode, x, device: torch.device):
    """A FakeTensor standing for ``x``: from a meta tensor (placed on ``device``) or a real one."""
    from torch._subclasses.fake_tensor import FakeTensor
    if isinstance(x, FakeTensor):
        return x
    if isinstance(x, torch.Tensor):
        if x.is_meta:
            f = FakeTensor(mode, x.detach(), device)
        else:
            f = mode.from_tensor(x.detach())
        if x.requires_grad and x.is_leaf:
            f.requires_grad_(True)
        return f
    if isinstance(x, (list, tuple)):
        return type(x)(to_fake(mode, y, device) for y in x)
    if isinstance(x, dict):
        return {k: to_fake(mode, v, device) for k, v in x.items()}
    return x


def to_meta(x):
    if isinstance(x, torch.Tensor):
        m = x.detach().to("meta")
        return m.requires_grad_(True) if x.requires_grad and x.is_leaf else m
    if isinstance(x, (list, tuple)):
        return type(x)(to_meta(y) for y in x)
    if isinstance(x, dict):
        return {k: to_meta(v) for k, v in x.items()}
    return x


# ---------------------------------------------------------------- the run
def capture(module: torch.nn.Module, args=(), kwargs=None, *, real: bool = False, phase: str = "infer",
            device: str = "cpu", kv_cache=None, loss=None, prefill_kwargs=None, fake_mode=None) -> Capture:
    """Run ``module(*args, **kwargs)`` under the recorder; ``phase='train'`` adds backward + AdamW.

    ``kv_cache``: tensors (or a structure of them) whose bytes are KV-cache traffic.
    ``loss``: for training, a function output -> scalar tensor (default: HF ``.loss`` or the sum
    of the first tensor output).
    ``prefill_kwargs``: a call run first and not recorded (fills a KV cache before a decode step).
    ``fake_mode``: the FakeTensorMode to run under (to build inputs such as a cache inside it).
    """
    train = phase == "train"
    dev = torch.device(device)
    params = dict(module.named_parameters())
    fake_mode, state, args, kwargs, kv_cache, prefill_kwargs, notes = _inputs(
        module, params, args, dict(kwargs or {}), real, dev, train, kv_cache, prefill_kwargs, fake_mode)
    if prefill_kwargs is not None:
        _prefill(module, state, fake_mode, dev, prefill_kwargs)
    weight_keys = {storage_key(v) for v in state.values()}
    kv_keys = {storage_key(t) for t in formulas.tensors(kv_cache)} if kv_cache is not None else set()
    kv_keys |= {storage_key(t) for t in _cache_tensors(kwargs)}
    n_params = sum(v.numel() for k, v in _unique(params).items())
    weight_bytes = sum(v.numel() * v.element_size() for v in _unique(state).values())
    tracker = ModuleTracker()
    rec = Recorder(tracker, weight_keys, kv_keys, real, type(module).__name__)
    produced_kv, grads, opt = _run(module, params, state, args, kwargs, rec, tracker, fake_mode, train, loss, real)
    classes = {k: "weights" for k in rec.weight_keys}
    classes.update({k: "kv_cache" for k in rec.kv_keys})
    # a cache the step returns (prefill): the ops that wrote its tensors wrote the KV cache
    cache_tensors = _cache_tensors(kwargs) + formulas.tensors(kv_cache) + produced_kv
    cache_unique = {storage_key(t): t for t in cache_tensors}
    classes.update({k: "kv_cache" for k in cache_unique})
    footprint = {"weights": float(weight_bytes), "activations": rec.peak_live_bytes}
    if cache_unique:
        kv_bytes = float(sum(t.untyped_storage().nbytes() for t in cache_unique.values()))
        footprint["kv_cache"] = kv_bytes
        counted = sum(rec.tracked.get(k, 0.0) for k in cache_unique)   # cache written during the step
        footprint["activations"] = max(0.0, rec.peak_live_bytes - counted)
    if train:
        for g in grads:
            classes[storage_key(g)] = "gradients"
        state_tensors = [t for s in opt.state.values() for t in s.values() if isinstance(t, torch.Tensor)]
        for t in state_tensors:
            classes[storage_key(t)] = "optimizer"
        footprint["gradients"] = float(sum(g.numel() * g.element_size() for g in grads))
        footprint["optimizer"] = float(sum(t.numel() * t.element_size() for t in state_tensors))
    for r in rec.records:
        r.bytes_read = _by_class(r._reads, classes)
        r.bytes_written = _by_class(r._writes, classes)
        r._reads, r._writes = [], []
    if rec.checkpointed:
        notes.append(f"{rec.checkpointed} torch.utils.checkpoint region(s) captured as forward ops; their "
                     f"recompute is the what-if's (--what-if recompute=full)")
    return Capture(rec.records, n_params, footprint, str(dev), notes)


def _inputs(module, params: dict, args, kwargs: dict, real: bool, dev, train: bool, kv_cache, prefill_kwargs,
            fake_mode):
    """The module's state and the call's inputs on the tensors the capture runs on: real, meta or fake."""
    notes: list[str] = []
    buffers = dict(module.named_buffers())
    if real:
        fake_mode = None
        state = {**params, **buffers}
    elif dev.type == "meta":
        # structure only, fastest (no FakeTensorMode, no torch._dynamo import); kernels that depend on
        # the device are not chosen: SDPA runs its math path (the full score matrix)
        fake_mode = None
        state = {k: to_meta(v) for k, v in {**params, **buffers}.items()}
        for k, v in state.items():
            if k in params:
                v.requires_grad_(train and params[k].requires_grad)
        args, kwargs = to_meta(tuple(args)), to_meta(kwargs)
        kv_cache = to_meta(kv_cache) if kv_cache is not None else None
        prefill_kwargs = to_meta(prefill_kwargs) if prefill_kwargs is not None else None
        notes.append("captured on meta: device-specific kernels (fused attention) are not chosen")
    else:
        fake_mode = fake_mode or make_fake_mode()
        state = {k: to_fake(fake_mode, v, dev) for k, v in {**params, **buffers}.items()}
        for k, v in state.items():
            if k in params:
                v.requires_grad_(train and params[k].requires_grad)
        args = to_fake(fake_mode, tuple(args), dev)
        kwargs = to_fake(fake_mode, kwargs, dev)
        kv_cache = to_fake(fake_mode, kv_cache, dev) if kv_cache is not None else None
    return fake_mode, state, args, kwargs, kv_cache, prefill_kwargs, notes


def _prefill(module, state: dict, fake_mode, dev, prefill_kwargs) -> None:
    """Run the call that fills a KV cache before the recorded step (not recorded)."""
    pre = to_fake(fake_mode, prefill_kwargs, dev) if fake_mode is not None else prefill_kwargs
    try:
        with (fake_mode if fake_mode is not None else _null()), torch.no_grad():
            torch.func.functional_call(module, state, (), pre)
    except Exception as e:
        raise IronlawError(f"the model's prefill (before the recorded step) failed: "
                           f"{e.__class__.__name__}: {_first_line(e)}") from None


def _run(module, params: dict, state: dict, args, kwargs: dict, rec: "Recorder", tracker, fake_mode, train: bool,
         loss, real: bool):
    """The recorded step: forward (and for training backward and one optimizer step); returns the KV cache
    tensors the step produced, the gradients and the optimizer (None when not training)."""
    outer = fake_mode if fake_mode is not None else _null()
    grad_ctx = _null() if train else torch.no_grad()
    leaves = [v for k, v in state.items() if k in params and v.requires_grad]
    grads, opt = [], None
    try:
        with outer, grad_ctx, tracker, unpacked_sequences(), plain_checkpoints(rec), rec:
            out = torch.func.functional_call(module, state, tuple(args), kwargs)
            produced_kv = _cache_tensors({"cache": _output_cache(out)})
            if train:
                value = (loss or _default_loss)(out)
                value.backward()
        if train:
            grads = [p.grad for p in leaves if p.grad is not None]
            opt = _optimizer(leaves)
            with outer:
                opt.step()                     # first step creates the state (not recorded)
            rec.phase = "optimizer"
            with outer, tracker, rec:
                opt.step()
    except IronlawError:
        raise
    except Exception as e:
        where = "on fake tensors" if not real else "on real tensors"
        raise IronlawError(f"the model's {'training step' if train else 'forward'} failed {where}: "
                           f"{e.__class__.__name__}: {_first_line(e)}{_missing_checkpoint_note(rec)}") from None
    return produced_kv, grads, opt


@contextlib.contextmanager
def unpacked_sequences():
    """Tell transformers that inputs hold one unpadded sequence per row (they do, here).

    With no attention mask and no cache, transformers looks at the position ids to detect packed
    sequences; on fake tensors it cannot read them and builds a full attention mask that a real
    run with the same inputs skips. Used for fake and real runs alike so that both record the
    same ops.
    """
    mu = sys.modules.get("transformers.masking_utils")
    if mu is None or not hasattr(mu, "find_packed_sequence_indices"):
        yield
        return
    orig = mu.find_packed_sequence_indices
    mu.find_packed_sequence_indices = lambda position_ids: None
    try:
        yield
    finally:
        mu.find_packed_sequence_indices = orig


@contextlib.contextmanager
def plain_checkpoints(rec: "Recorder"):
    """Run each ``torch.utils.checkpoint`` region as the plain forward code it wraps.

    Checkpointing trades memory for a second forward during the backward; that recompute is a what-if
    (``recompute=full``) applied to the captured graph, not ops to record. ``checkpoint`` looks both variants up at
    call time, however the model imported it: the reentrant one calls ``CheckpointFunction.apply`` (a public name,
    in ``torch.utils.checkpoint.__all__``), the non-reentrant one the private
    ``_checkpoint_without_reentrant_generator``.
    The recorder alone (a ``TorchDispatchMode``, as ``torch.utils.flop_counter`` counts) cannot stand in for the
    private one (tests/test_capture_checkpoint.py): no public name or option reaches a call the model makes
    (``context_fn`` is the caller's argument), the region's start and end are marked only by a private saved-tensors
    hook, and left alone the region recomputes during the backward, after ``torch.func.functional_call`` has
    returned: on fake tensors on the module's own parameters (it fails), on real ones recorded a second time as
    backward ops. A name this torch lacks is left alone (a model without checkpoints captures as before) and a
    capture that then fails says so (``_missing_checkpoint_note``).
    """
    import torch.utils.checkpoint as ck

    def forward_only(*_args, **_kwargs):
        rec.checkpointed += 1
        yield                                       # checkpoint() runs the function between two next()s

    class Plain:
        @staticmethod
        def apply(function, _preserve, *args):
            rec.checkpointed += 1
            return function(*args)

    ours = {"_checkpoint_without_reentrant_generator": forward_only, "CheckpointFunction": Plain}
    saved = {n: getattr(ck, n) for n in ours if hasattr(ck, n)}
    rec.checkpoint_missing = [n for n in ours if n not in saved]      # a torch that renamed them: see _run
    for n in saved:
        setattr(ck, n, ours[n])
    try:
        yield
    finally:
        for n, v in saved.items():
            setattr(ck, n, v)


def _missing_checkpoint_note(rec: "Recorder") -> str:
    """Why a capture failed where this torch lacks a name ``plain_checkpoints`` replaces: a
    checkpointed region then recomputes outside the capture."""
    if not rec.checkpoint_missing:
        return ""
    names = ", ".join(f"torch.utils.checkpoint.{n}" for n in rec.checkpoint_missing)
    return (f" (torch {torch.__version__} has no {names}, which ironlaw replaces to capture a "
            f"torch.utils.checkpoint region as its forward: a model that checkpoints cannot be captured with it)")


def record(module, args, kwargs=None, *, real: bool, phase: str = "infer", device: str = "cpu") -> list[OpRecord]:
    """Op records of one run of ``module(*args, **kwargs)``.

    ``real=True`` runs the real kernels and fills ``time_s`` per op; ``real=False`` runs on fake
    tensors (nothing allocated). Both give the same op keys in the same order, so predicted and
    measured rows join on (index, name) — and on ``torch.profiler``'s op names.
    """
    return capture(module, args, kwargs, real=real, phase=phase, device=device).records


def _null():
    return contextlib.nullcontext()


def _by_class(entries, classes) -> dict:
    out: dict[str, float] = {}
    for k, b in entries:
        c = classes.get(k, "activations")
        out[c] = out.get(c, 0.0) + b
    return out


def _unique(d: dict) -> dict:
    seen, out = set(), {}
    for k, v in d.items():
        key = storage_key(v)
        if key not in seen:
            seen.add(key)
            out[k] = v
    return out


def _output_cache(out):
    """The KV cache a step's output carries: the field ``cache`` (transformers 5.x) or ``past_key_values`` (4.x)
    where its output class declares one, never 5.x's deprecated alias (reading it prints a warning)."""
    fields = getattr(out, "__dataclass_fields__", None)
    if fields is None:
        return getattr(out, "cache", None) or getattr(out, "past_key_values", None)
    name = next((n for n in ("cache", "past_key_values") if n in fields), None)
    return getattr(out, name, None) if name else None


def _cache_tensors(kwargs) -> list:
    cache = kwargs.get("cache", kwargs.get("past_key_values"))
    if cache is None:
        return []
    found = []
    for layer in getattr(cache, "layers", []) or []:
        for name in ("keys", "values"):
            t = getattr(layer, name, None)
            if isinstance(t, torch.Tensor):
                found.append(t)
    return found or formulas.tensors(cache)


def _default_loss(out):
    v = getattr(out, "loss", None)
    if isinstance(v, torch.Tensor):
        return v
    ts = formulas.tensors(out if not hasattr(out, "to_tuple") else out.to_tuple())
    if not ts:
        raise IronlawError("training needs a tensor output to differentiate; the model returned none")
    return ts[0].sum()


def _optimizer(leaves):
    if not leaves:
        raise IronlawError("training needs parameters that require grad; the model has none")
    try:
        return torch.optim.AdamW(leaves, lr=1e-4, fused=True)
    except RuntimeError:
        return torch.optim.AdamW(leaves, lr=1e-4, foreach=True)


def _first_line(e: Exception) -> str:
    s = str(e).strip().splitlines()
    return s[0][:300] if s else ""
