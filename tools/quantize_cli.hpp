// `ocl-infer quantize` and `--precision int8`: calibration images -> ocl_infer::quantize_model.
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "ocl_infer/ocl_infer.hpp"
#include "tools/cli_io.hpp"
#include "tools/cli_parse.hpp"

namespace cli {

struct QuantizeArgs {
  std::string calibration;  // folder of images
  int max_images = 100;
  std::string method = "minmax";
  double percentile = 99.999;
  bool per_channel = true;
  ocl_infer::DType activation_type = ocl_infer::DType::UInt8;
  std::vector<std::string> exclude;
};

// Applies quantization flag `s` (--calibration, --max-images, --method, --percentile,
// --per-channel, --per-tensor, --activation-type, --exclude) and returns true, or returns false
// for another flag. Throws UsageError for a bad value. `next` reads the flag's argument.
template <typename Value>
bool parse_quantize_flag(const std::string& s, Value next, QuantizeArgs& q) {
  if (s == "--calibration") q.calibration = next();
  else if (s == "--max-images") q.max_images = parse_int(s, next(), 1, 1000000);
  else if (s == "--method") {
    q.method = next();
    if (q.method != "minmax" && q.method != "percentile" && q.method != "entropy")
      throw UsageError("--method must be minmax, percentile or entropy, got '" + q.method + "'");
  } else if (s == "--percentile") {
    const std::string v = next();
    char* end = nullptr;
    q.percentile = std::strtod(v.c_str(), &end);
    if (v.empty() || *end || !(q.percentile > 50 && q.percentile <= 100))
      throw UsageError("--percentile needs a number in (50, 100], got '" + v + "'");
  } else if (s == "--per-channel") q.per_channel = true;
  else if (s == "--per-tensor") q.per_channel = false;
  else if (s == "--activation-type") {
    const std::string v = next();
    if (v == "uint8") q.activation_type = ocl_infer::DType::UInt8;
    else if (v == "int8") q.activation_type = ocl_infer::DType::Int8;
    else throw UsageError("--activation-type must be uint8 or int8, got '" + v + "'");
  } else if (s == "--exclude") {
    std::stringstream ss(next());
    for (std::string item; std::getline(ss, item, ',');)
      if (!item.empty()) q.exclude.push_back(item);
  } else return false;
  return true;
}

// Quantizes `model` on the images in q.calibration (sorted by name, at most q.max_images; files
// that are not images are skipped with a note, none readable is an InputError) preprocessed with
// `pre` (the crop defaults to the model's input size unless crop_given). Progress on stderr when
// `progress`. Returns the QDQ model's bytes.
std::string quantize_with_images(const std::string& model, const QuantizeArgs& q, Preprocess pre, bool crop_given,
                                 const ocl_infer::SessionOptions& session, bool progress,
                                 ocl_infer::QuantizeReport* report);

// ocl-infer quantize MODEL.onnx --calibration DIR -o OUT.onnx [options]; argv[0] is "quantize".
// Returns the exit status.
int quantize_command(int argc, char** argv);

}  // namespace cli
