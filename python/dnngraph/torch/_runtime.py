"""What every operator of dnngraph.torch shares: a cuDNN handle per thread and CUDA device, bound
to torch's current stream at each call; workspaces from torch's caching allocator; built graphs
cached per signature; one process-wide KernelCache per graph topology and GPU architecture, which
dynamic-shape graphs build on (a new shape of a known topology binds the cached kernel instead of
compiling: about 1 ms on the H200 for a matmul, docs/kernel-cache.md); and, per topology, the
first variant of a graph that cuDNN has an engine for, remembered once chosen. With a cache store
(_store.set_cache_store) the kernel caches are loaded from disk and saved back (save_caches)."""

import collections
import concurrent.futures
import contextlib
import threading
import time
import warnings
from typing import Any, Callable, Hashable, Optional, Sequence, Tuple, TypeVar

import torch
from torch import Tensor

try:  # torch's own test of "a dispatch mode is active" (FakeTensor, make_fx, functionalization)
    from torch.utils._python_dispatch import (
        _get_current_dispatch_mode as _current_dispatch_mode,
    )
except ImportError:  # another torch: every call through the registered operators, as before
    def _current_dispatch_mode() -> Any:
        return True

import dnngraph
from dnngraph import DataType, ErrorCode, HeuristicMode

from . import _store
from ._store import CacheKey

T = TypeVar("T")

DATA_TYPES = {
    torch.float16: DataType.Half,
    torch.bfloat16: DataType.BFloat16,
    torch.float32: DataType.Float,
}

# Heuristics A first; Fallback offers engines A does not for some graphs.
MODES = [HeuristicMode.A, HeuristicMode.Fallback]

# Built graphs kept, all operators together; past this the least recently used is dropped (a
# torch.compile with dynamic shapes, or a varying batch, sees many shapes).
CAPACITY = 512

# Which graph kinds are built with dynamic shapes on a kernel cache. Matmul + bias + ReLU was
# measured exact that way at five shapes on cuDNN 9.19 and 9.27 (tests/gpu/kernel_cache_test.cpp),
# NHWC conv_fprop + bias + ReLU at eight (tests/gpu/conv_dynamic_test.cpp); the other epilogues,
# the transposed operands and conv2d's other forms are checked at several shapes by
# python/tests/test_gpu_torch_ops.py. cuDNN 9.19 has no dynamic-shape engine for NCHW
# convolutions, conv_dgrad, conv_wgrad or batch norm (measured on the H200), so those are static
# per shape, as are norm and pointwise-only graphs until a dynamic build of them is measured
# exact: attention, the other specialized engine, returned NaN rows through a dynamic graph on
# 9.19 (docs/known-issues.md, sdpa-dynamic-shape).
DYNAMIC = {"matmul": True, "conv": True, "conv_nchw": False, "conv_backward": False,
           "norm": False, "pointwise": False, "attention": False}

# A shape of a dynamic kind run this many times gets a static plan of its own, built once (tens
# to hundreds of ms) in place of the dynamic one: cuDNN's dynamic-shape plans run
# runtime-compiled kernels, a static plan for one shape can take faster engines. On the H200
# with cuDNN 9.19, GPT-2-small's matmuls ran at 1.2-1.6x torch.mm's speed through static plans
# and at about half of it through dynamic ones: a training step's GPU time 23.8 ms against
# 32.3 ms (python/bench/matmul_engines_probe.py, train_gpt.py --profile; session 16). A new or
# rare shape still costs the dynamic build alone. set_static_after(None): dynamic plans only.
STATIC_AFTER = 16


class _Entry:
    """A built graph in the table, and for a dynamic one the runs counted towards its static
    plan (None once settled: promoted, refused by cuDNN, or never to be)."""

    __slots__ = ("graph", "runs")

    def __init__(self, graph: dnngraph.Graph, runs: Optional[int]) -> None:
        self.graph, self.runs = graph, runs


