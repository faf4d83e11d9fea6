"""ocl-infer: ONNX inference on any OpenCL device, with onnxruntime's Python API.

Switching from onnxruntime is one line::

    import ocl_infer
    sess = ocl_infer.InferenceSession("model.onnx")          # was onnxruntime.InferenceSession
    outputs = sess.run(None, {"input": array})                # a list of numpy arrays

Beyond onnxruntime's API: ``device=`` and ``precision=`` ("fp32", "fp16") when making a session,
:func:`list_devices`, :meth:`InferenceSession.profile` (per-layer timings from OpenCL events),
:func:`quantize` (int8 QDQ models calibrated on your inputs) and :func:`tune` (kernel autotuning,
cached on disk). Errors are :class:`Error` subclasses mirroring the C++ API.
"""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Union

import numpy as np

from . import _ocl_infer
from ._ocl_infer import (  # noqa: F401  (re-exported)
    DeviceError,
    Error,
    InputError,
    KernelBuildError,
    ModelError,
    UnsupportedError,
)

__all__ = [
    "InferenceSession", "SessionOptions", "RunOptions", "NodeArg", "Profile", "list_devices",
    "release_shared_contexts", "get_available_providers", "get_device", "operator_catalog",
    "supported_operators", "quantize", "tune", "Error", "ModelError", "UnsupportedError",
    "InputError", "DeviceError", "KernelBuildError", "__version__",
]

__version__: str = _ocl_infer.version()

# onnxruntime's type strings, by ocl-infer's element-type names.
_TYPE_STRINGS = {
    "float32": "tensor(float)", "float16": "tensor(float16)", "float64": "tensor(double)",
    "bfloat16": "tensor(bfloat16)", "int8": "tensor(int8)", "int16": "tensor(int16)",
    "int32": "tensor(int32)", "int64": "tensor(int64)", "uint8": "tensor(uint8)",
    "uint16": "tensor(uint16)", "uint32": "tensor(uint32)", "uint64": "tensor(uint64)",
    "bool": "tensor(bool)", "string": "tensor(string)",
}


@dataclasses.dataclass
class SessionOptions:
    """Options of a session; every field has the C++ ``SessionOptions`` meaning.

    Pass one as ``InferenceSession(path, sess_options)`` (where onnxruntime takes its own
    ``SessionOptions``), or give the same names as keyword arguments.
    """

    device: Optional[str] = None
    """None: $OCL_INFER_DEVICE, else the first GPU or accelerator, else the first CPU device. An
    index of :func:`list_devices` (as int or str) or part of a device name."""
    precision: str = "fp32"
    """"fp32", or "fp16" (float16 storage, float32 arithmetic). int8: load a quantized model."""
    fp32_ops: Optional[List[str]] = None
    """With fp16: op types whose tensors keep float32 storage ("Softmax", ...)."""
    cache_dir: Optional[str] = None
    """Compiled-kernel cache folder; None: $OCL_INFER_CACHE_DIR or ~/.cache/ocl-infer; "off"."""
    optimization_level: int = 1
    """0: no graph optimization (debugging); 1: all passes."""
    disabled_passes: Optional[List[str]] = None
    plan_memory: bool = True
    max_memory_bytes: int = 0
    """Memory the session may use (0: the device's memory or what the host can give)."""
    kernel_variants: Optional[str] = None
    tuning_cache: Optional[str] = None
    tune: bool = False
    tune_budget_seconds: float = 0.0
    keep_warm: int = -1
    """-1: the idle-worker spinner on CPU devices with 2+ compute units, tried against none on the
    first runs; -2: the spinner always; 0: off; N > 0: N empty markers per kernel launch."""
    plan_time_input_limit: int = 4096
    shape_generic: int = -1
    """-1: plans of a session's second and later input shapes use kernels with the sizes at run
    time (compiled once for all shapes); 0: kernels specialised for every shape; 1: generic always."""
    profiling: bool = False
    """Record per-kernel OpenCL event timings on every run (see InferenceSession.profile)."""
    log: Optional[Callable[[str], None]] = None
    """Receives progress and diagnostic lines (device chosen, compile progress)."""

    # onnxruntime's names, accepted so that code written for it keeps working.
    def __setattr__(self, name: str, value: Any) -> None:
        if name == "graph_optimization_level":
            name, value = "optimization_level", 0 if int(value) == 0 else 1
        elif name in ("intra_op_num_threads", "inter_op_num_threads", "log_severity_level",
                      "execution_mode", "enable_profiling"):
            if name == "enable_profiling":
                name = "profiling"
            else:
                return  # the device decides its own parallelism
        object.__setattr__(self, name, value)

    def _to_dict(self) -> Dict[str, Any]:
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        if d["device"] is not None:
            d["device"] = str(d["device"])
        return d


