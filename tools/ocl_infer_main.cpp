// ocl-infer: classify images or run a model on raw tensors, using only the public API.
#include <malloc.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <random>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <numeric>
#include <set>
#include <sstream>

#include "ocl_infer/ocl_infer.hpp"
#include "tools/cli_io.hpp"
#include "tools/cli_parse.hpp"
#include "tools/detect.hpp"
#include "tools/precision_check.hpp"
#include "tools/quantize_cli.hpp"
#include "tools/profile_report.hpp"

namespace {

using ocl_infer::DType;
using ocl_infer::Tensor;

const char* kUsage = R"(usage:
  ocl-infer MODEL.onnx IMAGE [IMAGE ...] [options]     classify images, print the top classes
  ocl-infer MODEL.onnx PHOTO [PHOTO ...] --task detect [options]
                                                      detect objects: class, score and box (x1 y1
                                                      x2 y2, photo pixels) of each, per photo
  ocl-infer MODEL.onnx --input NAME=FILE ... --output-dir DIR
                                                      run on .npy / TensorProto .pb tensors and
                                                      write every output to DIR/<name>.npy
                                                      (--input FILE: the model's only input)
  ocl-infer tune MODEL.onnx [--budget S] [--input [NAME=]FILE ... | IMAGE] [options]
                                                      measure the kernel variants of every conv,
                                                      gemm, pool and norm problem of the model on
                                                      this device and save the fastest to the
                                                      tuning cache (later runs use them)
  ocl-infer quantize MODEL.onnx --calibration DIR -o OUT.onnx [options]
                                                      write an int8 QDQ model calibrated on the
                                                      images in DIR (ocl-infer quantize --help)
  ocl-infer --list-devices
  ocl-infer --list-variants                           kernel variants and their parameters
  ocl-infer --list-ops [--json | --markdown]          every supported operator: domain, opset
                                                      versions, float16 storage, how it runs
                                                      (--markdown writes docs/operators.md)

A first argument that is exactly "tune" or "quantize" is the subcommand; to run a model file of
that name, write ./tune or ./quantize.

options:
  --device INDEX|NAME   OpenCL device (default: first GPU/accelerator, else the CPU device)
  --labels FILE         class names, one per line (default: imagenet_labels.txt beside the model;
                        with --task detect: MODEL.labels.txt, else coco.names beside the model;
                        else class indices)
  --top K               number of classes to print (default 5)
  --json                machine-readable output
  --size N              resize the shorter image side to N (default 256, or crop x 256/224 where the
                        crop is larger; 0 = no resize)
  --crop N              centre crop N x N (default: the model's input size)
  --mean R,G,B          per-channel mean after scaling (default 0.485,0.456,0.406)
  --std R,G,B           per-channel std (default 0.229,0.224,0.225)
  --scale S             pixel scale before mean/std (default 1/255)
  --bgr                 feed channels in BGR order
  --layout nchw|nhwc    input layout (default nchw)

object detection:
  --task classify|detect  what to do with photos (default: detect where the outputs are plainly a
                        detector's -- named boxes/scores/labels, or one [1,4+C,N] / [1,N,5+C] tensor
                        with more boxes than channels -- or a detection flag is given, else classify)
  The photo is letterboxed into the model's input (aspect kept, grey 114 border, pixel/255, no
  mean/std unless --mean/--std are given). A model with an open input size gets the photo scaled so
  that its longer side is --size N (default 320), padded to multiples of 32 for YOLO heads. Outputs
  read: boxes [N,4] + scores [N] + labels [N] (the model's own NMS, as torchvision exports; only
  --conf and --max-det apply), one [1,4+C,N] tensor (YOLOv8: cx,cy,w,h, C class scores) or one
  [1,N,5+C] tensor (YOLOv5: cx,cy,w,h, objectness, C class scores; score = objectness x class);
  the shorter of the last two axes is the channel axis. For the YOLO layouts each box takes its
  best class, and NMS runs on the host in the CLI (greedy, class-aware, by score), not on the
  device. Boxes are mapped back to photo pixels and clipped to the photo.
  --conf C              keep scores above C (default 0.25)
  --iou T               NMS: drop a box overlapping a better one of its class with IoU above T
                        (default 0.45)
  --max-det K           keep at most K detections per photo (default 100)
  --draw OUT.png        write the photo with the boxes and "label score" drawn (several photos:
                        OUT-1.png, OUT-2.png, ...)
  with --json:          {"device", "results": [{"image", "width", "height", "input": [w, h],
                        "layout", "detections": [{"index", "label", "score", "box": [x1, y1, x2,
                        y2]}...]}...]}
  --precision int8 applies to models that are already quantized (calibrating here would use the
  classification preprocessing).

  --dump graph|plan     print a pipeline stage after planning (with --json: as JSON)
  -O0                   run without the graph optimizer
  --disable-pass NAME   skip one optimizer pass (remove_identity, dedupe_constants,
                        fuse_qdq, cancel_transposes, fold_pad, fold_batchnorm, fuse_layernorm,
                        fuse_attention, fuse_matmul_bias, fuse_residual, fuse_activation,
                        fuse_channel_scale, fuse_plane_mean); repeatable
  --no-memory-plan      give every activation its own buffer instead of one planned arena
  --variant FAMILY=VARIANT[:PARAM=VALUE,...]
                        force a kernel variant where it applies (see --list-variants);
                        repeatable; default: $OCL_INFER_VARIANT, else chosen per device
  --check-precision fp16  run in fp32 and in fp16 on the same inputs (--input files, the first
                        image, or random data) and compare every executed node's output: max abs
                        and relative error, cosine; flags nodes above --threshold (default 1e-2)
  --precision fp32|fp16|int8 storage of the tensors inside the model (fp16: half the memory and
                        bytes moved; arithmetic and accumulation stay fp32; default fp32).
                        int8: a quantized (QDQ / QOperator) model runs in int8 anyway; an fp32
                        model is first quantized in memory as `ocl-infer quantize` would, on the
                        images of --calibration DIR (with --max-images, --method, --per-tensor,
                        --exclude as there)
  --fp32-ops OP,...     with fp16: keep these op types' tensors in fp32 (e.g. Softmax)
  --max-memory BYTES    memory the session may use, e.g. 2G (default: the device's global memory,
                        or what the host can still give this process when that is less)
  --fetch NAME,...|all  with --input and --output-dir: also write these intermediate values
                        (names from --dump graph; all = every value an executed node writes)

profiling and benchmarking (inputs: --input files, the first image, or random data):
  --profile             per-kernel table from OpenCL events, slowest first
  --profile-order exec  list kernels in execution order instead
  --profile-json FILE   one record per kernel launch (schema in README.md)
  --profile-csv FILE    the same as CSV
  --profile-trace FILE  Chrome trace-event JSON (open in Perfetto or chrome://tracing)
  --profile-html FILE   self-contained HTML report with charts
  --bench               latency min/median/p90/max and throughput (with --json: machine-readable)
  --iterations N        measured runs (default 10 for --profile, 50 for --bench)
  --duration S          --bench: run for S seconds instead of N iterations
  --warmup W            unmeasured runs first (default 3)
  --output-dir DIR      also write the first run's outputs to DIR/<name>.npy
  --batch B             batch size for random inputs whose first dim is open (default 1)
  --cache-dir DIR|off   compiled-kernel cache (default ~/.cache/ocl-infer)
  --tune                tune while planning (as `ocl-infer tune`), then run as asked
  --budget S            with tune / --tune: stop measuring new problems after S seconds
  --tuning-cache FILE|off  tuned results (default: $OCL_INFER_TUNING_CACHE, else tuning.tsv
                        in the kernel cache directory); used whenever they match the device,
                        driver and kernel sources
  --keep-warm auto|spin|off|N  keep a CPU driver's worker threads busy between kernels
                        instead of asleep: spin = a one-work-item kernel before each kernel
                        that returns when that kernel starts; N = N empty markers per kernel
                        launch; auto (default, or $OCL_INFER_KEEP_WARM) = the spinner on CPU
                        devices with 2+ compute units, tried against none on the first runs
  --verbose             progress and timings on stderr
  --version, --help
)";

using cli::UsageError;
using cli::parse_floats3;
using cli::parse_int;

const char* precision_name(ocl_infer::Precision p) { return p == ocl_infer::Precision::Float16 ? "fp16" : "fp32"; }

struct Args {
  std::string model;
  std::vector<std::string> images;
  std::vector<std::pair<std::string, std::string>> inputs;
  std::string output_dir, device, labels, dump, cache_dir;
  int top = 5;
  bool json = false, list_devices = false, list_variants = false, list_ops = false, markdown = false,
       verbose = false;
  std::string variants;             // --variant, joined with ';'
  bool tune_command = false;        // ocl-infer tune MODEL
  bool tune = false;                // tune / --tune
  double budget = 0;                // --budget seconds (0: none)
  std::string tuning_cache;         // --tuning-cache
  std::vector<std::string> fetch;   // --fetch
  uint64_t max_memory = 0;          // --max-memory, 0: the default
  ocl_infer::Precision precision = ocl_infer::Precision::Float32;
  std::vector<std::string> fp32_ops;
  bool check_precision = false;     // --check-precision fp16
  bool int8 = false;                // --precision int8
  cli::QuantizeArgs quant;          // its calibration (--calibration DIR, ...)
  double threshold = 1e-2;          // --threshold
  bool crop_given = false;
  bool detect = false;              // --task detect
  bool task_given = false;          // --task given (else a plain detector's photos are detected)
  bool detect_flags = false;        // --conf, --iou, --max-det or --draw given
  bool top_given = false, size_given = false, mean_given = false, std_given = false;
  cli::DetectionParams det;
  std::string draw;                 // --draw OUT.png
  cli::Preprocess pre;
  int opt_level = 1;
  std::vector<std::string> disabled_passes;
  bool plan_memory = true;
  bool profile = false, profile_exec_order = false, bench = false;
  std::string profile_json, profile_csv, profile_trace, profile_html;
  int iterations = -1, warmup = 3, batch = 1, keep_warm = -1;
  double duration = 0;
  bool measuring() const {
    return profile || bench || !profile_json.empty() || !profile_csv.empty() || !profile_trace.empty() ||
           !profile_html.empty();
  }
};

// "4096", "512K", "1.5G" -> bytes (K, M, G, T are powers of 1024).
uint64_t parse_bytes(const std::string& flag, const std::string& v) {
  char* end = nullptr;
  const double x = std::strtod(v.c_str(), &end);
  double scale = 1;
  std::string unit = end ? std::string(end) : "";
  if (unit == "K" || unit == "k") scale = 1024.0;
  else if (unit == "M" || unit == "m") scale = 1024.0 * 1024;
  else if (unit == "G" || unit == "g") scale = 1024.0 * 1024 * 1024;
  else if (unit == "T" || unit == "t") scale = 1024.0 * 1024 * 1024 * 1024;
  else if (!unit.empty()) throw UsageError(flag + " takes bytes with an optional K/M/G/T suffix, got '" + v + "'");
  if (v.empty() || end == v.c_str() || !(x > 0) || x * scale > 1.8e19)
    throw UsageError(flag + " takes a positive number of bytes with an optional K/M/G/T suffix, got '" + v + "'");
  return static_cast<uint64_t>(x * scale);
}

Args parse(int argc, char** argv) {
  Args a;
  int first = 1;
  if (argc > 1 && std::string(argv[1]) == "tune") {
    a.tune_command = a.tune = true;
    first = 2;
  }
  for (int i = first; i < argc; ++i) {
    std::string s = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw UsageError(s + " needs a value");
      return argv[++i];
    };
    if (s == "--help" || s == "-h") {
      std::cout << kUsage;
      std::exit(0);
    } else if (s == "--version") {
      std::cout << "ocl-infer " << ocl_infer::version() << "\n";
      std::exit(0);
    } else if (s == "--list-devices") a.list_devices = true;
    else if (s == "--list-variants") a.list_variants = true;
    else if (s == "--list-ops") a.list_ops = true;
    else if (s == "--markdown") a.markdown = true;
    else if (s == "--max-memory") a.max_memory = parse_bytes(s, value());
    else if (s == "--check-precision") {
      const std::string v = value();
      if (v != "fp16") throw UsageError("--check-precision takes fp16 (the precision compared with fp32), got '" + v + "'");
      a.check_precision = true;
    } else if (s == "--threshold") {
      char* end = nullptr;
      const std::string v = value();
      a.threshold = std::strtod(v.c_str(), &end);
      if (v.empty() || *end || !(a.threshold > 0)) throw UsageError("--threshold takes a positive number, got '" + v + "'");
    } else if (s == "--precision") {
      const std::string v = value();
      if (v == "fp32") a.precision = ocl_infer::Precision::Float32;
      else if (v == "fp16") a.precision = ocl_infer::Precision::Float16;
      else if (v == "int8") a.int8 = true;
      else throw UsageError("--precision must be fp32, fp16 or int8, got '" + v + "'");
    } else if (s == "--fp32-ops") {
      const auto known = ocl_infer::supported_operators();
      std::stringstream ss(value());
      for (std::string op; std::getline(ss, op, ',');) {
        if (op.empty()) continue;
        if (!std::binary_search(known.begin(), known.end(), op))
          throw UsageError("--fp32-ops: '" + op + "' is not an operator ocl-infer implements");
        a.fp32_ops.push_back(op);
      }
    }
    else if (s == "--variant") {
      std::string v = value();
      if (v.find('=') == std::string::npos) throw UsageError("--variant takes FAMILY=VARIANT[:PARAM=VALUE,...], got '" + v + "'");
      a.variants += (a.variants.empty() ? "" : ";") + v;
    } else if (s == "--fetch") {
      std::stringstream ss(value());
      for (std::string item; std::getline(ss, item, ',');)
        if (!item.empty()) a.fetch.push_back(item == "all" ? "*" : item);
      if (a.fetch.empty()) throw UsageError("--fetch needs value names or 'all'");
    }
    else if (s == "--device") a.device = value();
    else if (s == "--input") {
      // NAME=FILE, or FILE alone for a model with one input (the name is looked up once the
      // model is loaded). A FILE that exists as given is taken whole even if it holds a '='.
      std::string v = value();
      const auto eq = v.find('=');
      if (eq == std::string::npos || access(v.c_str(), F_OK) == 0) a.inputs.push_back({"", v});
      else if (eq == 0 || eq + 1 == v.size()) throw UsageError("--input takes NAME=FILE or FILE, got '" + v + "'");
      else a.inputs.push_back({v.substr(0, eq), v.substr(eq + 1)});
    } else if (s == "--output-dir") a.output_dir = value();
    else if (s == "--labels") a.labels = value();
    else if (s == "--top") a.top = parse_int(s, value(), 1, 100000), a.top_given = true;
    else if (s == "--task") {
      const std::string v = value();
      if (v != "classify" && v != "detect") throw UsageError("--task must be classify or detect, got '" + v + "'");
      a.detect = v == "detect";
      a.task_given = true;
    } else if (s == "--conf" || s == "--iou") {
      const std::string v = value();
      char* end = nullptr;
      const float f = std::strtof(v.c_str(), &end);
      if (v.empty() || *end || !(f >= 0 && f <= 1)) throw UsageError(s + " needs a number in [0, 1], got '" + v + "'");
      (s == "--conf" ? a.det.conf : a.det.iou) = f;
      a.detect_flags = true;
    } else if (s == "--max-det") a.det.max_det = parse_int(s, value(), 1, 100000), a.detect_flags = true;
    else if (s == "--draw") {
      a.draw = value();
      if (a.draw.empty()) throw UsageError("--draw needs a file name");
      a.detect_flags = true;
    }
    else if (s == "--json") a.json = true;
    else if (cli::parse_preprocess_flag(s, value, a.pre, &a.crop_given) || cli::parse_quantize_flag(s, value, a.quant)) {
      // --task detect has its own defaults for these, unless given.
      a.size_given |= s == "--size";
      a.mean_given |= s == "--mean";
      a.std_given |= s == "--std";
    } else if (s == "--dump") {
      a.dump = value();
      if (a.dump != "graph" && a.dump != "plan") throw UsageError("--dump must be graph or plan");
    } else if (s == "--cache-dir") a.cache_dir = value();
    else if (s == "-O0" || s == "-O1") a.opt_level = s == "-O0" ? 0 : 1;
    else if (s == "--disable-pass") a.disabled_passes.push_back(value());
    else if (s == "--no-memory-plan") a.plan_memory = false;
    else if (s == "--profile") a.profile = true;
    else if (s == "--profile-order") {
      std::string v = value();
      if (v != "exec" && v != "time") throw UsageError("--profile-order must be exec or time");
      a.profile_exec_order = v == "exec";
      a.profile = true;
    } else if (s == "--profile-json") a.profile_json = value();
    else if (s == "--profile-csv") a.profile_csv = value();
    else if (s == "--profile-trace") a.profile_trace = value();
    else if (s == "--profile-html") a.profile_html = value();
    else if (s == "--bench") a.bench = true;
    else if (s == "--iterations") a.iterations = parse_int(s, value(), 1, 100000000);
    else if (s == "--warmup") a.warmup = parse_int(s, value(), 0, 1000000);
    else if (s == "--batch") a.batch = parse_int(s, value(), 1, 65536);
    else if (s == "--duration") {
      std::string v = value();
      char* end = nullptr;
      a.duration = std::strtod(v.c_str(), &end);
      if (v.empty() || *end || !(a.duration > 0) || a.duration > 86400)
        throw UsageError("--duration needs a number of seconds in (0, 86400], got '" + v + "'");
    }
    else if (s == "--tune") a.tune = true;
    else if (s == "--keep-warm") {
      const std::string v = value();
      a.keep_warm = v == "auto" ? -1 : v == "spin" ? ocl_infer::kKeepWarmSpin : v == "off" ? 0 : -3;
      if (a.keep_warm == -3) {
        char* end = nullptr;
        const long n = std::strtol(v.c_str(), &end, 10);
        if (v.empty() || *end || n < 0 || n > 1000)
          throw UsageError("--keep-warm needs auto, spin, off or a number of markers in [0, 1000], got '" + v + "'");
        a.keep_warm = static_cast<int>(n);
      }
    }
    else if (s == "--budget") {
      std::string v = value();
      char* end = nullptr;
      a.budget = std::strtod(v.c_str(), &end);
      if (v.empty() || *end || !(a.budget > 0) || a.budget > 1e7)
        throw UsageError("--budget needs a number of seconds > 0, got '" + v + "'");
    } else if (s == "--tuning-cache") {
      a.tuning_cache = value();
      if (a.tuning_cache.empty()) throw UsageError("--tuning-cache needs a file name or 'off'");
    }
    else if (s == "--verbose" || s == "-v") a.verbose = true;
    else if (s.size() > 1 && s[0] == '-') throw UsageError("unknown option '" + s + "'");
    else if (a.model.empty()) a.model = s;
    else a.images.push_back(s);
  }
  if (a.markdown && !a.list_ops) throw UsageError("--markdown applies to --list-ops");
  if ((a.list_devices || a.list_variants || a.list_ops) && !a.tune_command) return a;
  if (a.model.empty()) throw UsageError(a.tune_command ? "tune: no model given (ocl-infer tune MODEL.onnx)" : "no model given");
  if (a.budget > 0 && !a.tune) throw UsageError("--budget applies to ocl-infer tune and --tune");
  if (a.tune && a.tuning_cache == "off" && a.tune_command)
    throw UsageError("tune: --tuning-cache off would throw the results away; give a file or leave the default");
  // --conf, --iou, --max-det and --draw say what the user wants where --task does not.
  if (a.detect_flags && !a.task_given) a.detect = true;
  if (a.detect_flags && !a.detect) throw UsageError("--conf, --iou, --max-det and --draw apply to --task detect");
  if (a.detect) {
    if (a.tune_command || a.measuring() || a.check_precision || !a.dump.empty() || !a.inputs.empty() ||
        !a.output_dir.empty())
      throw UsageError("--task detect takes photos and prints detections (not with tune, --input, --output-dir, "
                       "--bench, --profile, --dump or --check-precision)");
    if (a.crop_given || a.top_given) throw UsageError("--crop and --top apply to classification, not --task detect");
    if (a.size_given && a.pre.resize <= 0) throw UsageError("--size with --task detect must be positive");
    if (a.images.empty()) throw UsageError("--task detect: give photos to detect objects in");
    if (!a.quant.calibration.empty())
      throw UsageError("--task detect runs int8 models that are already quantized; --calibration would calibrate "
                       "with the classification preprocessing");
  }
  if (a.tune_command) {
    if (a.measuring() || !a.dump.empty() || a.check_precision || !a.output_dir.empty())
      throw UsageError("tune: only model, inputs and planning options apply (no --bench, --profile, --dump, "
                       "--check-precision, --output-dir)");
    if (a.images.size() > 1) throw UsageError("tune: give at most one image (its size sets the input shape)");
    return a;
  }
  if (a.bench && (a.profile || !a.profile_json.empty() || !a.profile_csv.empty() ||
                  !a.profile_trace.empty() || !a.profile_html.empty()))
    throw UsageError("--bench and --profile are separate modes (profiling adds event overhead); run them one at a time");
  if (a.duration > 0 && !a.bench) throw UsageError("--duration applies to --bench");
  if (a.iterations < 0) a.iterations = a.bench ? 50 : 10;
  if (!a.fp32_ops.empty() && a.precision != ocl_infer::Precision::Float16 && !a.check_precision)
    throw UsageError("--fp32-ops applies with --precision fp16 (or --check-precision fp16)");
  const bool quant_flags = !a.quant.calibration.empty() || a.quant.method != "minmax" || !a.quant.exclude.empty() ||
                           !a.quant.per_channel || a.quant.max_images != 100 ||
                           a.quant.activation_type != ocl_infer::DType::UInt8;
  if (quant_flags && !a.int8)
    throw UsageError("--calibration, --method, --exclude, ... apply to --precision int8 (and ocl-infer quantize)");
  if (a.int8 && (a.check_precision || a.precision != ocl_infer::Precision::Float32))
    throw UsageError("--precision int8 cannot be combined with fp16 or --check-precision");
  if (a.check_precision && (a.measuring() || !a.dump.empty()))
    throw UsageError("--check-precision is a mode of its own (not with --bench, --profile or --dump)");
  if (a.measuring() || a.check_precision) return a;
  if (!a.dump.empty() && a.images.empty() && a.inputs.empty()) return a;
  if (a.images.empty() && a.inputs.empty()) throw UsageError("give images to classify, or --input [NAME=]FILE");
  if (!a.images.empty() && !a.inputs.empty()) throw UsageError("give either images or --input tensors, not both");
  if (!a.inputs.empty() && a.output_dir.empty() && a.dump.empty()) throw UsageError("--input needs --output-dir DIR");
  if (!a.fetch.empty() && (a.inputs.empty() || a.output_dir.empty()))
    throw UsageError("--fetch needs --input tensors and --output-dir DIR");
  return a;
}

using cli::json_escape;

std::vector<std::string> read_labels(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw ocl_infer::InputError("cannot read labels file '" + path + "'");
  std::vector<std::string> r;
  std::string line;
  while (std::getline(f, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    r.push_back(line);
  }
  return r;
}

bool file_exists(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

int list_devices() {
  auto devs = ocl_infer::list_devices();
  for (auto& d : devs)
    std::cout << d.index << ": " << d.name << " [" << d.type << "] platform '" << d.platform
              << "', " << d.opencl_c_version << ", driver " << d.driver_version << ", "
              << d.compute_units << " compute units, " << (d.global_mem_bytes >> 20) << " MiB"
              << (d.fp64 ? ", fp64" : "") << (d.fp16 ? ", fp16" : "") << "\n";
  return 0;
}

int list_variants() {
  for (auto& v : ocl_infer::kernel_variants()) {
    std::cout << v.family << "=" << v.variant;
    for (auto& [name, values] : v.params) {
      std::cout << " " << name << "={";
      for (size_t i = 0; i < values.size(); ++i) std::cout << (i ? "," : "") << values[i];
      std::cout << "}";
    }
    std::cout << "\n    " << v.summary << "\n";
  }
  return 0;
}

// The operator catalog as text, JSON, or the Markdown page docs/operators.md (a test compares
// the two, so the page cannot go stale).
int list_ops(const Args& a) {
  const auto ops = ocl_infer::operator_catalog();
  const auto versions = [](const ocl_infer::OperatorInfo& o) {
    std::string v;
    for (size_t i = 0; i < o.since_versions.size(); ++i) {
      const int from = o.since_versions[i];
      const int to = i + 1 < o.since_versions.size() ? o.since_versions[i + 1] - 1 : o.max_opset;
      v += (i ? ", " : "") + std::to_string(from) + (to == from ? "" : to > 0 ? "-" + std::to_string(to) : "+");
    }
    return v;
  };
  const auto join = [](const std::vector<std::string>& v, const char* sep) {
    std::string r;
    for (size_t i = 0; i < v.size(); ++i) r += (i ? sep : "") + v[i];
    return r;
  };
  if (a.json) {
    std::cout << "[";
    for (size_t i = 0; i < ops.size(); ++i) {
      const auto& o = ops[i];
      std::cout << (i ? ",\n " : "\n ") << "{\"domain\": \"" << json_escape(o.domain) << "\", \"op_type\": \""
                << json_escape(o.op_type) << "\", \"since_versions\": [";
      for (size_t k = 0; k < o.since_versions.size(); ++k) std::cout << (k ? ", " : "") << o.since_versions[k];
      std::cout << "], \"max_opset\": " << o.max_opset << ", \"fp16_storage\": " << (o.fp16_storage ? "true" : "false")
                << ", \"notes\": [";
      for (size_t k = 0; k < o.notes.size(); ++k) std::cout << (k ? ", " : "") << "\"" << json_escape(o.notes[k]) << "\"";
      std::cout << "]}";
    }
    std::cout << "\n]\n";
    return 0;
  }
  if (!a.markdown) {
    for (const auto& o : ops)
      std::cout << (o.domain == "ai.onnx" ? "" : o.domain + ".") << o.op_type << "  opsets " << versions(o)
                << (o.fp16_storage ? "" : "  (float32 storage in fp16 mode)")
                << (o.notes.empty() ? "" : "  -- " + join(o.notes, "; ")) << "\n";
    return 0;
  }
  std::cout << "# Supported operators\n\n"
               "Generated by `ocl-infer --list-ops --markdown > docs/operators.md` from the operator registry\n"
               "(`ops/registry.cpp`); the test `operators_doc` fails when this page and the registry differ.\n\n"
               "- **Opsets**: the opset versions whose form of the operator is implemented, as ranges up to\n"
               "  the newest opset the loader accepts for the domain (ai.onnx: "
            << std::max_element(ops.begin(), ops.end(), [](const auto& x, const auto& y) { return x.max_opset < y.max_opset; })->max_opset
            << "); a model importing a newer default opset is refused with a clear error, and so is\n"
               "  an operator at an opset where its schema changed in more than element types and the\n"
               "  registry has no row for that version (ops/registry.cpp, kNewerSchemas).\n"
               "- **fp16**: with `--precision fp16` the operator's float tensors may be stored as float16\n"
               "  (arithmetic stays float32); \"fp32\" means its tensors keep float32 storage in that mode.\n"
               "- Every operator runs in fp32; int8 comes from quantized models (QuantizeLinear,\n"
               "  DequantizeLinear, QLinear*, *Integer operators), see docs/precision.md.\n"
               "- **How it runs**: empty for one or more device kernels.\n\n"
            << ops.size() << " operators.\n\n"
               "| operator | domain | opsets | fp16 | how it runs |\n| --- | --- | --- | --- | --- |\n";
  for (const auto& o : ops)
    std::cout << "| " << o.op_type << " | " << o.domain << " | " << versions(o) << " | "
              << (o.fp16_storage ? "storage" : "fp32") << " | " << join(o.notes, "; ") << " |\n";
  return 0;
}

// The --input tensors by input name; a FILE given without NAME= goes to the model's only input.
std::map<std::string, Tensor> input_feeds(const ocl_infer::Session& s, const Args& a) {
  std::map<std::string, Tensor> feeds;
  for (const auto& [given, file] : a.inputs) {
    std::string name = given;
    if (name.empty()) {
      if (s.inputs().size() != 1) {
        std::string names;
        for (const auto& in : s.inputs()) names += (names.empty() ? "" : ", ") + in.name;
        throw UsageError("--input " + file + ": the model has " + std::to_string(s.inputs().size()) +
                         " inputs (" + names + "); give each as --input NAME=FILE");
      }
      name = s.inputs()[0].name;
    }
    if (feeds.count(name)) throw UsageError("input '" + name + "' given twice");
    feeds[name] = cli::read_tensor_file(file);
  }
  return feeds;
}

// Each output's file name: NAME.npy with characters outside [A-Za-z0-9._-] made '_'. Names
// that need no change keep theirs; another that would land on a name already taken (outputs
// "a/b" and "a_b") gets "-2", "-3", ... before ".npy".
std::map<std::string, std::string> output_files(const std::map<std::string, Tensor>& outs) {
  std::map<std::string, std::string> files;
  std::set<std::string> taken;
  for (const auto& [name, t] : outs)
    if (cli::safe_file_name(name) == name) taken.insert(files[name] = name + ".npy");
  for (const auto& [name, t] : outs) {
    if (files.count(name)) continue;
    const std::string base = cli::safe_file_name(name);
    std::string file = base + ".npy";
    for (int k = 2; taken.count(file); ++k) file = base + "-" + std::to_string(k) + ".npy";
    taken.insert(files[name] = file);
  }
  return files;
}

// Warns of outputs holding NaN or infinity, then (with --output-dir) writes each as .npy.
void write_outputs(const std::map<std::string, Tensor>& outs, const Args& a) {
  for (auto& [name, t] : outs) {
    const int64_t bad = cli::count_non_finite(t);
    if (bad == 0) continue;
    std::cerr << "ocl-infer: warning: output '" << name << "' has " << bad << " of " << t.numel()
              << " values that are NaN or infinite";
    if (a.precision == ocl_infer::Precision::Float16 || t.dtype == DType::Float16)
      std::cerr << " (float16 holds at most 65504: --check-precision fp16 shows the first layer that "
                   "overflows, --fp32-ops OP keeps an op's outputs in float32)";
    std::cerr << "\n";
  }
  if (a.output_dir.empty()) return;
  mkdir(a.output_dir.c_str(), 0755);
  for (const auto& [name, file] : output_files(outs)) {
    const std::string path = a.output_dir + "/" + file;
    cli::write_npy(path, outs.at(name));
    if (file != cli::safe_file_name(name) + ".npy")
      std::cerr << "ocl-infer: output '" << name << "' written as " << file << " (" << cli::safe_file_name(name)
                << ".npy is another output's)\n";
    if (a.verbose) std::cerr << "wrote " << path << "\n";
  }
}

int run_tensors(ocl_infer::Session& s, const Args& a) {
  std::map<std::string, Tensor> feeds = input_feeds(s, a);
  ocl_infer::RunOptions ro;
  ro.fetch = a.fetch;
  auto outs = s.run(feeds, ro);
  if (!a.dump.empty()) std::cout << s.dump(a.json ? a.dump + ".json" : a.dump);
  write_outputs(outs, a);
  return 0;
}

// The centre crop is the model's input size unless --crop says otherwise; a crop beyond the
// default shorter side (256, for 224 inputs) gets the same ratio (a 320 input: 366) unless --size.
void crop_to_model_input(Args& a, const std::vector<int64_t>& shape) {
  if (a.crop_given) return;
  const int64_t hw = a.pre.nhwc ? shape[1] : shape[2];
  if (hw <= 0) return;
  a.pre.crop = static_cast<int>(hw);
  if (!a.size_given && a.pre.crop > a.pre.resize)
    a.pre.resize = static_cast<int>((static_cast<int64_t>(a.pre.crop) * 256 + 223) / 224);
}

// The error for a first output that is not one score per class (`shape` as the message says it).
ocl_infer::InputError not_class_scores(const std::string& name, const std::string& shape) {
  return ocl_infer::InputError("the model's output '" + name + "' is " + shape +
                               ", not one score per class: image classification reads an output of shape [1,C]; "
                               "for detectors use --task detect, for other models --input NAME=FILE --output-dir "
                               "DIR writes the raw outputs");
}

int classify(ocl_infer::Session& s, Args a) {
  if (s.inputs().size() != 1)
    throw ocl_infer::InputError("image classification needs a model with one input; this one has " +
                                std::to_string(s.inputs().size()) + " (use --input)");
  const auto& in = s.inputs()[0];
  if (in.dtype != DType::Float32 || in.shape.size() != 4)
    throw ocl_infer::InputError("image classification needs a float32 input of rank 4, the model has " +
                                std::string(ocl_infer::dtype_name(in.dtype)) + " " + ocl_infer::shape_to_string(in.shape));
  // A declared first output with two or more dims past the batch that are open or above 1 (a
  // text recognizer's [N,T,C], a segmenter's or detector's map) cannot be one score per class:
  // said before the photo is cropped to an input that may not fit the model (a recognizer's
  // 48-pixel lines failed inside the model with a Reshape error).
  {
    const auto& o = s.outputs()[0];
    const auto wide = std::count_if(o.shape.begin() + (o.shape.empty() ? 0 : 1), o.shape.end(),
                                    [](int64_t d) { return d != 1; });
    if (wide > 1) throw not_class_scores(o.name, "declared " + ocl_infer::shape_to_string(o.shape));
  }
  crop_to_model_input(a, in.shape);
  std::vector<std::string> labels;
  std::string label_path = a.labels;
  if (label_path.empty()) {
    std::string dir = a.model.find('/') == std::string::npos ? "." : a.model.substr(0, a.model.rfind('/'));
    if (file_exists(dir + "/imagenet_labels.txt")) label_path = dir + "/imagenet_labels.txt";
  }
  if (!label_path.empty()) labels = read_labels(label_path);

  if (a.json) std::cout << "{\"device\": \"" << json_escape(s.device().name) << "\", \"results\": [";
  for (size_t k = 0; k < a.images.size(); ++k) {
    Tensor x = cli::load_image(a.images[k], a.pre);
    auto outs = s.run({{in.name, x}});
    const Tensor& y = outs.at(s.outputs()[0].name);
    if (y.dtype != DType::Float32) throw ocl_infer::InputError("the model's first output is not float32");
    // Class scores are one vector ([1,C], [C], [1,C,1,1]); a map or a sequence of them (a
    // detector's, a segmenter's, a text recognizer's) ranked as one would print nonsense.
    if (std::count_if(y.shape.begin(), y.shape.end(), [](int64_t d) { return d > 1; }) > 1)
      throw not_class_scores(s.outputs()[0].name, ocl_infer::shape_to_string(y.shape));
    const float* p = y.data<float>();
    const int64_t n = y.numel();
    // A NaN or infinity in the scores would come out of the softmax below as plausible-looking
    // probabilities: say so instead.
    const int64_t bad = cli::count_non_finite(y);
    if (bad > 0)
      throw ocl_infer::InputError(
          "the model's output '" + s.outputs()[0].name + "' for '" + a.images[k] + "' has " + std::to_string(bad) +
          " of " + std::to_string(n) + " values that are NaN or infinite; no classes to report" +
          (a.precision == ocl_infer::Precision::Float16
               ? " (float16 holds at most 65504: --check-precision fp16 shows the first layer that overflows)"
               : ""));
    // Logits or probabilities? Probabilities are non-negative and sum to 1.
    double sum = 0, mn = INFINITY;
    for (int64_t i = 0; i < n; ++i) sum += p[i], mn = std::min<double>(mn, p[i]);
    std::vector<double> prob(n);
    if (mn >= 0 && std::fabs(sum - 1) < 1e-3) {
      for (int64_t i = 0; i < n; ++i) prob[i] = p[i];
    } else {
      double mx = *std::max_element(p, p + n), z = 0;
      for (int64_t i = 0; i < n; ++i) z += prob[i] = std::exp(p[i] - mx);
      for (auto& v : prob) v /= z;
    }
    std::vector<int64_t> idx(n);
    std::iota(idx.begin(), idx.end(), 0);
    int top = static_cast<int>(std::min<int64_t>(a.top, n));
    std::partial_sort(idx.begin(), idx.begin() + top, idx.end(),
                      [&](int64_t i, int64_t j) { return prob[i] > prob[j]; });
    auto label = [&](int64_t i) { return i < static_cast<int64_t>(labels.size()) ? labels[i] : "class " + std::to_string(i); };
    if (a.json) {
      std::cout << (k ? ", " : "") << "{\"image\": \"" << json_escape(a.images[k]) << "\", \"top\": [";
      for (int t = 0; t < top; ++t)
        std::cout << (t ? ", " : "") << "{\"index\": " << idx[t] << ", \"label\": \"" << json_escape(label(idx[t]))
                  << "\", \"probability\": " << prob[idx[t]] << "}";
      std::cout << "]}";
    } else {
      std::cout << a.images[k] << ":\n";
      for (int t = 0; t < top; ++t) {
        char line[64];
        std::snprintf(line, sizeof line, "  %2d. %6.2f%%  %5lld  ", t + 1, 100.0 * prob[idx[t]], static_cast<long long>(idx[t]));
        std::cout << line << label(idx[t]) << "\n";
      }
    }
  }
  if (a.json) std::cout << "]}\n";
  if (!a.dump.empty()) std::cout << s.dump(a.json ? a.dump + ".json" : a.dump);
  return 0;
}

// Photos without --task, for a model whose outputs are plainly a detector's (cli::detector_layout)
// and no classification flag (--crop, --top, --calibration): detect, and say so on stderr.
bool detects_by_default(const ocl_infer::Session& s, const Args& a) {
  if (a.task_given || a.images.empty() || a.crop_given || a.top_given || !a.quant.calibration.empty() ||
      !a.output_dir.empty() || !a.inputs.empty())
    return false;
  std::vector<cli::OutputDesc> declared;
  for (const auto& v : s.outputs()) declared.push_back({v.name, v.dtype, v.shape});
  const char* layout = cli::detector_layout(declared);
  if (!layout) return false;
  std::cerr << "ocl-infer: the model's outputs read as detections (" << layout
            << "): detecting objects (--task classify ranks classes instead)\n";
  return true;
}

int detect(ocl_infer::Session& s, const Args& a) {
  cli::DetectOptions o;
  o.params = a.det;
  o.labels = a.labels;
  o.draw = a.draw;
  o.size = a.size_given ? a.pre.resize : 0;
  o.json = a.json;
  o.pre = a.pre;
  for (int c = 0; c < 3; ++c) {
    if (!a.mean_given) o.pre.mean[c] = 0;
    if (!a.std_given) o.pre.std[c] = 1;
  }
  return cli::detect_photos(s, a.model, a.images, o);
}

// Inputs for --bench/--profile: given tensors, the first image, or random data.
std::map<std::string, Tensor> measurement_inputs(ocl_infer::Session& s, Args& a) {
  std::map<std::string, Tensor> feeds;
  if (!a.inputs.empty()) return input_feeds(s, a);
  if (!a.images.empty()) {
    const auto& in = s.inputs().at(0);
    if (in.shape.size() == 4) crop_to_model_input(a, in.shape);
    feeds[in.name] = cli::load_image(a.images[0], a.pre);
    return feeds;
  }
  std::mt19937 rng(42);
  for (const auto& in : s.inputs()) {
    std::vector<int64_t> shape = in.shape;
    for (size_t d = 0; d < shape.size(); ++d)
      if (shape[d] < 0) {
        if (d != 0) throw ocl_infer::InputError("input '" + in.name + "' has an open dimension " + std::to_string(d) +
                                                 " besides the batch; give --input tensors");
        shape[d] = a.batch;
      }
    // Random data is made here: refuse absurd declared shapes before allocating them.
    uint64_t bytes = ocl_infer::dtype_size(in.dtype);
    bool overflow = false;
    for (int64_t d : shape) overflow |= __builtin_mul_overflow(bytes, static_cast<uint64_t>(d), &bytes);
    const uint64_t cap = a.max_memory ? a.max_memory : uint64_t{4} << 30;
    if (overflow || bytes > cap)
      throw ocl_infer::InputError("input '" + in.name + "' " + ocl_infer::shape_to_string(shape) +
                                  " would need more than " + std::to_string(cap) +
                                  " bytes of random data; give --input tensors");
    Tensor t(in.dtype, shape);
    if (in.dtype == DType::Float32) {
      std::normal_distribution<float> dist(0.f, 1.f);
      for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(rng);
    } else if (in.dtype != DType::Int64 && in.dtype != DType::Int32 && in.dtype != DType::Bool) {
      throw ocl_infer::InputError(std::string("random inputs of type ") + ocl_infer::dtype_name(in.dtype) +
                                  " are not supported; give --input tensors");
    }  // integer and bool inputs stay zero: valid indices and masks for most models
    feeds[in.name] = std::move(t);
  }
  return feeds;
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  if (!f) throw ocl_infer::InputError("cannot write '" + path + "': " + std::strerror(errno));
  f << text;
  if (!f) throw ocl_infer::InputError("writing '" + path + "' failed");
}

double since_ms(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// --dump with no inputs: plan for random inputs (open batch dims = --batch) and print the stage.
// Two sessions of the same model, fp32 and fp16, compared node by node.
int check_precision(ocl_infer::Session& reference, Args& a, const ocl_infer::SessionOptions& opt) {
  ocl_infer::SessionOptions low = opt;
  low.precision = ocl_infer::Precision::Float16;
  auto candidate = ocl_infer::Session::from_file(a.model, low);
  const auto feeds = measurement_inputs(reference, a);
  const auto report = cli::check_precision(reference, candidate, feeds, a.threshold, a.top);
  std::cout << (a.json ? cli::precision_report_json(report, "fp16") : cli::format_precision_report(report, "fp16"));
  return 0;
}

// ocl-infer tune: plans once with tuning on (inputs: --input files, the image, or random data),
// then reports what the tuner found.
int tune_model(ocl_infer::Session& s, Args& a) {
  const auto t0 = std::chrono::steady_clock::now();
  s.run(measurement_inputs(s, a));
  const auto st = s.stats();
  const double gain = st.tuned_kernel_ms > 0 ? st.heuristic_kernel_ms / st.tuned_kernel_ms : 1.0;
  if (a.json) {
    std::printf("{\"problems\": %d, \"improved\": %d, \"tuning_s\": %.3f, \"plan_s\": %.3f, "
                "\"heuristic_kernel_ms\": %.4f, \"tuned_kernel_ms\": %.4f, \"tuning_cache\": \"%s\"}\n",
                st.tuned_problems, st.tuned_improved, st.tuning_seconds, since_ms(t0) / 1000, st.heuristic_kernel_ms,
                st.tuned_kernel_ms, json_escape(st.tuning_cache).c_str());
    return 0;
  }
  std::printf("tuned %d problem%s in %.1f s (%d faster than the device-class choice)\n", st.tuned_problems,
              st.tuned_problems == 1 ? "" : "s", st.tuning_seconds, st.tuned_improved);
  if (st.tuned_problems > 0)
    std::printf("their kernels, one launch each: %.3f ms with the heuristic choices, %.3f ms tuned (%.2fx)\n",
                st.heuristic_kernel_ms, st.tuned_kernel_ms, gain);
  else
    std::printf("every problem already had a result in the tuning cache (delete it to tune again)\n");
  std::printf("tuning cache: %s\n", st.tuning_cache.empty() ? "(none)" : st.tuning_cache.c_str());
  return 0;
}

int dump_only(ocl_infer::Session& s, Args& a) {
  s.run(measurement_inputs(s, a));
  std::cout << s.dump(a.json ? a.dump + ".json" : a.dump);
  return 0;
}

int measure(ocl_infer::Session& s, Args& a) {
  auto feeds = measurement_inputs(s, a);
  auto t0 = std::chrono::steady_clock::now();
  const auto first_outputs = s.run(feeds);
  double first_ms = since_ms(t0);
  // --output-dir with --bench / --profile: the first run's outputs.
  if (!a.output_dir.empty()) write_outputs(first_outputs, a);
  int warmup = a.warmup;
  for (int i = 0; i < a.warmup; ++i) s.run(feeds);
  // The automatic keep-warm trial (its runs alternate with and without the spinner) is warm-up too.
  if (a.bench)
    for (int extra = 0; s.stats().keep_warm_trial_runs > 0 && extra < 64; ++extra, ++warmup) s.run(feeds);
  const bool progress = isatty(2) || a.verbose;
  auto start = std::chrono::steady_clock::now();
  auto last_report = start;
  std::vector<double> times;
  if (a.bench) {
    for (int i = 0;; ++i) {
      if (a.duration > 0 ? since_ms(start) >= a.duration * 1000 : i >= a.iterations) break;
      auto t = std::chrono::steady_clock::now();
      s.run(feeds);
      times.push_back(since_ms(t));
      if (since_ms(last_report) > 2000) {
        last_report = std::chrono::steady_clock::now();
        if (progress || a.duration > 0 || a.iterations > 100) {
          std::cerr << "ocl-infer: bench " << times.size();
          if (a.duration > 0) std::cerr << " runs, " << static_cast<int>(since_ms(start) / 1000) << "/" << a.duration << " s";
          else std::cerr << "/" << a.iterations << " runs";
          std::cerr << ", last " << times.back() << " ms\n";
        }
      }
    }
    std::vector<double> v = times;
    std::sort(v.begin(), v.end());
    auto pct = [&](double p) { return v[std::min(v.size() - 1, static_cast<size_t>(p * (v.size() - 1) + 0.5))]; };
    double total_s = 0;
    for (double t : v) total_s += t / 1000;
    int64_t batch = 1;
    const auto& first = feeds.begin()->second;
    if (!first.shape.empty()) batch = first.shape[0];
    double throughput = static_cast<double>(v.size() * batch) / total_s;
    if (a.json) {
      std::cout << "{\"model\": \"" << json_escape(a.model) << "\", \"device\": \"" << json_escape(s.device().name)
                << "\", \"precision\": \"" << precision_name(a.precision) << "\", \"iterations\": " << v.size() << ", \"warmup\": " << warmup << ", \"batch\": " << batch
                << ", \"min_ms\": " << v.front() << ", \"median_ms\": " << pct(0.5) << ", \"p90_ms\": " << pct(0.9)
                << ", \"max_ms\": " << v.back() << ", \"throughput_per_s\": " << throughput
                << ", \"first_inference_ms\": " << first_ms << ", \"plan_ms\": " << s.stats().plan_ms
                << ", \"load_ms\": " << s.stats().load_ms << ", \"graph_ms\": " << s.stats().graph_ms
                << ", \"lower_ms\": " << s.stats().lower_ms << ", \"upload_ms\": " << s.stats().upload_ms
                << ", \"programs_ms\": " << s.stats().programs_ms << ", \"compile_ms\": " << s.stats().compile_ms
                << ", \"keep_warm\": " << s.stats().keep_warm << ", \"keep_warm_spin\": "
                << (s.stats().keep_warm_spin ? "true" : "false") << "}\n";
    } else {
      char line[256];
      std::cout << "model:      " << a.model << "\ndevice:     " << s.device().name << "\nprecision:  "
                << precision_name(a.precision) << "\nkeep-warm:  "
                << (s.stats().keep_warm_spin ? std::string("spinner before each kernel launch")
                    : s.stats().keep_warm    ? std::to_string(s.stats().keep_warm) + " markers per kernel launch"
                                             : std::string("off"))
                << "\n";
      std::snprintf(line, sizeof line, "runs:       %zu after %d warm-up (batch %lld)\n", v.size(), warmup, static_cast<long long>(batch));
      std::cout << line;
      std::snprintf(line, sizeof line, "latency:    min %.3f ms, median %.3f ms, p90 %.3f ms, max %.3f ms\n", v.front(), pct(0.5), pct(0.9), v.back());
      std::cout << line;
      std::snprintf(line, sizeof line, "throughput: %.2f inferences/s\n", throughput);
      std::cout << line;
      std::snprintf(line, sizeof line, "start-up:   plan %.1f ms (compile %.1f ms, %d built, %d cached), first inference %.1f ms\n",
                    s.stats().plan_ms, s.stats().compile_ms, s.stats().programs_built, s.stats().programs_cached, first_ms);
      std::cout << line;
    }
    return 0;
  }
  s.reset_profile();
  for (int i = 0; i < a.iterations; ++i) {
    s.run(feeds);
    if (since_ms(last_report) > 2000 && progress) {
      last_report = std::chrono::steady_clock::now();
      std::cerr << "ocl-infer: profile " << i + 1 << "/" << a.iterations << " runs\n";
    }
  }
  auto layers = s.profile();
  auto summary = cli::summarize(s, a.model, a.iterations, a.warmup, first_ms);
  summary.precision = precision_name(a.precision);
  if (a.profile || (a.profile_json.empty() && a.profile_csv.empty() && a.profile_trace.empty() && a.profile_html.empty()))
    std::cout << cli::format_profile_table(layers, summary, a.profile_exec_order);
  if (!a.profile_json.empty()) write_text(a.profile_json, cli::profile_json(layers, summary));
  if (!a.profile_csv.empty()) write_text(a.profile_csv, cli::profile_csv(layers));
  if (!a.profile_trace.empty()) write_text(a.profile_trace, cli::profile_trace(layers, summary));
  if (!a.profile_html.empty()) write_text(a.profile_html, cli::profile_html(layers, summary));
  return 0;
}

}  // namespace

// --precision int8: a quantized model runs as it is; an fp32 one is quantized in memory on the
// --calibration images first, exactly as `ocl-infer quantize` would write it.
ocl_infer::Session int8_session(const Args& a, const ocl_infer::SessionOptions& opt) {
  if (ocl_infer::model_is_quantized(a.model)) {
    if (!a.quant.calibration.empty())
      std::cerr << "ocl-infer: the model is already quantized; --calibration is not used\n";
    return ocl_infer::Session::from_file(a.model, opt);
  }
  if (a.quant.calibration.empty())
    throw ocl_infer::InputError("--precision int8 on an fp32 model quantizes it first and needs calibration images: "
                                "add --calibration DIR (a folder of typical inputs), or write a quantized model once "
                                "with `ocl-infer quantize " + a.model + " --calibration DIR -o MODEL.int8.onnx`");
  ocl_infer::QuantizeReport rep;
  const std::string bytes = cli::quantize_with_images(a.model, a.quant, a.pre, a.crop_given, opt, true, &rep);
  std::cerr << "ocl-infer: quantized in memory: " << rep.weights_quantized << " weights int8, "
            << rep.activations.size() << " activations on " << rep.calibration_inputs << " calibration images\n";
  const std::string dir = a.model.find('/') == std::string::npos ? "." : a.model.substr(0, a.model.rfind('/'));
  return ocl_infer::Session::from_memory(bytes.data(), bytes.size(), opt, dir);
}

// Asks for transparent huge pages on the heap that loading and planning `model` will use.
// Loading and planning copy the weights several times (parsed bytes, tensors, folded and packed
// copies, the device's buffers), each into fresh memory, and on 4 KiB pages every copy faults each
// page in: resnet18's warm process spent about a third of its time in page faults (a KVM guest,
// 2026-12-04). The heap is grown once by a multiple of the model's size with mmap turned off, the
// range is advised MADV_HUGEPAGE and given back to malloc, which keeps it (the trim threshold
// below) and serves the copies from it; only what is touched becomes resident. Where the kernel
// has transparent huge pages off, or the model's size is unknown, nothing changes.
void advise_heap_for(const std::string& model) {
  if (const char* e = std::getenv("OCL_INFER_HUGEPAGES"); e && std::string(e) == "0") return;
  struct stat st {};
  if (stat(model.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return;
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return;
  const size_t ram = static_cast<size_t>(pages) * static_cast<size_t>(page);
  const size_t want = std::min<size_t>(static_cast<size_t>(st.st_size) * 6 + (64u << 20), ram / 4);
  constexpr size_t kHuge = 2u << 20;
  if (want < 4 * kHuge) return;
  mallopt(M_MMAP_MAX, 0);  // from the heap, not a mapping of its own
  char* p = static_cast<char*>(std::malloc(want));
  if (p) {
    char* b = reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(p) + kHuge - 1) & ~(kHuge - 1));
    char* e = reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(p) + want) & ~(kHuge - 1));
    if (e > b) madvise(b, static_cast<size_t>(e - b), MADV_HUGEPAGE);
    std::free(p);
  }
}

// Leaves the process without destructors once its outputs are flushed (stdout, stderr, and the
// files the run wrote, which are closed by then). Background processes the session started
// (compile helpers' tier-up, the binary store) are detached and carry on.
[[noreturn]] void fast_exit(int rc) {
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  std::_Exit(rc);
}

int main(int argc, char** argv) {
  // Freed blocks stay with malloc for reuse instead of going back to the kernel: loading and
  // planning copy the weights several times (parsed bytes, tensor, folded and packed copies), and
  // each copy into fresh memory faults every page in again (77,000 page faults, about a third of
  // resnet18's warm start on a KVM guest; the process is short-lived, so the memory kept matters
  // little). 32 MiB is the largest threshold glibc accepts.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 1024 << 20);
  if (argc > 1 && std::string(argv[1]) == "quantize") return cli::quantize_command(argc - 1, argv + 1);
  // A compile helper started by the library (docs/cli.md, "Compile helpers"), not for people.
  if (argc == 3 && std::string(argv[1]) == "--compile-helper") {
    const int rc = ocl_infer::run_compile_helper(argv[2]);
    if (rc == 2) std::cerr << "ocl-infer: --compile-helper: '" << argv[2] << "' is not a readable compile job\n";
    if (rc == 3) std::cerr << "ocl-infer: --compile-helper: the job is for other kernel sources or another device\n";
    return rc;
  }
  Args a;
  try {
    a = parse(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "ocl-infer: " << e.what() << "\n(run ocl-infer --help for usage)\n";
    return 2;
  }
  try {
    if (a.list_devices) return list_devices();
    if (a.list_variants) return list_variants();
    if (a.list_ops) return list_ops(a);
    ocl_infer::SessionOptions opt;
    opt.kernel_variants = a.variants;
    opt.max_memory_bytes = a.max_memory;
    opt.precision = a.precision;
    opt.fp32_ops = a.fp32_ops;
    opt.device = a.device;
    opt.cache_dir = a.cache_dir;
    opt.profiling = a.measuring() && !a.bench;
    // A benchmark measures the plan's own kernels from its first timed run on.
    opt.first_run_kernels = !a.bench;
    opt.optimization_level = a.opt_level;
    opt.disabled_passes = a.disabled_passes;
    opt.plan_memory = a.plan_memory;
    opt.tune = a.tune;
    opt.tune_budget_seconds = a.budget;
    opt.keep_warm = a.keep_warm;
    opt.tuning_cache = a.tuning_cache;
    opt.log = [&](const std::string& m) {
      // Tuning shows its progress (one line per problem) and cache notices without --verbose, and
      // so do the notices of a slow first compile and warnings.
      if (a.verbose || m.rfind("device:", 0) == 0 || m.rfind("tun", 0) == 0 || m.rfind("compiling", 0) == 0 ||
          m.rfind("warning:", 0) == 0)
        std::cerr << "ocl-infer: " << m << "\n";
    };
    if (a.check_precision) opt.precision = ocl_infer::Precision::Float32;  // the reference
    advise_heap_for(a.model);
    auto s = a.int8 ? int8_session(a, opt) : ocl_infer::Session::from_file(a.model, opt);
    int rc = a.tune_command                                ? tune_model(s, a)
             : a.check_precision                             ? check_precision(s, a, opt)
             : a.measuring()                                 ? measure(s, a)
             : !a.dump.empty() && a.images.empty() && a.inputs.empty() ? dump_only(s, a)
             : a.detect || detects_by_default(s, a)          ? detect(s, a)
             : a.images.empty()                              ? run_tensors(s, a)
                                                             : classify(s, a);
    if (a.verbose) {
      const auto st = s.stats();
      char phases[256];
      std::snprintf(phases, sizeof phases,
                    "graph %.1f ms, lowering %.1f ms (weight upload %.1f ms), programs %.1f ms", st.graph_ms,
                    st.lower_ms, st.upload_ms, st.programs_ms);
      std::cerr << "ocl-infer: load " << st.load_ms << " ms, plan " << st.plan_ms << " ms (" << phases
                << "; compile " << st.compile_ms << " ms, " << st.programs_built << " programs built, "
                << st.programs_cached << " from cache; " << st.programs_bundled
                << " kernel programs in a bundle), " << st.kernel_launches << " kernel launches\n";
    }
    // Everything the run writes is written; taking the session, the OpenCL context and the
    // driver's and LLVM's static state apart would only cost the user time (~6 ms of a 90 ms
    // warm process, 2026-12-05). Tuning saves its results as it goes, but goes the long way.
    if (!a.tune_command && !std::getenv("OCL_INFER_FULL_EXIT")) fast_exit(rc);
    return rc;
  } catch (const UsageError& e) {
    std::cerr << "ocl-infer: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "ocl-infer: error: " << e.what() << "\n";
    return 1;
  }
}