# (op, topology, shapes, dynamic, device); (op, topology, GPU architecture); (op, topology)
GraphKey = Tuple[str, Hashable, Hashable, bool, torch.device]
VariantKey = Tuple[str, Hashable]

_lock = threading.Lock()  # guards the tables below (never held while a graph builds)
_static_after: "list[Optional[int]]" = [STATIC_AFTER]
# set_static_after(..., background=True): static plans built on _builder's thread.
_background: "list[bool]" = [False]
_builder_pool: "list[concurrent.futures.ThreadPoolExecutor]" = []
_graphs: "collections.OrderedDict[GraphKey, _Entry]" = collections.OrderedDict()
_static_plans: "collections.Counter[str]" = collections.Counter()
_kernel_caches: "dict[CacheKey, dnngraph.KernelCache]" = {}
_variants: "dict[VariantKey, str]" = {}
_builds: "collections.Counter[str]" = collections.Counter()
# Wall seconds of builds per operator: in the calls (what a step waits for), and of static plans
# built on the background builder's thread beside the calls (set_static_after(background=True)).
_build_seconds: "collections.defaultdict[str, float]" = collections.defaultdict(float)
_background_seconds: "collections.defaultdict[str, float]" = collections.defaultdict(float)
# A call's graph key -> the shapes of the built graph that serves it (serving_shapes).
_served: "dict[GraphKey, Hashable]" = {}

_local = threading.local()  # .handles: {device index: dnngraph.Handle}, one set per thread


def handle(device: torch.device) -> dnngraph.Handle:
    """This thread's handle for the device, bound to torch's current stream of that device now
    (so a call inside `with torch.cuda.stream(s)` or a CUDA graph capture runs on s)."""
    handles: "dict[int, dnngraph.Handle]" = _local.__dict__.setdefault("handles", {})
    index = device.index if device.index is not None else torch.cuda.current_device()
    h = handles.get(index)
    if h is None:
        with torch.cuda.device(index):  # cudnnCreate binds the handle to the current device
            h = dnngraph.Handle()
        handles[index] = h
    h.set_stream(_current_raw_stream(index))
    return h


def _current_raw_stream(index: int) -> int:
    """torch.cuda.current_stream(index).cuda_stream, without making a Stream object."""
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    return int(raw(index)) if raw is not None else int(torch.cuda.current_stream(index).cuda_stream)


def on_device(device: torch.device) -> Any:
    """torch.cuda.device(device): what makes cuDNN's and torch's calls of one operator run on
    the tensors' device. With one visible GPU that is the current device already, and the
    context (a device query and two sets, some µs per call) is skipped."""
    if _one_device():
        return contextlib.nullcontext()
    return torch.cuda.device(device)


_device_count: "list[int]" = []  # torch's count once CUDA is initialized (it cannot change then)


def _one_device() -> bool:
    if _device_count:
        return _device_count[0] <= 1
    count = int(torch.cuda.device_count())
    if torch.cuda.is_initialized():
        _device_count.append(count)
    return count <= 1


def workspace(graph: dnngraph.Graph, device: torch.device) -> Optional[Tensor]:
    """The graph's workspace from torch's caching allocator (stream-ordered on the current stream,
    and from the capture's pool inside a CUDA graph capture)."""
    size = graph.get_workspace_size()
    return torch.empty(size, dtype=torch.uint8, device=device) if size > 0 else None