@dataclasses.dataclass
class RunOptions:
    """Options of one run: ``fetch`` also returns intermediate values by name (see
    :meth:`InferenceSession.executed_nodes`)."""

    fetch: Optional[List[str]] = None


class NodeArg:
    """A model input or output as onnxruntime describes it: ``name``, ``shape`` (ints, the names
    of symbolic dims, None for unnamed open dims) and ``type`` ("tensor(float)", ...)."""

    __slots__ = ("name", "shape", "type", "dtype")

    def __init__(self, info: Mapping[str, Any]):
        self.name: str = info["name"]
        self.shape: List[Union[int, str, None]] = list(info["shape"])
        self.dtype: str = info["dtype"]
        self.type: str = _TYPE_STRINGS.get(self.dtype, f"tensor({self.dtype})")

    def __repr__(self) -> str:
        return f"NodeArg(name={self.name!r}, type={self.type!r}, shape={self.shape!r})"


class Profile:
    """Per-layer timings of profiled runs: ``records`` (one dict per kernel launch row: nodes,
    op_types, kernel, variant, avg_us, min_us, max_us, flops, bytes, ...), ``inference_us``
    (device time of each run), ``wall_us`` (each run's wall-clock time)."""

    def __init__(self, records: List[Dict[str, Any]], inference_us: List[float], wall_us: List[float],
                 device: str):
        self.records = records
        self.inference_us = inference_us
        self.wall_us = wall_us
        self.device = device

    @property
    def total_us(self) -> float:
        """Summed average kernel time of one run, microseconds."""
        return float(sum(r["avg_us"] for r in self.records))

    def by_op_type(self) -> Dict[str, float]:
        """Average microseconds per run by op type (a fused row counts for its first op)."""
        out: Dict[str, float] = {}
        for r in self.records:
            key = r["op_types"][0] if r["op_types"] else r["kernel"]
            out[key] = out.get(key, 0.0) + r["avg_us"]
        return dict(sorted(out.items(), key=lambda kv: -kv[1]))

    def to_json(self, indent: Optional[int] = 1) -> str:
        return json.dumps({"device": self.device, "inference_us": self.inference_us,
                           "wall_us": self.wall_us, "launches": self.records}, indent=indent)

    def __len__(self) -> int:
        return len(self.records)

    def __iter__(self):
        return iter(self.records)

    def __str__(self) -> str:
        total = self.total_us or 1.0
        lines = [f"{'us':>9} {'%':>6}  {'op':<28} kernel"]
        for r in sorted(self.records, key=lambda r: -r["avg_us"]):
            ops = "+".join(r["op_types"])[:28]
            lines.append(f"{r['avg_us']:9.1f} {100 * r['avg_us'] / total:6.1f}  {ops:<28} {r['kernel']}")
        lines.append(f"{self.total_us:9.1f} us of kernels per run on {self.device}")
        return "\n".join(lines)


