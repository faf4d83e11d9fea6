#!/usr/bin/env python3
"""Benchmarks ocl-infer against onnxruntime's CPU provider, model by model, in one run.

Run with the venv that models/install_deps.sh sets up (it has onnxruntime):

    build/pyenv/bin/python tools/benchmark.py [--models resnet18 ...] [--iterations N]
        [--warmup W] [--rounds R] [--out FILE.md] [--tune] [--keep-warm-off]

For every model (NAME from --models-dir, or a path to an .onnx file) it measures:
  - onnxruntime latency: one InferenceSession (default threads unless --ort-threads), W warm-up
    runs then N timed session.run calls per round;
  - ocl-infer latency: `ocl-infer MODEL --bench --iterations N --warmup W --json`, with the
    optimizer (default) and with -O0, both with the device-class heuristics (--tuning-cache off);
  - with --tune: `ocl-infer tune MODEL` first (into a fresh tuning cache; its time and the kernel
    times it reports are recorded), then a third latency configuration that uses the tuned
    choices;
  - with --keep-warm-off: one more latency configuration with `--keep-warm 0` (no idle-worker
    markers; see the docs/cli.md, "Kernel boundaries on CPU devices");
  - correctness: one `--input ... --output-dir` run, with and without -O0, compared with
    onnxruntime's outputs (a latency marked "wrong output" measured a broken graph; quantized
    models are allowed QUANTIZED_STEPS steps of their output grid);
  - kernel launches and node counts: `--dump graph --json`, with and without -O0;
  - activation memory: `--dump plan --json` (peak, naive and lower bound);
  - start-up: the process time of one plain `--input ... --output-dir` run (a user's first run,
    first-run kernels included) cold, with an empty ocl-infer --cache-dir and the driver's own
    program cache emptied (POCL_CACHE_DIR) or off (CUDA_CACHE_DISABLE), and with only ocl-infer's
    cache empty; first_inference_ms (which includes plan_ms: Session::run plans on its first call)
    and plan_ms of one warm `--bench --iterations 1 --warmup 0` run, with the default caches,
    which the timed runs have filled.
All latency runs use the same inputs: NAME.input.<input>.npy beside the model for each input
(multi-input models, e.g. the recurrent ones of models/export_graph_cases.py), or the first golden
case's NAME.c0.in.<input>.npy (the OCR models of models/export_ocr.py), else NAME.input.npy
(NAME.dog.input.npy for the demo model) for the first, else a seeded N(0,1) tensor written to a
temporary .npy.

Before the timed rounds every ocl-infer configuration runs twice untimed and the benchmark waits for
the background processes those runs start (compile helpers, the binary store of PoCL's warm
starts; --no-prime skips this), so that the rounds measure warm caches on quiet cores.
--fp16 adds `--precision fp16`; --int8 runs int8/NAME.qdq.onnx in both runtimes; --process times
whole warm `ocl-infer MODEL --input ...` processes against a new onnxruntime session plus its first
run, both in the benchmark's own process (ORT already set up by earlier sessions) and in a new
Python process after `import onnxruntime` (its first session, which pays ORT's one-time set-up as
an ocl-infer process pays the OpenCL driver's; Python's start-up and the import not counted), the
median of three of each per round; --readme FILE writes the summary table between FILE's benchmark markers.

The latency runs are interleaved so that both runtimes see the same machine conditions: each of
R rounds runs every model once with each of the three configurations, rotating their order from
round to round. A latency is the median of the R per-round medians; min is over all runs.

Prints a Markdown table (and writes it to --out, with the raw measurements as JSON beside it,
FILE.json). A configuration that fails, for instance an op ocl-infer does not support yet, shows
its error in the table instead of a number; the other columns are still measured.
"""

import argparse
import json
import math
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_MODELS = ("resnet18", "resnet50", "mobilenet_v2", "squeezenet1_1", "efficientnet_b0",
                  "densenet121", "convnext_tiny", "efficientnet_lite0")
MIB = 1024.0 * 1024.0
# ocl-infer's output must match onnxruntime's within this fraction of max(1, max|output|). Loose on
# purpose: it catches a broken graph (a latency of a wrong answer means nothing), not rounding;
# resnet50's float32 rounding alone reaches 1e-4 of its largest logit.
OUTPUT_TOLERANCE = 1e-3
# float16 storage (float32 arithmetic) against onnxruntime's float32: the same broken-graph check,
# with room for fp16 rounding of every stored activation.
FP16_TOLERANCE = 2e-2
# A quantized (QDQ) model's outputs lie on a grid: ocl-infer's integer kernels match onnxruntime's
# fused ones, but the unfused graph (-O0: DequantizeLinear, float op, QuantizeLinear) rounds
# differently and lands a few steps away. Allowed: this many output steps.
QUANTIZED_STEPS = 8


def quantization_step(outputs: dict) -> float:
    """The smallest gap between distinct output values (the output's quantization step)."""
    step = math.inf
    for value in outputs.values():
        unique = np.unique(value.astype(np.float64).ravel())
        if unique.size > 1:
            step = min(step, float(np.diff(unique).min()))
    return 0.0 if math.isinf(step) else step


def is_quantized(path: str) -> bool:
    """Whether the model holds QuantizeLinear/DequantizeLinear or QLinear* nodes."""
    try:
        import onnx
        return any(n.op_type in ("QuantizeLinear", "DequantizeLinear") or n.op_type.startswith("QLinear")
                   for n in onnx.load(path, load_external_data=False).graph.node)
    except Exception:
        return False


class CliError(Exception):
    """An ocl-infer run that failed; the message is what it printed last on stderr."""


def run_cli(binary: str, args: list, timeout: float, env: dict = None, parse: bool = True):
    """Runs ocl-infer and returns its JSON output (or None if not parse); raises CliError if it
    fails or prints no JSON."""
    command = [binary] + args
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env)
    except FileNotFoundError:
        raise CliError(f"{binary} not found (build it first)")
    except subprocess.TimeoutExpired:
        raise CliError(f"timed out after {timeout:.0f} s")
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        message = lines[-1] if lines else f"exit status {done.returncode}, no message"
        if message.startswith("ocl-infer: "):
            message = message[len("ocl-infer: "):]
        raise CliError(message)
    if not parse:
        return None
    text = done.stdout
    try:
        return json.loads(text[text.index("{"):])
    except ValueError:
        raise CliError(f"no JSON on stdout: {text.strip()[:200]!r}")


