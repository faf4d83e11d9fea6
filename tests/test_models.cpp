// Whole exported models against PyTorch's outputs (made by models/make_all.sh into the models
// folder, $OCL_INFER_MODELS_DIR or <build>/models): within 1e-4 x max|reference|, same top-1.
// The demo model is also run from the sample photo through the CLI's preprocessing and must give
// PyTorch's top-5 for the same preprocessing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <sys/stat.h>

#include "ocl_infer/ocl_infer.hpp"
#include "tools/cli_io.hpp"

namespace {

using ocl_infer::Tensor;

std::string models_dir() {
  if (const char* d = std::getenv("OCL_INFER_MODELS_DIR"); d && *d) return d;
  return OCL_INFER_DEFAULT_MODELS_DIR;
}

bool exists(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0;
}

int64_t argmax(const Tensor& t) {
  const float* p = t.data<float>();
  return std::max_element(p, p + t.numel()) - p;
}

class ModelTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ModelTest, MatchesPyTorch) {
  const std::string base = models_dir() + "/" + GetParam();
  ASSERT_TRUE(exists(base + ".onnx")) << base << ".onnx is missing: run models/make_all.sh " << models_dir();
  Tensor x = cli::read_npy(base + ".input.npy");
  Tensor ref = cli::read_npy(base + ".output.npy");
  auto s = ocl_infer::Session::from_file(base + ".onnx");
  auto out = s.run({{s.inputs()[0].name, x}});
  const Tensor& y = out.at(s.outputs()[0].name);
  ASSERT_EQ(y.shape, ref.shape);
  double mx = 0, err = 0;
  for (int64_t i = 0; i < ref.numel(); ++i) {
    mx = std::max<double>(mx, std::fabs(ref.data<float>()[i]));
    err = std::max<double>(err, std::fabs(ref.data<float>()[i] - y.data<float>()[i]));
  }
  std::cout << GetParam() << ": max|err| = " << err << ", max|ref| = " << mx << ", ratio " << err / mx << "\n";
  EXPECT_LE(err, 1e-4 * mx);
  EXPECT_EQ(argmax(y), argmax(ref));
}

INSTANTIATE_TEST_SUITE_P(Torchvision, ModelTest,
                         ::testing::Values("resnet18", "mobilenet_v2", "squeezenet1_1"));

std::vector<double> json_numbers(const std::string& text, const std::string& key) {
  std::vector<double> r;
  std::regex re("\"" + key + "\"\\s*:\\s*(-?[0-9.eE+-]+)");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator(); ++it)
    r.push_back(std::stod((*it)[1]));
  return r;
}

std::vector<double> json_array(const std::string& text, const std::string& key) {
  std::vector<double> r;
  std::regex re("\"" + key + "\"\\s*:\\s*\\[([^\\]]*)\\]");
  std::smatch m;
  if (!std::regex_search(text, m, re)) return r;
  std::stringstream ss(m[1]);
  std::string item;
  while (std::getline(ss, item, ',')) r.push_back(std::stod(item));
  return r;
}

// int8 QDQ models made by ONNX Runtime's static quantizer (models/export_quantized.py) against
// ONNX Runtime's own outputs for them: the runtime's integer kernels follow ORT's requantization,
// so the logits must agree within one quantization step of the output (measured: bit for bit) and
// the top-1 must be the same. The fused plan must be integer end to end (only the input's Q and the
// output's DQ left as their own kernels) with about a quarter of the fp32 plan's activation arena.
class QdqModelTest : public ::testing::TestWithParam<std::string> {};

int64_t json_int(const std::string& js, const std::string& key) {
  auto v = json_numbers(js, key);
  return v.empty() ? -1 : static_cast<int64_t>(v[0]);
}