def _host_available_bytes() -> Optional[int]:
    """MemAvailable from /proc/meminfo, or None where it cannot be read."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


_CHECK_HOST_MEMORY_ABOVE = 1 << 30


def _check_host_memory(name: str, array: np.ndarray, copies: int) -> None:
    # The feed is copied (`copies` times here, once more into the C++ tensor) and then lives on
    # the device (host memory on a CPU device) next to an output of about its size, before the
    # session's own memory check has counted all of it: an input the host cannot hold that many
    # times fails here instead of waking the OOM killer (an 8 GiB input on a 24 GiB host did).
    need = array.size * array.itemsize * (copies + 3)
    if need < _CHECK_HOST_MEMORY_ABOVE:
        return  # run() is a hot path: /proc/meminfo is read only for large feeds
    available = _host_available_bytes()
    if available is not None and need > available:
        raise InputError(f"input '{name}' {list(array.shape)} {array.dtype} needs about {need / 2**30:.1f} GiB "
                         f"of host memory (its copies, the device's input and an output of its size); "
                         f"{available / 2**30:.1f} GiB are available")


def _as_feed(name: str, value: Any, declared: Optional[str] = None) -> np.ndarray:
    if value is None:
        raise InputError(f"input '{name}' is None")
    # Arrays keep their dtype (a mismatch is an error, as in onnxruntime); lists and scalars take
    # the input's declared type.
    if not isinstance(value, np.ndarray) and declared in _TYPE_STRINGS and declared not in ("bfloat16", "string"):
        value = np.asarray(value, dtype=declared)
    array = np.asarray(value)
    if array.dtype == object or array.dtype.kind in "USV":
        raise InputError(f"input '{name}': {array.dtype} arrays are not supported (numeric and bool only)")
    # Not np.ascontiguousarray: it makes a 0-d array (a scalar input) 1-d.
    if array.flags.c_contiguous:
        _check_host_memory(name, array, 1)
        return array
    _check_host_memory(name, array, 2)
    return array.copy(order="C")


class InferenceSession:
    """An ONNX model planned for one OpenCL device.

    ``InferenceSession(path_or_bytes, sess_options=None, providers=None, provider_options=None,
    *, device=None, precision="fp32", **options)`` where options are :class:`SessionOptions`
    fields. ``providers`` and ``provider_options`` are accepted for onnxruntime compatibility and
    ignored (the device is chosen with ``device=``). Loading checks the whole model: unsupported
    operators are listed at once in an :class:`UnsupportedError`.

    ``run`` may be called from several threads at once: the runs of one session are serialised
    (each returns what it would alone) and the GIL is released while the device works, so
    sessions in different threads run in parallel.
    """

    def __init__(self, path_or_bytes: Union[str, os.PathLike, bytes, bytearray, memoryview],
                 sess_options: Optional[SessionOptions] = None, providers: Optional[Sequence[Any]] = None,
                 provider_options: Optional[Sequence[Any]] = None, **options: Any):
        opts = dataclasses.replace(sess_options) if isinstance(sess_options, SessionOptions) else SessionOptions()
        if sess_options is not None and not isinstance(sess_options, SessionOptions):
            # An onnxruntime.SessionOptions: take what has a meaning here.
            level = getattr(sess_options, "graph_optimization_level", None)
            if level is not None and int(level) == 0:
                opts.optimization_level = 0
        known = {f.name for f in dataclasses.fields(SessionOptions)}
        for key, value in options.items():
            if key not in known:
                raise TypeError(f"InferenceSession() got an unexpected keyword argument '{key}' "
                                f"(options: {', '.join(sorted(known))})")
            setattr(opts, key, value)
        self._options = opts
        model = os.fspath(path_or_bytes) if isinstance(path_or_bytes, (str, os.PathLike)) else bytes(path_or_bytes)
        self._model = model
        self._session = _ocl_infer.Session(model, opts._to_dict())
        self._inputs = [NodeArg(i) for i in self._session.inputs()]
        self._outputs = [NodeArg(o) for o in self._session.outputs()]
        self._profiler: Optional[_ocl_infer.Session] = None

    # -- onnxruntime's API -------------------------------------------------------------------
    def get_inputs(self) -> List[NodeArg]:
        return list(self._inputs)

    def get_outputs(self) -> List[NodeArg]:
        return list(self._outputs)

    def get_providers(self) -> List[str]:
        return ["OpenCLExecutionProvider"]

    def get_session_options(self) -> SessionOptions:
        return dataclasses.replace(self._options)

    def run(self, output_names: Optional[Sequence[str]], input_feed: Mapping[str, Any],
            run_options: Optional[RunOptions] = None) -> List[np.ndarray]:
        """Runs the model: ``input_feed`` maps every input name to an array (any numeric dtype
        or bool the model declares; non-contiguous arrays are copied). Returns the outputs named
        in ``output_names`` (None: all model outputs, in model order) as numpy arrays. Names that
        are not model outputs are fetched as intermediate values when an executed node writes
        them; anything else raises :class:`InputError`."""
        return self._run(self._session, output_names, input_feed, run_options)

    def run_with_ort_values(self, *args: Any, **kwargs: Any):  # pragma: no cover - explicit refusal
        raise NotImplementedError("ocl_infer has no OrtValue; pass numpy arrays to run()")

    # -- beyond onnxruntime -------------------------------------------------------------------
    @property
    def device(self) -> Dict[str, Any]:
        """The OpenCL device the session runs on (name, type, driver, memory, ...)."""
        return self._session.device()

    def stats(self) -> Dict[str, Any]:
        """Start-up costs in ms (load, plan and its phases, compile) and tuning figures."""
        return self._session.stats()

    def executed_nodes(self) -> List[Dict[str, Any]]:
        """The nodes of the last-planned shapes as they execute (after fusion), with the values
        they write (fetchable by name in run())."""
        return self._session.executed_nodes()

    def dump(self, what: str = "plan") -> str:
        """"graph", "plan", "graph.json" or "plan.json" for the last-planned shapes."""
        return self._session.dump(what)

    def profile(self, input_feed: Mapping[str, Any], iterations: int = 10, warmup: int = 2) -> Profile:
        """Runs the model ``warmup`` + ``iterations`` times with OpenCL event profiling and returns
        per-layer timings averaged over the timed runs. A session made without ``profiling=True``
        profiles through a second session of the same model (made on the first call)."""
        if iterations < 1 or warmup < 0:
            raise InputError("profile: iterations must be at least 1 and warmup at least 0")
        target = self._session if self._options.profiling else self._profiling_session()
        for _ in range(warmup):
            self._run(target, None, input_feed, None)
        target.reset_profile()
        for _ in range(iterations):
            self._run(target, None, input_feed, None)
        return Profile(target.profile(), target.inference_us(), target.wall_us(), target.device()["name"])

    # -- internals ----------------------------------------------------------------------------
    def _profiling_session(self):
        if self._profiler is None:
            options = self._options._to_dict()
            options["profiling"] = True
            self._profiler = _ocl_infer.Session(self._model, options)
        return self._profiler

    def _run(self, session, output_names, input_feed, run_options) -> List[np.ndarray]:
        if not isinstance(input_feed, Mapping):
            raise InputError("input_feed must be a dict of input name -> array")
        declared = {i.name: i.dtype for i in self._inputs}
        feeds = {str(name): _as_feed(str(name), value, declared.get(str(name))) for name, value in input_feed.items()}
        outputs = [o.name for o in self._outputs]
        wanted = list(outputs) if output_names is None else [str(n) for n in output_names]
        fetch = [n for n in wanted if n not in outputs]
        if run_options is not None and run_options.fetch:
            fetch += [n for n in run_options.fetch if n not in fetch]
        results = session.run(feeds, fetch)
        return [results[n] for n in wanted]


def list_devices() -> List[Dict[str, Any]]:
    """Every OpenCL device of every platform (index, name, type, driver, memory, ...). Raises
    :class:`DeviceError` when no OpenCL platform is installed."""
    return _ocl_infer.list_devices()


def release_shared_contexts() -> None:
    """Sessions on one device share one OpenCL context per process, kept after the last session
    goes so that later sessions find the driver's compiler set up (PoCL: its kernel library,
    parsed at the first build from source, ~110 MB). This drops the process's references: each
    context and that memory go with their last session."""
    _ocl_infer.release_shared_contexts()


def get_device() -> str:
    """onnxruntime's ``get_device()``: "GPU" when an OpenCL GPU or accelerator exists, else "CPU"."""
    try:
        types = {d["type"] for d in list_devices()}
    except DeviceError:
        return "CPU"
    return "GPU" if types & {"GPU", "ACCELERATOR"} else "CPU"