def execute(graph: dnngraph.Graph, h: dnngraph.Handle, device: torch.device,
            pack: "dict[int, Tensor]") -> None:
    """Runs the graph on the pack's tensors, handed to cuDNN as device pointers: each operator
    checked its tensors (device, dtype, shape, contiguity) and passes each in the layout its
    graph declares (the lowering tests of test_torch_ops.py compare the two), so the binding's
    per-tensor checks (a few µs each: a linear's forward and backward pass 12 tensors) are not
    made again."""
    ws = workspace(graph, device)
    pointers = {uid: t.data_ptr() for uid, t in pack.items()}
    moved: "dict[int, Tensor]" = {}  # alive until execute() has queued its work
    if any(p % ALIGNMENT for p in pointers.values()):
        # Only inputs can be off the boundary: every output is allocated here by torch (aligned).
        moved = {uid: _aligned_copy(pack[uid]) for uid, p in pointers.items() if p % ALIGNMENT}
        pointers.update({uid: t.data_ptr() for uid, t in moved.items()})
    graph.execute(h, pointers, None if ws is None else ws.data_ptr())


# dnngraph declares every tensor 16-byte aligned to cuDNN and refuses a pointer that is not
# (cuDNN 9.19 and 9.28.1 computed wrong values or faulted with one: docs/operations.md). A torch
# view can start anywhere (x[1:] of a [n, 3] bfloat16 tensor is 6 bytes in), and torch's own
# operators take any tensor: such an input runs through a copy of its memory span, same strides.
ALIGNMENT = 16


def _span(t: Tensor) -> Tensor:
    """The 1-D run of t's storage from its first element to its last (strides >= 0)."""
    count = 1 + sum((n - 1) * s for n, s in zip(t.shape, t.stride())) if t.numel() else 0
    return t.as_strided((count,), (1,), t.storage_offset())


def _aligned_copy(t: Tensor) -> Tensor:
    """t's span copied into a fresh allocation (aligned: torch's allocator gives 512 bytes), seen
    with t's sizes and strides."""
    span = _span(t)
    copy = torch.empty_like(span, memory_format=torch.contiguous_format).copy_(span)
    return copy.as_strided(t.shape, t.stride())


def run(op: str, kind: str, reference: Tensor, topology: Hashable, shapes: Hashable,
        describe: Callable[[dnngraph.Graph], None], pack: "dict[int, Any]") -> None:
    """Builds (once) and runs the graph of `op` on reference's device, in reference's dtype as
    the graph's I/O type: graph() then execute(), on the device's current stream."""
    device = reference.device
    with on_device(device):
        g = graph(op, kind, topology, shapes, device, DATA_TYPES[reference.dtype], describe)
        execute(g, handle(device), device, pack)


def serving_shapes(op: str, kind: str, topology: Hashable, shapes: Hashable,
                   device: torch.device, cost: Callable[[Hashable], Optional[int]]) -> Hashable:
    """The shapes whose graph runs a call of `shapes`: its own when that graph is built or no
    built graph of the op and topology on the device serves it; else the built one of least
    cost(its shapes) (None: it cannot serve the call), remembered for the next such call. So a
    rarer shape, first seen late in a run, runs through a graph already built instead of paying
    a build (varlen_attn: a smaller count of sequences or shorter ones)."""
    key: GraphKey = (op, topology, shapes, DYNAMIC[kind], device)
    with _lock:
        if key in _graphs:
            return shapes
        chosen = _served.get(key)
        if chosen is not None and (op, topology, chosen, DYNAMIC[kind], device) in _graphs:
            return chosen
        best: "Optional[tuple[int, Hashable]]" = None
        for other_op, other_topology, other, dynamic, other_device in _graphs:
            if (other_op, other_topology, dynamic, other_device) != (op, topology, DYNAMIC[kind],
                                                                     device):
                continue
            price = cost(other)
            if price is not None and (best is None or price < best[0]):
                best = (price, other)
        if best is None:
            _served.pop(key, None)
            return shapes
        _served[key] = best[1]
        return best[1]


def _capability(device: torch.device) -> "tuple[int, int]":
    major, minor = torch.cuda.get_device_capability(device)
    return (int(major), int(minor))