def user_env() -> dict:
    """This process's environment less OCL_INFER_COMPILE_HELPERS: the cold-start and warm-process
    columns measure what a user gets by default, whatever the shell exported for the steady state."""
    env = dict(os.environ)
    env.pop("OCL_INFER_COMPILE_HELPERS", None)
    return env


def time_cli_process(binary: str, args: list, timeout: float, env: dict = None) -> float:
    """Wall-clock ms of one whole ocl-infer process (start to exit), which must succeed."""
    start = time.perf_counter()
    run_cli(binary, args, timeout, env, parse=False)
    return (time.perf_counter() - start) * 1000.0


def attempt(function, *args, **kwargs) -> dict:
    """Calls function; returns {"result": ...} or {"error": message}."""
    try:
        return {"result": function(*args, **kwargs)}
    except CliError as error:
        return {"error": str(error)}
    except Exception as error:  # onnxruntime raises its own types; keep measuring the rest
        return {"error": f"{type(error).__name__}: {error}".splitlines()[0]}


def physical_cores() -> int:
    """Physical cores as onnxruntime counts them for its default intra-op thread count."""
    cores, core = set(), {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if key in ("physical id", "core id"):
                    core[key] = value.strip()
                elif not line.strip() and core:
                    cores.add((core.get("physical id"), core.get("core id")))
                    core = {}
        if core:
            cores.add((core.get("physical id"), core.get("core id")))
    except OSError:
        pass
    return len(cores) or os.cpu_count() or 1


def cpu_name() -> str:
    """The host CPU's model name (the device behind PoCL), with its microarchitecture where the
    kernel names it in the flags (avx512 or not)."""
    name = platform.processor() or "unknown CPU"
    flags = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "model name" and name in ("unknown CPU", "", platform.machine()):
                    name = value.strip()
                elif key.strip() == "flags":
                    flags = value
                    break
    except OSError:
        pass
    name = re.sub(r"\s+", " ", name)
    return name + (" (AVX-512)" if "avx512f" in flags.split() else " (AVX2)" if "avx2" in flags.split() else "")


def resolve_model(spec: str, models_dir: str) -> tuple:
    """Returns (name, path) for a model name in models_dir or a path to an .onnx file."""
    if spec.endswith(".onnx") or os.sep in spec:
        return os.path.splitext(os.path.basename(spec))[0], spec
    return spec, os.path.join(models_dir, spec + ".onnx")


def find_input(path: str) -> str:
    stem = os.path.splitext(path)[0]
    for candidate in (stem + ".input.npy", stem + ".dog.input.npy"):
        if os.path.exists(candidate):
            return candidate
    return None


def ort_session(path: str, ort_threads: int):
    import onnxruntime

    options = onnxruntime.SessionOptions()
    if ort_threads:
        options.intra_op_num_threads = ort_threads
    return onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])


def int8_companion(path: str) -> str:
    """The quantized (QDQ) version of a float model, as models/export_quantized.py writes it
    (int8/NAME.qdq.onnx beside NAME.onnx), or None."""
    stem = os.path.splitext(os.path.basename(path))[0]
    candidate = os.path.join(os.path.dirname(path), "int8", stem + ".qdq.onnx")
    return candidate if os.path.exists(candidate) else None


# Run by Model.time_ort_new_process: argv = model, intra-op threads, then input name / .npy pairs.
ORT_NEW_PROCESS = r"""
import sys, time
import numpy as np
import onnxruntime
path, threads = sys.argv[1], int(sys.argv[2])
feeds = {sys.argv[i]: np.load(sys.argv[i + 1]) for i in range(3, len(sys.argv), 2)}
start = time.perf_counter()
options = onnxruntime.SessionOptions()
if threads:
    options.intra_op_num_threads = threads
session = onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])
session.run(None, feeds)
print((time.perf_counter() - start) * 1000.0)
"""


class Model:
    """One model under test: its onnxruntime session and the input both runtimes get."""

    def __init__(self, name: str, path: str, ort_threads: int, tmp_dir: str):
        self.name, self.path, self.ort_threads = name, path, ort_threads
        self.session = ort_session(path, ort_threads)
        # Inputs: NAME.input.<input>.npy or NAME.c0.in.<input>.npy (the first golden case) for
        # each model input, else NAME.input.npy / NAME.dog.input.npy for the first, else seeded
        # N(0,1) data.
        self.feeds, self.input_paths = {}, {}
        stem = os.path.splitext(path)[0]
        for k, spec in enumerate(self.session.get_inputs()):
            own = next((f for f in (f"{stem}.input.{spec.name}.npy", f"{stem}.c0.in.{spec.name}.npy")
                        if os.path.exists(f)), None)
            file = own or (find_input(path) if k == 0 else None)
            if file:
                value = np.load(file)
            else:
                shape = [d if isinstance(d, int) else 1 for d in spec.shape]
                value = np.random.default_rng(k).standard_normal(shape, dtype=np.float32)
                file = os.path.join(tmp_dir, f"{name}.random.input{k}.npy")
                np.save(file, value)
            self.feeds[spec.name] = value
            self.input_paths[spec.name] = file
        self.input_name = self.session.get_inputs()[0].name
        self.input_path = self.input_paths[self.input_name]

    def reference(self) -> dict:
        """onnxruntime's outputs for the benchmark input, by output name."""
        names = [o.name for o in self.session.get_outputs()]
        return dict(zip(names, self.session.run(None, self.feeds)))

    def time_ort_process(self) -> float:
        """ms for what a process that runs the model once pays in onnxruntime: a new
        InferenceSession (load, optimize, weight prepacking) and its first run."""
        start = time.perf_counter()
        session = ort_session(self.path, self.ort_threads)
        session.run(None, self.feeds)
        return (time.perf_counter() - start) * 1000.0

    def time_ort_new_process(self) -> float:
        """ms for a new InferenceSession and its first run in a new Python process, timed inside
        it after `import onnxruntime` (the interpreter's start-up and the import not counted)."""
        feeds = [x for name, path in self.input_paths.items() for x in (name, path)]
        done = subprocess.run([sys.executable, "-c", ORT_NEW_PROCESS, self.path, str(self.ort_threads)] + feeds,
                              capture_output=True, text=True, timeout=600, check=True)
        return float(done.stdout.strip().splitlines()[-1])

    def time_ort(self, iterations: int, warmup: int) -> list:
        feeds = self.feeds
        for _ in range(warmup):
            self.session.run(None, feeds)
        times = []
        for _ in range(iterations):
            start = time.perf_counter()
            self.session.run(None, feeds)
            times.append((time.perf_counter() - start) * 1000.0)
        return times


