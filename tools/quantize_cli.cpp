#include "tools/quantize_cli.hpp"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "tools/cli_parse.hpp"

namespace cli {

namespace {

const char* kQuantizeUsage = R"(usage:
  ocl-infer quantize MODEL.onnx --calibration DIR -o|--output OUT.onnx [options]

Runs the fp32 model on the images in DIR, collects the ranges of its activations and writes a
standard QDQ ONNX model (QuantizeLinear/DequantizeLinear pairs: int8 per-channel symmetric
weights, int32 biases, uint8 activations) that ocl-infer runs with integer kernels and that ONNX
Runtime loads too.

options:
  --calibration DIR       calibration images (JPEG, PNG, BMP, ...; sorted by name)
  --max-images N          use at most N of them (default 100)
  --method minmax|percentile|entropy
                          activation ranges: extremes (default), the --percentile point of the
                          values on each side, or TensorRT's KL-divergence threshold
  --percentile P          for --method percentile (default 99.999)
  --per-channel           one weight scale per output channel (the default)
  --per-tensor            one weight scale per weight tensor
  --activation-type uint8|int8   asymmetric uint8 (default) or symmetric int8 activations
  --exclude NODE,...      leave these nodes in float
  -o, --output FILE       the quantized model (written through a temporary file)
  --size, --crop, --mean, --std, --scale, --bgr, --layout   preprocessing, as for classification
  --device INDEX|NAME, --cache-dir DIR   for the calibration runs
  --json                  the report as JSON on stdout
)";

bool is_dir(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string json_str(const std::string& s) {
  std::string r = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') r += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", c);
      r += b;
      continue;
    }
    r += c;
  }
  return r + "\"";
}

}  // namespace

std::string quantize_with_images(const std::string& model, const QuantizeArgs& q, Preprocess pre, bool crop_given,
                                 const ocl_infer::SessionOptions& session, bool progress,
                                 ocl_infer::QuantizeReport* report) {
  if (q.calibration.empty())
    throw ocl_infer::InputError("quantizing needs calibration images: add --calibration DIR (a folder of typical "
                                "input images, 50-500 of them)");
  if (!is_dir(q.calibration)) throw ocl_infer::InputError("--calibration '" + q.calibration + "' is not a folder");
  std::vector<std::string> files;
  if (DIR* d = opendir(q.calibration.c_str())) {
    while (dirent* e = readdir(d)) {
      const std::string n = e->d_name;
      if (n.empty() || n[0] == '.') continue;
      const std::string p = q.calibration + "/" + n;
      if (!is_dir(p)) files.push_back(p);
    }
    closedir(d);
  } else {
    throw ocl_infer::InputError("cannot read the folder '" + q.calibration + "'");
  }
  std::sort(files.begin(), files.end());

  // The model's input: one float32 image tensor.
  auto probe = ocl_infer::Session::from_file(model, session);
  if (probe.inputs().size() != 1)
    throw ocl_infer::InputError("calibration with images needs a model with one input; this one has " +
                                std::to_string(probe.inputs().size()));
  const auto in = probe.inputs()[0];
  if (in.dtype != ocl_infer::DType::Float32 || in.shape.size() != 4)
    throw ocl_infer::InputError("calibration with images needs a float32 input of rank 4, the model has " +
                                std::string(ocl_infer::dtype_name(in.dtype)) + " " + ocl_infer::shape_to_string(in.shape));
  if (!crop_given) {
    const int64_t hw = pre.nhwc ? in.shape[1] : in.shape[2];
    if (hw > 0) pre.crop = static_cast<int>(hw);
  }
  std::vector<std::map<std::string, ocl_infer::Tensor>> calibration;
  int skipped = 0;
  for (const std::string& f : files) {
    if (static_cast<int>(calibration.size()) >= q.max_images) break;
    try {
      calibration.push_back({{in.name, load_image(f, pre)}});
    } catch (const ocl_infer::InputError& e) {
      if (progress) std::cerr << "ocl-infer: quantize: skipping " << f << ": " << e.what() << "\n";
      ++skipped;
    }
  }
  if (calibration.empty())
    throw ocl_infer::InputError("no readable image in --calibration '" + q.calibration + "' (" +
                                std::to_string(files.size()) + " files, " + std::to_string(skipped) + " unreadable)");
  ocl_infer::QuantizeOptions qo;
  qo.method = q.method;
  qo.percentile = q.percentile;
  qo.per_channel = q.per_channel;
  qo.activation_type = q.activation_type;
  qo.exclude_nodes = q.exclude;
  qo.session = session;
  const bool tty = isatty(2);
  if (progress)
    qo.progress = [tty](size_t done, size_t total) {
      const int width = 30, filled = static_cast<int>(width * done / std::max<size_t>(1, total));
      std::string bar(static_cast<size_t>(filled), '#');
      bar.resize(width, '.');
      if (tty) std::fprintf(stderr, "\rocl-infer: calibrating [%s] %zu/%zu", bar.c_str(), done, total);
      else if (done == total || done % 10 == 0) std::fprintf(stderr, "ocl-infer: calibrating %zu/%zu\n", done, total);
      if (tty && done == total) std::fprintf(stderr, "\n");
    };
  return ocl_infer::quantize_model(model, calibration, qo, report);
}