def graph(op: str, kind: str, topology: Hashable, shapes: Hashable, device: torch.device,
          io: DataType, describe: Callable[[dnngraph.Graph], None],
          variant: bool = False) -> dnngraph.Graph:
    """The built graph of `op` for this topology (what forces a new plan: data types, flags,
    variant) and these shapes on this device: from the table, else described by `describe`,
    built once and kept. Graphs of a dynamic kind share the topology's kernel cache.

    A failed build raises RuntimeError naming the op, shapes and cuDNN's message; but a variant
    (variant=True) cuDNN has no engine for raises dnngraph.Error (NoEngine), for
    first_variant() to try the next one."""
    dynamic = DYNAMIC[kind]
    key: GraphKey = (op, topology, shapes, dynamic, device)
    options: "dict[str, Any]" = {}
    with _lock:
        found = _graphs.get(key)
        if found is not None:
            _graphs.move_to_end(key)
            if found.runs is None:
                return found.graph
            found.runs += 1
            after = _static_after[0]
            if after is None or found.runs < after:
                return found.graph
            found.runs = None  # one attempt, by this thread; the others run the dynamic plan
    if found is not None:
        if _background[0]:
            return _promote_later(op, key, found, device, io, describe)
        return _promote(op, key, found, device, io, describe)
    if dynamic and _static_after[0] == 0 and not torch.cuda.is_current_stream_capturing():
        static = _build_static(op, device, io, describe)
        if static is not None:
            with _lock:
                entry = _graphs.setdefault(key, _Entry(static, None))
                _trim()
            return entry.graph
    if dynamic:
        options = {"dynamic_shape": True, "kernel_cache": _kernel_cache((op, topology,
                                                                          _capability(device)))}
    # Built without the lock, so that threads running graphs already built never wait for a
    # build; two threads building one key at once both build, and the first one kept wins.
    g = dnngraph.Graph(io_data_type=io, compute_data_type=DataType.Float, name=op, **options)
    started = time.perf_counter()
    try:
        describe(g)
        g.build(handle(device), MODES)
    except dnngraph.Error as e:
        with _lock:
            _build_seconds[op] += time.perf_counter() - started
        if variant and e.code is ErrorCode.NoEngine:
            raise
        raise RuntimeError(
            f"dnngraph.torch: building the cuDNN graph {op} for shapes {shapes} ({topology}) "
            f"failed: {e}") from e
    with _lock:
        _builds[op] += 1
        _build_seconds[op] += time.perf_counter() - started
        entry = _graphs.setdefault(key, _Entry(g, 0 if dynamic else None))
        _trim()
    return entry.graph


def _kernel_cache(key: CacheKey) -> dnngraph.KernelCache:
    """The process's kernel cache of a dynamic topology: made (or loaded from the cache store)
    at its first use, outside the lock (a load reads a file); the first one kept wins."""
    with _lock:
        cache = _kernel_caches.get(key)
    if cache is not None:
        return cache
    made = _store.open_cache(key)
    with _lock:
        return _kernel_caches.setdefault(key, made)


def _trim() -> None:
    """Drops the least recently used graphs past CAPACITY (with _lock held)."""
    while len(_graphs) > CAPACITY:
        _graphs.popitem(last=False)


def _build_static(op: str, device: torch.device, io: DataType,
                  describe: Callable[[dnngraph.Graph], None],
                  background: bool = False) -> Optional[dnngraph.Graph]:
    """A static plan of a dynamic kind's graph, built now (its seconds counted as the builder
    thread's where background); None where cuDNN refuses it (any error: the caller keeps or
    builds the dynamic plan)."""
    seconds = _background_seconds if background else _build_seconds
    g = dnngraph.Graph(io_data_type=io, compute_data_type=DataType.Float, name=op)
    started = time.perf_counter()
    try:
        describe(g)
        g.build(handle(device), MODES)
    except dnngraph.Error:
        with _lock:
            seconds[op] += time.perf_counter() - started
        return None
    with _lock:
        _builds[op] += 1
        _static_plans[op] += 1
        seconds[op] += time.perf_counter() - started
    return g