def measure(args, models: list, tmp_dir: str) -> list:
    results = []
    tuning_cache = os.path.join(tmp_dir, "tuning.tsv")
    for name, path in models:
        entry = {"model": name, "path": path, "rounds": [], "quantized": is_quantized(path)}
        if not os.path.exists(path):
            entry["error"] = f"{path} not found"
        else:
            loaded = attempt(Model, name, path, args.ort_threads, tmp_dir)
            if "error" in loaded:
                entry["ort_error"] = loaded["error"]
            model = entry["handle"] = loaded.get("result")
            entry["input"] = model.input_path if model else None
            # Without a session there is no input to share; ocl-infer then uses random data.
            entry["cli_input"] = [a for n, f in model.input_paths.items() for a in ("--input", f"{n}={f}")] \
                if model else []
            quantized = int8_companion(path) if args.int8 else None
            if quantized:
                loaded = attempt(Model, name + ".qdq", quantized, args.ort_threads, tmp_dir)
                entry["int8_path"] = quantized
                entry["int8_handle"] = loaded.get("result")
                entry["int8_ort_error"] = loaded.get("error")
                entry["int8_cli_input"] = [a for n, f in entry["int8_handle"].input_paths.items()
                                           for a in ("--input", f"{n}={f}")] if entry["int8_handle"] else []
        results.append(entry)

    if args.tune:
        for entry in results:
            if "error" in entry:
                continue
            start = time.time()
            entry["tune"] = attempt(run_cli, args.ocl_infer,
                                    ["tune", entry["path"]] + entry["cli_input"]
                                    + ["--tuning-cache", tuning_cache, "--json"], args.timeout * 10)
            entry["tune_s"] = time.time() - start
            print(f"tuned {entry['model']} in {entry['tune_s']:.0f} s", file=sys.stderr, flush=True)

    bench = ["--bench", "--iterations", str(args.iterations), "--warmup", str(args.warmup),
             "--json", "--tuning-cache", "off"]
    tuned_bench = bench[:-1] + [tuning_cache]
    out_dir = os.path.join(tmp_dir, "process-outputs")
    if not args.no_prime:
        prime(args, results, bench, tuned_bench, out_dir)
    for round_index in range(args.rounds):
        for entry in results:
            if "error" in entry:
                continue
            model, int8_model = entry["handle"], entry.get("int8_handle")

            def cli(cli_args):
                return lambda: run_cli(args.ocl_infer, cli_args, args.timeout)

            def ort_latency(m, error):
                if m is None:
                    return lambda: (_ for _ in ()).throw(RuntimeError(error))
                return lambda: m.time_ort(args.iterations, args.warmup)

            plain = [entry["path"]] + entry["cli_input"]
            configurations = [
                ("ort", ort_latency(model, entry.get("ort_error"))),
                ("ocl", cli(plain + bench)),
                ("ocl_O0", cli(plain + bench + ["-O0"])),
            ]
            if args.tune:
                configurations.append(("ocl_tuned", cli(plain + tuned_bench)))
            if args.keep_warm_off:
                configurations.append(("ocl_cold_workers", cli(plain + bench + ["--keep-warm", "0"])))
            if args.fp16:
                configurations.append(("ocl_fp16", cli(plain + bench + ["--precision", "fp16"])))
            if "int8_path" in entry:
                configurations.append(("ort_int8", ort_latency(int8_model, entry["int8_ort_error"])))
                configurations.append(("ocl_int8", cli([entry["int8_path"]] + entry["int8_cli_input"] + bench)))
            if args.process:
                # One whole process as a user runs it (reads the inputs, writes the outputs); against
                # it, onnxruntime's new session and first run (no Python start-up or import).
                # Three of each per round (one process alone varied 2x on the VM here); the round
                # takes their median.
                # With the user's defaults, not this shell's OCL_INFER_COMPILE_HELPERS=0 (exported
                # for the steady state): a warm process loads the kernel bundle's binary that a
                # background helper stored after an earlier run, where without helpers it builds the
                # bundle from source again (lstm_classifier 70 against 42 ms a process on the 2-core
                # Xeon). Two untimed processes first, each one's helpers waited for: after runs
                # without helpers, the first process's helper compiles the plan's kernels into the
                # ledger, the second's stores the bundle's binary, the third loads it.
                def ocl_process():
                    env = user_env()
                    for _ in range(2):
                        time_cli_process(args.ocl_infer, plain + ["--output-dir", out_dir], args.timeout, env)
                        wait_for_helpers(timeout=120)
                    return [statistics.median(time_cli_process(
                        args.ocl_infer, plain + ["--output-dir", out_dir], args.timeout, env) for _ in range(3))]
                configurations.append(("ocl_process", ocl_process))
                if model is not None:
                    configurations.append(("ort_process", lambda: [statistics.median(
                        model.time_ort_process() for _ in range(3))]))
                    configurations.append(("ort_new_process", lambda: [statistics.median(
                        model.time_ort_new_process() for _ in range(3))]))
            shift = round_index % len(configurations)
            record = {}
            for key, function in configurations[shift:] + configurations[:shift]:
                record[key] = attempt(function)
            entry["rounds"].append(record)
            print(f"round {round_index + 1}/{args.rounds} {entry['model']}: "
                  + ", ".join(f"{k} {short_latency(v)}" for k, v in record.items()),
                  file=sys.stderr, flush=True)

    for entry in results:
        if "error" in entry:
            continue
        path = entry["path"]
        feeds = entry.get("cli_input", [])  # models with open dims need their inputs to plan
        entry["graph"] = attempt(run_cli, args.ocl_infer, [path] + feeds + ["--dump", "graph", "--json"],
                                 args.timeout)
        entry["graph_O0"] = attempt(run_cli, args.ocl_infer,
                                    [path] + feeds + ["--dump", "graph", "--json", "-O0"], args.timeout)
        entry["plan"] = attempt(run_cli, args.ocl_infer, [path] + feeds + ["--dump", "plan", "--json"],
                                args.timeout)
        for graph in ("graph", "graph_O0"):  # the node list is long and in the dump anyway
            if "result" in entry[graph]:
                entry[graph]["result"].pop("nodes", None)
        if "result" in entry["plan"]:
            entry["plan"]["result"].pop("tensors", None)
        for key, flags in (("check", []), ("check_O0", ["-O0"])):
            entry[key] = attempt(check_output, args, entry, tmp_dir, flags)
        if args.fp16:
            entry["check_fp16"] = attempt(check_output, args, entry, tmp_dir, ["--precision", "fp16"],
                                          FP16_TOLERANCE)
        if entry.get("int8_handle"):
            companion = {"handle": entry["int8_handle"], "path": entry["int8_path"],
                         "cli_input": entry["int8_cli_input"], "quantized": True}
            entry["check_int8"] = attempt(check_output, args, companion, tmp_dir, [])
        once = [path] + entry["cli_input"] + ["--bench", "--iterations", "1", "--warmup", "0",
                                               "--json"]
        # The cold starts as a user's first run: one plain process (a benchmark turns first-run
        # kernels off, and its timed run would be a second inference).
        plain_once = [path] + entry["cli_input"] + ["--output-dir", os.path.join(tmp_dir, "cold-outputs")]
        wait_for_helpers(timeout=600)
        entry["cold"] = cold_start(args, plain_once, tmp_dir)
        entry["cold_driver_cached"] = cold_start(args, plain_once, tmp_dir, driver_cache=True)
        entry["warm"] = attempt(run_cli, args.ocl_infer, once, args.timeout)
        print(f"{entry['model']}: graph, plan and start-up measured", file=sys.stderr, flush=True)
    for entry in results:
        entry.pop("handle", None)
        entry.pop("int8_handle", None)
    return results