TEST_P(QdqModelTest, MatchesOnnxRuntime) {
  const std::string name = GetParam(), dir = models_dir() + "/int8";
  const std::string model = dir + "/" + name + ".qdq.onnx";
  ASSERT_TRUE(exists(model)) << model << " is missing: run models/make_all.sh " << models_dir();
  auto s = ocl_infer::Session::from_file(model);
  for (const char* photo : {"dog", "eagle", "giraffe"}) {
    SCOPED_TRACE(photo);
    const std::string base = dir + "/" + name + ".qdq." + photo;
    Tensor x = cli::read_npy(base + ".input.npy");
    Tensor ref = cli::read_npy(base + ".output.npy");
    auto out = s.run({{s.inputs()[0].name, x}});
    const Tensor& y = out.at(s.outputs()[0].name);
    ASSERT_EQ(y.shape, ref.shape);
    // The output's quantization step: the smallest gap between distinct reference values.
    std::vector<float> v(ref.data<float>(), ref.data<float>() + ref.numel());
    std::sort(v.begin(), v.end());
    double step = INFINITY, err = 0;
    for (size_t i = 1; i < v.size(); ++i)
      if (v[i] > v[i - 1]) step = std::min<double>(step, v[i] - v[i - 1]);
    int64_t differ = 0;
    for (int64_t i = 0; i < ref.numel(); ++i) {
      const double e = std::fabs(ref.data<float>()[i] - y.data<float>()[i]);
      err = std::max(err, e);
      differ += e > 0;
    }
    std::cout << name << " " << photo << ": max|err| = " << err << " (output step " << step << "), " << differ
              << " of " << ref.numel() << " logits differ\n";
    EXPECT_LE(err, step * 1.01);
    EXPECT_EQ(argmax(y), argmax(ref));
  }
  const std::string plan = s.dump("plan.json");
  size_t qdq = 0;
  for (const char* k : {"ew_ternary", "quant:quantize_linear", "quant:dequantize_linear"})
    for (size_t at = 0; (at = plan.find(k, at)) != std::string::npos; ++at) ++qdq;
  EXPECT_GE(qdq, 1u) << "the input's QuantizeLinear is missing from the plan dump";
  EXPECT_LE(qdq, 2u) << "standalone QuantizeLinear/DequantizeLinear kernels left in the plan";
  const std::string fp32_model = models_dir() + "/" + name + ".onnx";
  if (exists(fp32_model)) {
    auto f = ocl_infer::Session::from_file(fp32_model);
    f.run({{f.inputs()[0].name, cli::read_npy(dir + "/" + name + ".qdq.dog.input.npy")}});
    const int64_t a8 = json_int(plan, "peak_activation_bytes"), a32 = json_int(f.dump("plan.json"), "peak_activation_bytes");
    std::cout << name << ": activation arena int8 " << a8 << " bytes, fp32 " << a32 << " bytes\n";
    EXPECT_LE(a8, a32 * 3 / 10) << "the int8 plan's activations should take about a quarter of fp32's";
  }
}

INSTANTIATE_TEST_SUITE_P(OnnxRuntimeQuantizer, QdqModelTest,
                         ::testing::Values("resnet18", "mobilenet_v2", "squeezenet1_1", "efficientnet_lite0"));

TEST(DemoModel, SamplePhotoTop5MatchesPyTorch) {
  const std::string dir = models_dir();
  ASSERT_TRUE(exists(dir + "/efficientnet_lite0.onnx")) << "run models/make_all.sh " << dir;
  std::ifstream f(dir + "/efficientnet_lite0.dog.top5.json");
  ASSERT_TRUE(f.good());
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string js = ss.str();
  auto want_idx = json_numbers(js, "index");
  auto mean = json_array(js, "mean"), stdv = json_array(js, "std");
  ASSERT_EQ(want_idx.size(), 5u);
  ASSERT_EQ(mean.size(), 3u);
  ASSERT_EQ(stdv.size(), 3u);

  cli::Preprocess p;
  for (int k = 0; k < 3; ++k) p.mean[k] = static_cast<float>(mean[k]), p.std[k] = static_cast<float>(stdv[k]);
  // dog.png holds exactly the pixels the reference decoded from dog.jpg (JPEG decoders differ by a
  // few levels), so the two preprocessed tensors must agree to float rounding.
  Tensor x = cli::load_image(dir + "/dog.png", p);
  // The CLI's preprocessing must reproduce the reference's tensor (same resize arithmetic).
  Tensor x_ref = cli::read_npy(dir + "/efficientnet_lite0.dog.input.npy");
  ASSERT_EQ(x.shape, x_ref.shape);
  double perr = 0;
  for (int64_t i = 0; i < x.numel(); ++i)
    perr = std::max<double>(perr, std::fabs(x.data<float>()[i] - x_ref.data<float>()[i]));
  EXPECT_LE(perr, 1e-4) << "preprocessing differs from the reference";

  auto s = ocl_infer::Session::from_file(dir + "/efficientnet_lite0.onnx");
  auto out = s.run({{s.inputs()[0].name, x}});
  const Tensor& y = out.at(s.outputs()[0].name);
  std::vector<int64_t> idx(y.numel());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<int64_t>(i);
  const float* v = y.data<float>();
  std::partial_sort(idx.begin(), idx.begin() + 5, idx.end(), [&](int64_t a, int64_t b) { return v[a] > v[b]; });
  for (int k = 0; k < 5; ++k) EXPECT_EQ(idx[k], static_cast<int64_t>(want_idx[k])) << "rank " << k;

  Tensor logits = cli::read_npy(dir + "/efficientnet_lite0.dog.output.npy");
  double mx = 0, err = 0;
  for (int64_t i = 0; i < logits.numel(); ++i) {
    mx = std::max<double>(mx, std::fabs(logits.data<float>()[i]));
    err = std::max<double>(err, std::fabs(logits.data<float>()[i] - v[i]));
  }
  // The input differs from the reference by float rounding of the resize only, so the logits agree
  // closely but not bit for bit.
  EXPECT_LE(err, 1e-3 * mx);
}

}  // namespace