def _promote(op: str, key: GraphKey, entry: _Entry, device: torch.device, io: DataType,
             describe: Callable[[dnngraph.Graph], None]) -> dnngraph.Graph:
    """The static plan of a dynamic graph's shapes, built now and kept in its place; the dynamic
    graph where cuDNN refuses it (NoEngine, or any other error: the dynamic plan runs on), and
    during a CUDA graph capture (a build may not run there; a later run tries again)."""
    if torch.cuda.is_current_stream_capturing():
        with _lock:
            entry.runs = 0
        return entry.graph
    static = _build_static(op, device, io, describe)
    if static is None:
        return entry.graph
    with _lock:
        _graphs[key] = _Entry(static, None)
    return static


def _promote_later(op: str, key: GraphKey, entry: _Entry, device: torch.device, io: DataType,
                   describe: Callable[[dnngraph.Graph], None]) -> dnngraph.Graph:
    """_promote on the builder thread: the dynamic graph runs on (and is returned now) while the
    static plan builds; it takes the dynamic graph's place once built, if the entry is still in
    the table (clear_caches() may have dropped it). Not started during a CUDA graph capture (a
    later call tries)."""
    if torch.cuda.is_current_stream_capturing():
        with _lock:
            entry.runs = 0
        return entry.graph

    def build() -> None:
        with torch.cuda.device(device):  # a new thread's current device is the first one
            static = _build_static(op, device, io, describe, background=True)
        if static is not None:
            with _lock:
                if _graphs.get(key) is entry:
                    _graphs[key] = _Entry(static, None)

    _builder().submit(build).add_done_callback(_report_failure)
    return entry.graph


def _builder() -> concurrent.futures.ThreadPoolExecutor:
    """The one thread that builds static plans in the background, made at first use."""
    with _lock:
        if not _builder_pool:
            _builder_pool.append(concurrent.futures.ThreadPoolExecutor(
                max_workers=1, thread_name_prefix="dnngraph.torch static plans"))
        return _builder_pool[0]


def _report_failure(future: "concurrent.futures.Future[None]") -> None:
    """A background build that raised (not cuDNN's refusal, which leaves the dynamic plan): a
    warning, and the dynamic plan runs on."""
    error = future.exception()
    if error is not None:
        warnings.warn(f"dnngraph.torch: a static plan built in the background failed ({error!r}); "
                      "the dynamic plan runs on", RuntimeWarning, stacklevel=1)


def wait_for_static_plans() -> None:
    """Returns once every static plan asked for so far in the background is built (or refused)
    and in place (set_static_after(..., background=True)); at once without such builds."""
    with _lock:
        pool = _builder_pool[0] if _builder_pool else None
    if pool is not None:
        pool.submit(lambda: None).result()


def set_static_after(runs: Optional[int], *, background: bool = False) -> None:
    """After how many runs a shape of a dynamic-shape graph (matmul, NHWC conv2d forward) gets a
    static plan of its own, built once, in place of the dynamic plan (default STATIC_AFTER,
    16): on the H200 GPT-2-small's matmuls ran about 2x faster through static plans. 0 builds
    the static plan alone at a shape's first run (no dynamic plan): what CUDA graphs need, since
    a replay calls nothing (torch.compile(mode="reduce-overhead") runs each graph once before
    capturing it, and no plan is built inside a capture). None keeps the dynamic plans: no
    build after a shape's first (docs/torch.md).

    background=True builds a promoted shape's static plan on a thread of its own while the call
    that promoted it, and the calls after it, run the dynamic plan; the static plan takes over
    once built (wait_for_static_plans() waits for it). So a training step never waits for one
    (on cuDNN 9.28.1 a large matmul's static plan took about 0.5 s). Not with CUDA graphs captured
    from another thread in torch's default ("global") capture mode: a build during such a
    capture may invalidate it. Runs 0 builds at the first run whatever background says."""
    if runs is not None and (isinstance(runs, bool) or not isinstance(runs, int) or runs < 0):
        raise ValueError(f"dnngraph.torch.set_static_after: runs is {runs!r}; it takes a count "
                         "of runs, at least 0, or None (dynamic plans only)")
    if not isinstance(background, bool):
        raise ValueError(f"dnngraph.torch.set_static_after: background is {background!r}; it "
                         "takes True or False")
    with _lock:
        _static_after[0] = runs
        _background[0] = background