def prime(args, results: list, bench: list, tuned_bench: list, out_dir: str) -> None:
    """Runs every ocl-infer configuration twice before the timed rounds, then waits for the
    background processes those runs start (compile helpers, PoCL's binary store) to end: the
    rounds then measure warm caches on quiet cores, as a user's second and later runs see them."""
    start = time.time()
    for entry in results:
        if "error" in entry:
            continue
        plain = [entry["path"]] + entry["cli_input"]
        configs = [plain + bench, plain + bench + ["-O0"], plain + ["--output-dir", out_dir]]
        if args.tune:
            configs.append(plain + tuned_bench)
        if args.fp16:
            configs.append(plain + bench + ["--precision", "fp16"])
        if "int8_path" in entry:
            configs.append([entry["int8_path"]] + entry["int8_cli_input"] + bench)
        for cli_args in configs:
            for _ in range(2):
                attempt(run_cli, args.ocl_infer, cli_args, args.timeout, parse=False)
    waited = wait_for_helpers(timeout=600)
    print(f"primed every configuration in {time.time() - start:.0f} s (waited {waited:.0f} s for "
          "background compile processes)", file=sys.stderr, flush=True)


def wait_for_helpers(timeout: float) -> float:
    """Waits until no `ocl-infer --compile-helper` process runs; returns the seconds waited."""
    start = time.time()
    while time.time() - start < timeout:
        busy = False
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    busy |= b"--compile-helper" in f.read()
            except OSError:
                continue
        if not busy:
            break
        time.sleep(0.5)
    return time.time() - start


def check_output(args, entry: dict, tmp_dir: str, flags: list,
                 relative_tolerance: float = None) -> dict:
    """Runs ocl-infer once on the benchmark input and compares every output with onnxruntime's."""
    model = entry["handle"]
    if model is None:
        raise RuntimeError("no onnxruntime session to compare with")
    out_dir = tempfile.mkdtemp(prefix="outputs-", dir=tmp_dir)
    try:
        run_cli(args.ocl_infer, [entry["path"]] + entry["cli_input"] + ["--output-dir", out_dir]
                + flags, args.timeout, parse=False)
        error, scale = 0.0, 0.0
        for name, expected in model.reference().items():
            # ocl-infer's file name for an output: tools/npy.cpp safe_file_name.
            stem = re.sub(r"[^A-Za-z0-9._-]", "_", name)
            stem = "_" + stem if stem in ("", ".", "..") else stem
            got = np.load(os.path.join(out_dir, stem + ".npy"))
            if got.shape != expected.shape:
                raise RuntimeError(f"output {name}: shape {list(got.shape)}, onnxruntime "
                                   f"{list(expected.shape)}")
            diff = np.abs(got.astype(np.float64) - expected.astype(np.float64))
            error = max(error, float(np.nan_to_num(diff, nan=np.inf).max()))
            scale = max(scale, float(np.abs(expected).max()))
        tolerance = (relative_tolerance or OUTPUT_TOLERANCE) * max(1.0, scale)
        if entry.get("quantized"):
            tolerance = max(tolerance, QUANTIZED_STEPS * quantization_step(model.reference()))
        return {"max_abs_error": error, "max_abs_output": scale, "ok": error <= tolerance}
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)


def cold_start(args, cli_args: list, tmp_dir: str, driver_cache: bool = False) -> dict:
    """Runs ocl-infer with an empty kernel cache. Unless driver_cache, the OpenCL driver's own
    cache of built programs is emptied (PoCL) or disabled (NVIDIA) too: otherwise "cold" measures
    loading from it, and how much it holds depends on which builds ran before."""
    cache = tempfile.mkdtemp(prefix="cold-cache-", dir=tmp_dir)
    # A user's first run gets the compile helpers (and with them the first-run kernels' tier-up)
    # whatever this shell set for the timed rounds: OCL_INFER_COMPILE_HELPERS=0 exported for the
    # steady state made this column the cold start without them (3.1-6.7 s against 1.4-2.2 s
    # for the same models as plain CLI processes on a 2-core AMD EPYC Zen 4).
    env = user_env()
    if not driver_cache:
        env["POCL_CACHE_DIR"] = os.path.join(cache, "pocl")
        env["CUDA_CACHE_DISABLE"] = "1"
    try:
        start = time.perf_counter()
        outcome = attempt(run_cli, args.ocl_infer,
                          cli_args + ["--cache-dir", os.path.join(cache, "ocl-infer")],
                          args.timeout, env, parse=False)
        if "result" in outcome:
            outcome["result"] = {"process_ms": (time.perf_counter() - start) * 1000.0}
        return outcome
    finally:
        # A first run with first-run kernels leaves a background process compiling the plan's own
        # kernels into this cache: let it finish before the next measurement.
        wait_for_helpers(timeout=120)
        shutil.rmtree(cache, ignore_errors=True)