int quantize_command(int argc, char** argv) {
  QuantizeArgs q;
  Preprocess pre;
  bool crop_given = false, json = false;
  std::string model, output, device, cache_dir;
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string s = argv[i];
      auto value = [&]() -> std::string {
        if (i + 1 >= argc) throw UsageError(s + " needs a value");
        return argv[++i];
      };
      if (s == "--help" || s == "-h") {
        std::cout << kQuantizeUsage;
        return 0;
      }
      if (parse_quantize_flag(s, value, q)) continue;
      if (parse_preprocess_flag(s, value, pre, &crop_given)) continue;
      if (s == "-o" || s == "--output") output = value();
      else if (s == "--device") device = value();
      else if (s == "--cache-dir") cache_dir = value();
      else if (s == "--json") json = true;
      else if (s.size() > 1 && s[0] == '-') throw UsageError("quantize: unknown option '" + s + "'");
      else if (model.empty()) model = s;
      else throw UsageError("quantize: more than one model given ('" + model + "', '" + s + "')");
    }
    if (model.empty()) throw UsageError("quantize: no model given");
    if (output.empty()) throw UsageError("quantize: no output file given (-o OUT.onnx)");
    if (q.calibration.empty()) throw UsageError("quantize: no calibration images given (--calibration DIR)");
  } catch (const UsageError& e) {
    std::cerr << "ocl-infer: " << e.what() << "\n(run ocl-infer quantize --help for usage)\n";
    return 2;
  }
  try {
    ocl_infer::SessionOptions so;
    so.device = device;
    so.cache_dir = cache_dir;
    ocl_infer::QuantizeReport rep;
    const std::string bytes = quantize_with_images(model, q, pre, crop_given, so, true, &rep);
    const std::string tmp = output + ".tmp." + std::to_string(getpid());
    {
      std::ofstream f(tmp, std::ios::binary);
      f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
      f.close();
      if (!f) {
        std::remove(tmp.c_str());
        throw ocl_infer::InputError("cannot write '" + output + "'");
      }
    }
    if (std::rename(tmp.c_str(), output.c_str()) != 0) {
      std::remove(tmp.c_str());
      throw ocl_infer::InputError("cannot write '" + output + "'");
    }
    if (json) {
      std::cout << "{\"output\": " << json_str(output) << ", \"calibration_images\": " << rep.calibration_inputs
                << ", \"weights_quantized\": " << rep.weights_quantized << ", \"biases_quantized\": " << rep.biases_quantized
                << ", \"activations\": [";
      for (size_t k = 0; k < rep.activations.size(); ++k) {
        const auto& r = rep.activations[k];
        std::printf("%s{\"tensor\": %s, \"min\": %.9g, \"max\": %.9g, \"scale\": %.9g, \"zero_point\": %d}", k ? ", " : "",
                    json_str(r.tensor).c_str(), r.min, r.max, r.scale, r.zero_point);
        std::fflush(stdout);
      }
      std::cout << "], \"float_nodes\": [";
      for (size_t k = 0; k < rep.float_nodes.size(); ++k) std::cout << (k ? ", " : "") << json_str(rep.float_nodes[k]);
      std::cout << "], \"excluded\": [";
      for (size_t k = 0; k < rep.excluded.size(); ++k) std::cout << (k ? ", " : "") << json_str(rep.excluded[k]);
      std::cout << "]}\n";
      return 0;
    }
    std::printf("wrote %s (%zu bytes): %d weights int8, %d biases int32, %zu activations quantized, calibrated on %zu "
                "images (%s)\n",
                output.c_str(), bytes.size(), rep.weights_quantized, rep.biases_quantized, rep.activations.size(),
                rep.calibration_inputs, q.method.c_str());
    // The widest ranges (the coarsest steps) are where accuracy goes first.
    auto ranges = rep.activations;
    std::sort(ranges.begin(), ranges.end(), [](const auto& a, const auto& b) { return a.scale > b.scale; });
    std::printf("coarsest activation steps:\n");
    for (size_t k = 0; k < ranges.size() && k < 5; ++k)
      std::printf("  %-48s range [%.4g, %.4g]  step %.4g  zero point %d\n", ranges[k].tensor.c_str(), ranges[k].min,
                  ranges[k].max, ranges[k].scale, ranges[k].zero_point);
    if (!rep.excluded.empty()) {
      std::printf("excluded (kept in float):");
      for (auto& e : rep.excluded) std::printf(" %s", e.c_str());
      std::printf("\n");
    }
    std::printf("%zu nodes of other op types run in float between dequantize and quantize", rep.float_nodes.size());
    for (size_t k = 0; k < rep.float_nodes.size() && k < 8; ++k) std::printf("%s%s", k ? ", " : ": ", rep.float_nodes[k].c_str());
    std::printf("%s\n", rep.float_nodes.size() > 8 ? ", ..." : "");
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "ocl-infer: quantize: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace cli