def first_variant(op: str, topology: Hashable, variants: Sequence[str],
                  attempt: Callable[[str], T]) -> T:
    """attempt(variant) for the variants in order (the one chosen before for this topology
    first) until one builds; a variant fails only by cuDNN having no engine (NoEngine). The
    choice is remembered (chosen_variants() reports it)."""
    key: VariantKey = (op, topology)
    refusals: "list[str]" = []
    known = _variants.get(key)  # one dict read, atomic: written under the lock below
    if known is not None:
        try:
            return attempt(known)
        except dnngraph.Error as e:  # a new shape the known form has no engine for: the others
            if e.code is not ErrorCode.NoEngine:
                raise
            refusals.append(f"{known}: {e.message.splitlines()[0] if e.message else e}")
    for variant in [v for v in variants if v != known]:
        try:
            result = attempt(variant)
        except dnngraph.Error as e:
            if e.code is not ErrorCode.NoEngine:
                raise
            refusals.append(f"{variant}: {e.message.splitlines()[0] if e.message else e}")
            continue
        with _lock:
            _variants[key] = variant
        return result
    raise RuntimeError(
        f"dnngraph.torch: cuDNN {dnngraph.cudnn_version_string(dnngraph.cudnn_runtime_version())} "
        f"has no engine for {op} ({topology}) in any form: " + "; ".join(refusals))


class Operator:
    """torch.ops.dnngraph.<name>, and a call of it that skips torch's custom-operator dispatch
    in plain eager calls (about half of a small op's host time, measured with the GPU steps
    stubbed out): there, with a gradient to record, a torch.autograd.Function of the same
    forward, setup_context and backward, else the implementation itself. Under torch.compile,
    FakeTensor, make_fx or any other dispatch mode, and for tensor subclasses, the call goes
    through the registered operator, so traces see one opaque node as before."""

    def __init__(self, name: str, implementation: Callable[..., Any],
                 fake: Callable[..., Any], backward: Optional[Callable[..., Any]],
                 setup_context: Optional[Callable[..., Any]]) -> None:
        self.op = torch.library.custom_op(f"dnngraph::{name}", implementation, mutates_args=(),
                                          tags=(torch.Tag.needs_exact_strides,))
        self.op.register_fake(fake)
        # What traced calls go through: torch.ops.dnngraph.<name>, as dynamo and make_fx know it.
        self.packet = getattr(torch.ops.dnngraph, name)
        self.implementation = implementation
        self.function: Any = None
        if backward is not None and setup_context is not None:
            self.op.register_autograd(backward, setup_context=setup_context)
            context = setup_context

            def forward(ctx: Any, *args: Any) -> Any:
                # The old form (ctx first): a Function with a setup_context binds the arguments
                # to forward's signature at every call (inspect.signature, tens of µs).
                output = implementation(*args)
                context(ctx, args, output)
                return output

            self.function = type(f"dnngraph_{name}", (torch.autograd.Function,), {
                "forward": staticmethod(forward), "backward": staticmethod(backward)})

    def __call__(self, *args: Any) -> Any:
        if not _plain_eager(args):
            return self.packet(*args)
        if self.function is not None and torch.is_grad_enabled():
            for a in args:  # a loop, not any() over a generator: this runs at every call
                if isinstance(a, Tensor) and a.requires_grad:
                    return self.function.apply(*args)
        return self.implementation(*args)