def get_available_providers() -> List[str]:
    return ["OpenCLExecutionProvider"]


def operator_catalog() -> List[Dict[str, Any]]:
    """Every supported operator: domain, op_type, since_versions, max_opset, fp16_storage, notes."""
    return _ocl_infer.operator_catalog()


def supported_operators() -> List[str]:
    """The op types this runtime implements, sorted ("domain.Op" outside the default domain)."""
    return _ocl_infer.supported_operators()


def _random_feeds(session: InferenceSession, seed: int = 0) -> Dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    feeds = {}
    for arg in session.get_inputs():
        # An open first dim is the batch: 1, as the CLI's random inputs take it.
        shape = [1 if k == 0 and not isinstance(d, int) else d for k, d in enumerate(arg.shape)]
        if any(not isinstance(d, int) for d in shape):
            raise InputError(f"input '{arg.name}' has open dims {arg.shape}: pass input_feed with real data")
        arg = NodeArg({"name": arg.name, "shape": shape, "dtype": arg.dtype})
        dtype = np.dtype(arg.dtype) if arg.dtype != "bfloat16" else np.float32
        if dtype.kind == "f":
            feeds[arg.name] = rng.standard_normal(arg.shape).astype(dtype)
        elif dtype.kind == "b":
            feeds[arg.name] = rng.integers(0, 2, arg.shape).astype(bool)
        else:
            feeds[arg.name] = rng.integers(0, 2, arg.shape).astype(dtype)
    return feeds