def short_latency(outcome: dict) -> str:
    if "error" in outcome:
        return "failed"
    value = outcome["result"]
    median = statistics.median(value) if isinstance(value, list) else value["median_ms"]
    return f"{median:.1f} ms"


def summarize(entry: dict) -> dict:
    """Reduces one model's measurements to the numbers in the tables (None where unknown)."""
    s = {"model": entry["model"], "errors": {}}

    def latency(key: str):
        medians, minima, errors = [], [], []
        for record in entry["rounds"]:
            outcome = record[key]
            if "error" in outcome:
                errors.append(outcome["error"])
            elif isinstance(outcome["result"], list):
                medians.append(statistics.median(outcome["result"]))
                minima.append(min(outcome["result"]))
            else:
                medians.append(outcome["result"]["median_ms"])
                minima.append(outcome["result"]["min_ms"])
        if errors:
            s["errors"][key] = errors[0]
        if not medians:
            return None, None
        return statistics.median(medians), min(minima)

    def round_ratio(key: str, base: str = "ort"):
        """Median over rounds of (this round's `key` median / its `base` median): the two ran
        seconds apart, so a slow spell of a shared host weighs on both."""
        def median_of(outcome):
            value = outcome["result"]
            return value["median_ms"] if isinstance(value, dict) else statistics.median(value)

        ratios = []
        for record in entry["rounds"]:
            mine, other = record.get(key, {}), record.get(base, {})
            if "result" not in mine or "result" not in other or not other["result"]:
                continue
            ratios.append(median_of(mine) / median_of(other))
        return statistics.median(ratios) if ratios else None

    if "error" in entry:
        s["errors"]["model"] = entry["error"]
        return s
    s["ocl_round_ratio"] = round_ratio("ocl")
    s["ocl_tuned_round_ratio"] = round_ratio("ocl_tuned")
    s["ort_ms"], s["ort_min_ms"] = latency("ort")
    s["ocl_ms"], s["ocl_min_ms"] = latency("ocl")
    s["ocl_O0_ms"], s["ocl_O0_min_ms"] = latency("ocl_O0")
    s["ocl_tuned_ms"], s["ocl_tuned_min_ms"] = latency("ocl_tuned") if entry["rounds"] and \
        "ocl_tuned" in entry["rounds"][0] else (None, None)
    s["tune_s"] = entry.get("tune_s")
    s["ocl_cold_workers_ms"], s["ocl_cold_workers_min_ms"] = latency("ocl_cold_workers") \
        if entry["rounds"] and "ocl_cold_workers" in entry["rounds"][0] else (None, None)
    for key in ("ocl_fp16", "ort_int8", "ocl_int8", "ocl_process", "ort_process", "ort_new_process"):
        s[key + "_ms"], s[key + "_min_ms"] = latency(key) \
            if any(key in record for record in entry["rounds"]) else (None, None)
    s["fp16_round_ratio"] = round_ratio("ocl_fp16", "ocl")
    s["int8_round_ratio"] = round_ratio("ocl_int8", "ocl")
    s["int8_ort_round_ratio"] = round_ratio("ocl_int8", "ort_int8")
    s["process_round_ratio"] = round_ratio("ocl_process", "ort_process")
    s["process_new_round_ratio"] = round_ratio("ocl_process", "ort_new_process")
    for key in ("check_fp16", "check_int8"):
        outcome = entry.get(key, {})
        s[key] = outcome.get("result", {}).get("max_abs_error")
        s[key + "_ok"] = outcome.get("result", {}).get("ok")
        if "error" in outcome:
            s["errors"][key] = outcome["error"]
    for key in ("check", "check_O0"):
        outcome = entry[key]
        s[key] = outcome.get("result", {}).get("max_abs_error")
        s[key + "_ok"] = outcome.get("result", {}).get("ok")
        s[key + "_scale"] = outcome.get("result", {}).get("max_abs_output")
    for key in ("graph", "graph_O0", "plan", "cold", "cold_driver_cached", "warm", "check",
                "check_O0"):
        if "error" in entry[key]:
            s["errors"][key] = entry[key]["error"]
    stats = entry["graph"].get("result", {}).get("stats", {})
    stats_O0 = entry["graph_O0"].get("result", {}).get("stats", {})
    s["launches"] = stats.get("kernel_launches")
    s["launches_O0"] = stats_O0.get("kernel_launches")
    s["nodes_before"], s["nodes_after"] = stats.get("nodes_before"), stats.get("nodes_after")
    plan = entry["plan"].get("result", {})
    for key in ("peak_activation_bytes", "naive_activation_bytes", "lower_bound_bytes",
                "weight_bytes"):
        s[key] = plan.get(key)
    for key in ("cold", "cold_driver_cached", "warm"):
        run = entry[key].get("result")
        s[key + "_plan_ms"] = run.get("plan_ms") if run else None
        s[key + "_first_ms"] = run.get("first_inference_ms") if run else None
        s[key + "_process_ms"] = run.get("process_ms") if run else None
    warm = entry["warm"].get("result") or {}
    s["phases"] = {k: warm.get(k) for k in ("load_ms", "graph_ms", "lower_ms", "upload_ms",
                                            "programs_ms", "plan_ms", "first_inference_ms")}
    return s


def fmt(value, digits: int = 1, suffix: str = "") -> str:
    return "–" if value is None else f"{value:.{digits}f}{suffix}"


def ratio(numerator, denominator, suffix: str = "×") -> str:
    if numerator is None or not denominator:
        return "–"
    return f"{numerator / denominator:.2f}{suffix}"