def _plain_eager(args: "tuple[Any, ...]") -> bool:
    if torch.compiler.is_compiling() or _current_dispatch_mode() is not None:
        return False
    for a in args:
        if isinstance(a, Tensor) and type(a) not in _PLAIN:
            return False
    return True


_PLAIN = (Tensor, torch.nn.Parameter)


class _Operators:
    """runtime.ops.<name>: every Operator registered, by name."""

    def __getattr__(self, name: str) -> Operator:
        raise AttributeError(f"dnngraph.torch: no operator {name!r}")


ops: Any = _Operators()


def operator(name: str, implementation: Callable[..., Any], fake: Callable[..., Any],
             backward: Optional[Callable[..., Any]] = None,
             setup_context: Optional[Callable[..., Any]] = None) -> Operator:
    """Registers torch.ops.dnngraph.<name> (runtime.ops.<name> calls it): the CUDA
    implementation (which checks its arguments itself, on any device), the fake one and, for a
    forward, its backward. Tagged needs_exact_strides (torch's default for custom operators,
    stated so that no configuration changes it): the outputs' layout follows the inputs' strides
    (attention), and torch.compile must hand each call the strides its fake implementation
    saw."""
    op = Operator(name, implementation, fake, backward, setup_context)
    setattr(ops, name, op)
    return op


def chosen_variants() -> "dict[str, str]":
    """Which form each operator's graphs took, per topology: e.g. {"linear.forward
    (torch.bfloat16, 'gelu', bias, saves preactivation)": "fused"}. docs/torch.md lists the
    variants and what each fuses."""
    with _lock:
        return {f"{op} {topology}": v for (op, topology), v in _variants.items()}


def cache_info() -> "dict[str, Any]":
    """Graphs held per operator; graphs built per operator since the start (or clear_caches()),
    of them the static plans that replaced dynamic ones (set_static_after), and the wall seconds
    those builds took in the calls (refused variants' included: what a training step waits for
    with new shapes; "build_seconds") and on the background builder's thread, beside the calls
    (set_static_after(n, background=True); "background_build_seconds"); the kernel caches (one per dynamic topology and GPU architecture) with
    the sum of their entries (size()) and of their revisions (revision(): +1 per insertion,
    replacement, removal or eviction), over those built; and how many kernel caches were loaded
    from the cache store's files (set_cache_store)."""
    with _lock:
        held: "collections.Counter[str]" = collections.Counter(key[0] for key in _graphs)
        caches = list(_kernel_caches.values())
        info = {"graphs": dict(held), "builds": dict(_builds),
                "static_plans": dict(_static_plans),
                "build_seconds": sum(_build_seconds.values()),
                "background_build_seconds": sum(_background_seconds.values()),
                "kernel_caches": len(caches),
                "kernel_caches_loaded": _store.loaded()}
    built = [c for c in caches if c.is_built()]
    info["kernel_cache_entries"] = sum(c.size() for c in built)
    info["kernel_cache_revisions"] = sum(c.revision() for c in built)
    return info


def save_caches() -> "dict[str, Any]":
    """Writes the kernel caches that changed to the cache store (set_cache_store), one file per
    topology and GPU architecture, atomically: a later process that sets the same store starts
    on them. Returns {"folder", "saved", "unchanged", "not_from_store" (caches made before the
    store was set), "errors" (messages: below cuDNN 9.27 a cache's document can be taken once,
    so save once, when its topologies have seen their shapes; docs/kernel-cache.md)}. Without a
    store: nothing is written ("folder" None)."""
    with _lock:
        caches = dict(_kernel_caches)
    return _store.save(caches)


def clear_caches() -> None:
    """Drops every built graph, kernel cache and variant choice (graphs build again on next use)."""
    with _lock:
        _graphs.clear()
        _kernel_caches.clear()
        _variants.clear()
        _builds.clear()
        _static_plans.clear()
        _build_seconds.clear()
        _background_seconds.clear()
        _served.clear()
    _store.forget()