def tune(model: Union[str, os.PathLike], input_feed: Optional[Mapping[str, Any]] = None,
         budget_seconds: float = 0.0, tuning_cache: Optional[str] = None, **options: Any) -> Dict[str, Any]:
    """Measures the kernel variants of every conv, gemm, pool and norm problem of the model on the
    device and saves the fastest to the tuning cache (later sessions use them). ``input_feed``
    gives the shapes to tune for (default: random data in the model's shapes, an open first dim
    as batch 1; other open dims need ``input_feed``). Returns the
    tuning figures: problems measured, how many improved, seconds, kernel ms before and after."""
    session = InferenceSession(model, tune=True, tune_budget_seconds=budget_seconds,
                               tuning_cache=tuning_cache, **options)
    feeds = dict(input_feed) if input_feed is not None else _random_feeds(session)
    session.run(None, feeds)
    stats = session.stats()
    return {k: stats[k] for k in ("tuned_problems", "tuned_improved", "tuning_seconds",
                                  "heuristic_kernel_ms", "tuned_kernel_ms", "tuning_cache")}


def quantize(model: Union[str, os.PathLike], calibration: Iterable[Mapping[str, Any]],
             output_path: Optional[Union[str, os.PathLike]] = None, *, method: str = "minmax",
             percentile: float = 99.999, per_channel: bool = True, activation_type: str = "uint8",
             exclude_nodes: Sequence[str] = (), return_report: bool = False, **options: Any):
    """Post-training int8 quantization: runs the float model on every calibration feed (dicts as
    ``run`` takes them), calibrates the activations (``method`` "minmax", "percentile" or
    "entropy") and returns the QDQ model's bytes (also written to ``output_path`` when given),
    which ocl_infer runs with integer kernels and onnxruntime loads too. With ``return_report``:
    ``(bytes, report)`` with the calibrated ranges and what stayed in float. ``options`` are
    :class:`SessionOptions` fields for the calibration runs (device, cache_dir, ...)."""
    feeds = [{str(k): _as_feed(str(k), v) for k, v in f.items()} for f in calibration]
    session = SessionOptions()
    for key, value in options.items():
        setattr(session, key, value)
    data, report = _ocl_infer.quantize_model(os.fspath(model), feeds, method, percentile, per_channel,
                                             activation_type, list(exclude_nodes), session._to_dict())
    if output_path is not None:
        with open(output_path, "wb") as f:
            f.write(data)
    return (data, report) if return_report else data