def cell_error(message: str, shown: set = None) -> str:
    """The error for a table cell; only "failed" if this row already shows the same message."""
    if shown is not None:
        if message in shown:
            return "failed"
        shown.add(message)
    message = message.replace("|", "\\|").replace("\n", " ")
    return "**failed**: " + (message if len(message) <= 90 else message[:87] + "...")


def gmean(values: list):
    values = [v for v in values if v]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def render_glance(summaries: list, meta: dict) -> str:
    """One table: steady-state latency, precisions and start-up against onnxruntime, with the
    machine named (what the README shows, between its benchmark markers)."""
    def pair(mine, theirs, r):
        if mine is None:
            return "–"
        text = f"{mine:.1f} / {fmt(theirs)}"
        return text + (f" ({r:.2f}×)" if r else "")

    lines = [
        f"Measured {meta['date']} on {meta['cpu']} ({meta['cpus']} CPUs), ocl-infer on "
        f"{meta['device'] or 'unknown device'}, against onnxruntime {meta['ort_version']} "
        f"(CPU provider, {meta['ort_threads']} intra-op threads), all in one run of "
        f"`{meta['command']}`. Ratios are medians of per-round ratios (below 1: ocl-infer ahead).",
        "",
        "| model | steady state ms: ocl-infer / ORT | fp16 ÷ fp32 | int8 ÷ fp32 | int8: ocl-infer / ORT int8 ms "
        "| warm process ms: ocl-infer / ORT session + first run | ORT session + first run in a new process ms "
        "| first run, empty caches s |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for s in summaries:
        if "model" in s["errors"]:
            lines.append(f"| {s['model']} | {cell_error(s['errors']['model'])} |" + " |" * 6)
            continue
        steady = pair(s.get("ocl_ms"), s.get("ort_ms"), s.get("ocl_round_ratio"))
        if s.get("ocl_ms") is None and "ocl" in s["errors"]:
            steady = cell_error(s["errors"]["ocl"])
        fp16 = fmt(s.get("fp16_round_ratio"), 2, "×")
        int8 = fmt(s.get("int8_round_ratio"), 2, "×")
        int8_ort = pair(s.get("ocl_int8_ms"), s.get("ort_int8_ms"), s.get("int8_ort_round_ratio"))
        process = pair(s.get("ocl_process_ms"), s.get("ort_process_ms"), s.get("process_round_ratio"))
        new_process = "–" if s.get("ort_new_process_ms") is None else fmt(s["ort_new_process_ms"]) + (
            f" ({s['process_new_round_ratio']:.2f}×)" if s.get("process_new_round_ratio") else "")
        cold = s.get("cold_process_ms")
        lines.append(f"| {s['model']} | {steady} | {fp16} | {int8} | {int8_ort} | {process} | {new_process} "
                     f"| {fmt(cold / 1000.0 if cold else None, 2)} |")
    means = []
    for label, key in (("steady state", "ocl_round_ratio"), ("fp16/fp32", "fp16_round_ratio"),
                       ("int8/fp32", "int8_round_ratio"), ("int8/ORT int8", "int8_ort_round_ratio"),
                       ("warm process", "process_round_ratio"),
                       ("warm process vs ORT in a new process", "process_new_round_ratio")):
        values = [s.get(key) for s in summaries if s.get(key)]
        if values:
            means.append(f"{label} {gmean(values):.2f}× ({len(values)} models)")
    if means:
        lines += ["", "Geometric means: " + "; ".join(means) + "."]
    return "\n".join(lines) + "\n"


README_BEGIN = "<!-- benchmark table: generated by tools/benchmark.py --readme; do not edit -->"
README_END = "<!-- end of benchmark table -->"


def update_readme(path: str, glance: str) -> None:
    """Replaces the text between the README's benchmark markers with the table."""
    with open(path) as f:
        text = f.read()
    begin, end = text.find(README_BEGIN), text.find(README_END)
    if begin < 0 or end < begin:
        raise SystemExit(f"benchmark: {path} has no '{README_BEGIN}' ... '{README_END}' markers")
    text = text[:begin + len(README_BEGIN)] + "\n" + glance + text[end:]
    with open(path, "w") as f:
        f.write(text)


def render(summaries: list, meta: dict) -> str:
    lines = [
        f"# ocl-infer vs onnxruntime ({meta['date']})",
        "",
        f"- ocl-infer device: {meta['device'] or 'unknown'}; `{meta['ocl_infer']}` built "
        f"{meta['build_time']}",
        f"- onnxruntime {meta['ort_version']} CPUExecutionProvider, intra-op threads "
        f"{meta['ort_threads']}; Python {meta['python']}",
        f"- host: {meta['cpus']} CPUs ({meta['physical_cores']} physical cores), load average "
        f"{meta['load_before']} before, {meta['load_after']} after",
        f"- {meta['rounds']} interleaved rounds × {meta['iterations']} timed runs after "
        f"{meta['warmup']} warm-up; latency = median of the per-round medians",
    ]
    tuned = any(s.get("ocl_tuned_ms") is not None for s in summaries)
    if meta["rebuilt_during_run"]:
        lines.append("- **warning: ocl-infer or libocl_infer changed during the run; the numbers "
                     "mix two builds**")
    lines += [
        "",
        "| model | ort median ms | ocl-infer median ms | ratio (ocl/ort) | -O0 median ms "
        "| speed-up from optimizer | launches -O0 → -O1 "
        "| peak act MiB / naive MiB / lower bound MiB (peak ÷ bound) "
        "| first inference cold / warm ms (incl. plan) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    notes = []
    for s in summaries:
        e = s["errors"]
        shown = set()
        if "model" in e:
            lines.append(f"| {s['model']} | {cell_error(e['model'])} |" + " |" * 7)
            continue

        def latency(key, error_key, check=None):
            if s[key] is None and error_key in e:
                return cell_error(e[error_key], shown)
            wrong = check and s[check + "_ok"] is False
            return fmt(s[key]) + (" **wrong output**" if wrong else "")

        ort, ocl, ocl_O0 = latency("ort_ms", "ort"), latency("ocl_ms", "ocl", "check"), \
            latency("ocl_O0_ms", "ocl_O0", "check_O0")

        launches = "–"
        if s["launches"] is not None or s["launches_O0"] is not None:
            launches = f"{fmt(s['launches_O0'], 0)} → {fmt(s['launches'], 0)}"
        elif "graph" in e:
            launches = cell_error(e["graph"], shown)
        memory = "–"
        if s["peak_activation_bytes"] is not None:
            memory = (f"{s['peak_activation_bytes'] / MIB:.1f} / "
                      f"{fmt(mib(s['naive_activation_bytes']))} / "
                      f"{fmt(mib(s['lower_bound_bytes']))} "
                      f"({ratio(s['peak_activation_bytes'], s['lower_bound_bytes'])})")
        elif "plan" in e:
            memory = cell_error(e["plan"], shown)

        def startup(key):
            if s[key + "_first_ms"] is None:
                return "failed" if key in e else "–"
            return f"{s[key + '_first_ms']:.0f}"

        first = f"{startup('cold')} / {startup('warm')}"
        lines.append(
            f"| {s['model']} | {ort} | {ocl} | {ratio(s['ocl_ms'], s['ort_ms'])} | {ocl_O0} "
            f"| {ratio(s['ocl_O0_ms'], s['ocl_ms'])} | {launches} | {memory} | {first} |")
        by_message = {}
        for key, message in e.items():
            by_message.setdefault(message, []).append(key)
        for message, keys in by_message.items():
            notes.append(f"- {s['model']} ({', '.join(keys)}): {message}")
        for key, flag in (("check", "-O1"), ("check_O0", "-O0")):
            if s[key + "_ok"] is False:
                notes.append(f"- {s['model']}: ocl-infer {flag} output differs from onnxruntime "
                             f"by {s[key]:.3g} (max |output| {s[key + '_scale']:.3g}); its "
                             "latency is not meaningful")

    if tuned:
        lines += ["", "Tuned (`ocl-infer tune` first, then the same runs with its tuning cache):", "",
                  "| model | ort median ms | heuristic median ms | tuned median ms | ratio tuned/ort "
                  "| tuner gain (heuristic/tuned) | tuning time s |",
                  "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for s in summaries:
            if "model" in s["errors"]:
                continue
            lines.append(f"| {s['model']} | {fmt(s['ort_ms'])} | {fmt(s['ocl_ms'])} "
                         f"| {fmt(s['ocl_tuned_ms'])} | {ratio(s['ocl_tuned_ms'], s['ort_ms'])} "
                         f"| {ratio(s['ocl_ms'], s['ocl_tuned_ms'])} | {fmt(s['tune_s'], 0)} |")
        geo = [(s["ocl_ms"], s["ocl_tuned_ms"], s["ort_ms"]) for s in summaries
               if s.get("ocl_tuned_ms") and s.get("ocl_ms") and s.get("ort_ms")]
        if geo:
            def gmean(values):
                return math.exp(sum(math.log(v) for v in values) / len(values))
            lines += ["", f"Geometric means over {len(geo)} models: ocl-infer/ort "
                      f"{gmean([h / o for h, _, o in geo]):.2f}× heuristic, "
                      f"{gmean([t / o for _, t, o in geo]):.2f}× tuned."]
            paired = [(s["ocl_round_ratio"], s["ocl_tuned_round_ratio"]) for s in summaries
                      if s.get("ocl_round_ratio") and s.get("ocl_tuned_round_ratio")]
            if paired:
                lines += ["", "Per-round ratios (each round's ocl-infer median over the onnxruntime median "
                          "measured seconds before or after it; median over rounds), by model: "
                          + ", ".join(f"{s['model']} {s['ocl_round_ratio']:.2f}× / "
                                      f"{s['ocl_tuned_round_ratio']:.2f}× tuned"
                                      for s in summaries if s.get("ocl_round_ratio")
                                      and s.get("ocl_tuned_round_ratio"))
                          + f"; geometric means over {len(paired)} models "
                          f"{gmean([h for h, _ in paired]):.2f}× heuristic, "
                          f"{gmean([t for _, t in paired]):.2f}× tuned."]
    if any(s.get("ocl_cold_workers_ms") is not None for s in summaries):
        lines += ["", "Keep-warm (idle-worker markers, the default on CPU devices) against `--keep-warm 0`, "
                  "heuristic kernels:", "",
                  "| model | ort median ms | keep-warm median / min ms | --keep-warm 0 median / min ms "
                  "| gain (median) | ratio to ort without it |",
                  "| --- | ---: | ---: | ---: | ---: | ---: |"]
        for s in summaries:
            if "model" in s["errors"]:
                continue
            lines.append(f"| {s['model']} | {fmt(s['ort_ms'])} | {fmt(s['ocl_ms'])} / {fmt(s['ocl_min_ms'])} "
                         f"| {fmt(s['ocl_cold_workers_ms'])} / {fmt(s['ocl_cold_workers_min_ms'])} "
                         f"| {ratio(s['ocl_cold_workers_ms'], s['ocl_ms'])} "
                         f"| {ratio(s['ocl_cold_workers_ms'], s['ort_ms'])} |")
    lines += ["", "Details (ms unless noted; \"first\" includes \"plan\"):", "",
              "| model | ort min | ocl-infer min | -O0 min | max abs error vs ort -O1 / -O0 "
              "| nodes → optimized | weights MiB "
              "| cold plan / first | only ocl-infer's cache cold: plan / first "
              "| warm plan / first |",
              "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for s in summaries:
        if "model" in s["errors"]:
            continue
        lines.append(
            f"| {s['model']} | {fmt(s['ort_min_ms'])} | {fmt(s['ocl_min_ms'])} "
            f"| {fmt(s['ocl_O0_min_ms'])} | {error_cell(s['check'])} / "
            f"{error_cell(s['check_O0'])} | {fmt(s['nodes_before'], 0)} → "
            f"{fmt(s['nodes_after'], 0)} | {fmt(mib(s['weight_bytes']))} "
            f"| {fmt(s['cold_plan_ms'], 0)} / {fmt(s['cold_first_ms'], 0)} "
            f"| {fmt(s['cold_driver_cached_plan_ms'], 0)} / "
            f"{fmt(s['cold_driver_cached_first_ms'], 0)} "
            f"| {fmt(s['warm_plan_ms'], 0)} / {fmt(s['warm_first_ms'], 0)} |")
    if notes:
        lines += ["", "Errors:", ""] + notes
    return "\n".join(lines) + "\n"


def build_stamp(binary: str) -> dict:
    """Modification times of the CLI and the libocl_infer it loads from its own folder, so that a
    rebuild in the middle of a run (the numbers would mix two builds) can be detected."""
    folder = os.path.dirname(os.path.abspath(binary))
    paths = [binary] + sorted(os.path.join(folder, f) for f in os.listdir(folder)
                              if f.startswith("libocl_infer.so")) if os.path.isdir(folder) else []
    return {os.path.basename(p): os.stat(p).st_mtime for p in paths if os.path.exists(p)}


def error_cell(value) -> str:
    return "–" if value is None else f"{value:.1e}"


def mib(value):
    return None if value is None else value / MIB


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+",
                        help="model names in --models-dir or .onnx paths (default: those of "
                             f"{', '.join(DEFAULT_MODELS)} that exist)")
    parser.add_argument("--models-dir", default=os.path.join(REPO_ROOT, "build", "models"),
                        help="where model names are looked up (default build/models)")
    parser.add_argument("--ocl-infer", default=os.path.join(REPO_ROOT, "build", "ocl-infer"),
                        help="the CLI binary (default build/ocl-infer)")
    parser.add_argument("--iterations", type=int, default=20,
                        help="timed runs per round (default 20)")
    # Ten: each ocl-infer configuration is a new process whose first ~10 runs after planning were
    # up to 2x slower on the 2-core AMD EPYC Zen 5 development VM (its kernels, not the host: the second core
    # seems to need ~0.1 s of load to reach full speed), while onnxruntime's session lives in this
    # busy process.
    parser.add_argument("--warmup", type=int, default=10, help="untimed runs per round (default 10)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default 3)")
    parser.add_argument("--ort-threads", type=int, default=0,
                        help="onnxruntime intra-op threads (default 0: its own default)")
    parser.add_argument("--timeout", type=float, default=600,
                        help="seconds per ocl-infer run (default 600)")
    parser.add_argument("--tune", action="store_true",
                        help="also tune each model (ocl-infer tune) and measure the tuned runs")
    parser.add_argument("--keep-warm-off", action="store_true",
                        help="also measure each model with --keep-warm 0 (no idle-worker markers)")
    parser.add_argument("--fp16", action="store_true",
                        help="also measure --precision fp16 (and check its outputs)")
    parser.add_argument("--int8", action="store_true",
                        help="also measure the quantized version of each model (int8/NAME.qdq.onnx "
                             "beside it, from models/export_quantized.py) in both runtimes")
    parser.add_argument("--process", action="store_true",
                        help="also time whole warm ocl-infer processes against a new onnxruntime "
                             "session and its first run")
    parser.add_argument("--all", action="store_true", help="--fp16 --int8 --process")
    parser.add_argument("--no-prime", action="store_true",
                        help="skip the two untimed runs of every configuration before the rounds")
    parser.add_argument("--readme", metavar="README.md",
                        help="write the summary table between the benchmark markers of this file")
    parser.add_argument("--out", help="also write the table to this .md file and the raw "
                                      "measurements to the same name with .json")
    args = parser.parse_args()
    if args.all:
        args.fp16 = args.int8 = args.process = True
    if args.iterations < 1 or args.warmup < 0 or args.rounds < 1:
        parser.error("--iterations and --rounds must be at least 1, --warmup at least 0")

    import onnxruntime

    if args.models:
        models = [resolve_model(spec, args.models_dir) for spec in args.models]
    else:
        models = [resolve_model(name, args.models_dir) for name in DEFAULT_MODELS
                  if os.path.exists(os.path.join(args.models_dir, name + ".onnx"))]
        if not models:
            sys.exit(f"benchmark: no models in {args.models_dir}; run models/make_all.sh "
                     "(--extra for the bigger ones)")
    if not os.access(args.ocl_infer, os.X_OK):
        print(f"benchmark: {args.ocl_infer} is missing; only onnxruntime is measured",
              file=sys.stderr)

    cores = physical_cores()
    meta = {
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "ocl_infer": os.path.relpath(args.ocl_infer),
        "ort_version": onnxruntime.__version__,
        "ort_threads": args.ort_threads or f"default (0 = one per physical core, {cores})",
        "python": platform.python_version(),
        "cpu": cpu_name(),
        "command": " ".join(["tools/benchmark.py"] + [a for a in sys.argv[1:]]),
        "cpus": os.cpu_count(),
        "physical_cores": cores,
        "pocl_max_pthread_count": os.environ.get("POCL_MAX_PTHREAD_COUNT"),
        "load_before": " ".join(f"{x:.2f}" for x in os.getloadavg()),
        "iterations": args.iterations, "warmup": args.warmup, "rounds": args.rounds,
    }
    stamp = build_stamp(args.ocl_infer)
    meta["build_time"] = time.strftime("%Y-%m-%d %H:%M:%S",
                                       time.localtime(max(stamp.values()))) if stamp else None
    with tempfile.TemporaryDirectory(prefix="ocl-infer-bench-") as tmp_dir:
        results = measure(args, models, tmp_dir)
    meta["rebuilt_during_run"] = build_stamp(args.ocl_infer) != stamp
    meta["load_after"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    meta["device"] = next((r["result"]["device"] for e in results for rd in e["rounds"]
                           for r in [rd.get("ocl", {})] if "result" in r), None)
    summaries = [summarize(entry) for entry in results]
    glance = render_glance(summaries, meta)
    table = glance + "\n" + render(summaries, meta)
    print(table, end="", flush=True)
    if args.readme:
        update_readme(args.readme, glance)
        print(f"benchmark: updated the table in {args.readme}", file=sys.stderr)
    if args.out:
        with open(args.out, "w") as f:
            f.write(table)
        raw = os.path.splitext(args.out)[0] + ".json"
        with open(raw, "w") as f:
            json.dump({"meta": meta, "summary": summaries, "runs": results}, f, indent=1)
        print(f"benchmark: wrote {args.out} and {raw}", file=sys.stderr)


if __name__ == "__main__":
    main()
