// PyTorch exports with control flow, causal masks and recurrent layers (models/export_graph_cases.py)
// and real OCR models (models/export_ocr.py) against ONNX Runtime's outputs. Every case of a model runs in one session, so the cases also
// check re-planning for a new sequence length or a new control value. Each output element must
// satisfy |got - want| <= atol + rtol * |want| with the model's tolerance from graph_cases.txt.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <dirent.h>
#include <fstream>
#include <sstream>
#include <sys/stat.h>

#include "ocl_infer/ocl_infer.hpp"
#include "tools/cli_io.hpp"

namespace {

using ocl_infer::DType;
using ocl_infer::Tensor;

std::string models_dir() {
  if (const char* d = std::getenv("OCL_INFER_MODELS_DIR"); d && *d) return d;
  return OCL_INFER_DEFAULT_MODELS_DIR;
}

bool exists(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0;
}

struct Case {
  std::string model;
  int index = 0;
  double rtol = 0, atol = 0;
};

// graph_cases.txt (models/export_graph_cases.py) and ocr_cases.txt (models/export_ocr.py).
std::vector<Case> read_manifest() {
  std::vector<Case> r;
  for (const char* file : {"/graph_cases.txt", "/ocr_cases.txt"}) {
    std::ifstream f(models_dir() + file);
    std::string line;
    while (std::getline(f, line)) {
      std::istringstream ls(line);
      Case c;
      if (ls >> c.model >> c.index >> c.rtol >> c.atol) r.push_back(c);
    }
  }
  return r;
}

// Reference files name an output as the CLI does: '/' (paddle2onnx's names have it) becomes '_'.
std::string file_name_of(std::string value_name) {
  std::replace(value_name.begin(), value_name.end(), '/', '_');
  return value_name;
}

// The files "<model>.c<k>.<kind>.<name>.npy" of one case, by value name.
std::map<std::string, Tensor> read_case(const std::string& model, int k, const std::string& kind) {
  const std::string prefix = model + ".c" + std::to_string(k) + "." + kind + ".";
  std::map<std::string, Tensor> r;
  if (DIR* d = opendir(models_dir().c_str())) {
    while (dirent* e = readdir(d)) {
      const std::string f = e->d_name;
      if (f.rfind(prefix, 0) == 0 && f.size() > prefix.size() + 4 && f.substr(f.size() - 4) == ".npy")
        r[f.substr(prefix.size(), f.size() - prefix.size() - 4)] = cli::read_npy(models_dir() + "/" + f);
    }
    closedir(d);
  }
  return r;
}

double element(const Tensor& t, int64_t i) {
  switch (t.dtype) {
    case DType::Float32: return t.data<float>()[i];
    case DType::Int64: return static_cast<double>(t.data<int64_t>()[i]);
    case DType::Int32: return t.data<int32_t>()[i];
    case DType::Bool: return t.data<uint8_t>()[i];
    default: ADD_FAILURE() << "unexpected output dtype " << ocl_infer::dtype_name(t.dtype); return 0;
  }
}

class ExportedModel : public ::testing::TestWithParam<std::string> {};

TEST_P(ExportedModel, MatchesOnnxRuntime) {
  const std::string name = GetParam();
  const std::string path = models_dir() + "/" + name + ".onnx";
  ASSERT_TRUE(exists(path)) << path << " is missing: run models/make_all.sh " << models_dir();
  auto s = ocl_infer::Session::from_file(path);
  int ran = 0;
  for (const Case& c : read_manifest()) {
    if (c.model != name) continue;
    ++ran;
    std::map<std::string, Tensor> got;
    for (auto& [out, t] : s.run(read_case(name, c.index, "in"))) got[file_name_of(out)] = std::move(t);
    auto want = read_case(name, c.index, "out");
    ASSERT_FALSE(want.empty()) << name << " case " << c.index << ": no reference outputs";
    for (auto& [out, ref] : want) {
      SCOPED_TRACE(name + " case " + std::to_string(c.index) + " output '" + out + "'");
      ASSERT_TRUE(got.count(out));
      const Tensor& g = got.at(out);
      ASSERT_EQ(g.shape, ref.shape);
      ASSERT_EQ(g.dtype, ref.dtype);
      double worst = 0;
      int64_t bad = 0, first_bad = -1;
      for (int64_t i = 0; i < ref.numel(); ++i) {
        const double a = element(g, i), b = element(ref, i);
        const double excess = std::fabs(a - b) - (c.atol + c.rtol * std::fabs(b));
        if (!(excess <= 0)) {
          if (first_bad < 0) first_bad = i;
          ++bad;
        }
        worst = std::max(worst, std::fabs(a - b));
      }
      std::cout << name << " case " << c.index << " '" << out << "' " << ocl_infer::shape_to_string(ref.shape)
                << ": max |diff| " << worst << "\n";
      EXPECT_EQ(bad, 0) << bad << " elements beyond tolerance; first at " << first_bad << ": got "
                        << element(g, first_bad) << ", onnxruntime " << element(ref, first_bad);
    }
  }
  EXPECT_GT(ran, 0) << "graph_cases.txt lists no case of " << name;
}

INSTANTIATE_TEST_SUITE_P(PyTorch, ExportedModel,
                         ::testing::Values("if_sample_rate", "loop_nested_if", "loop_sequence", "gpt_decoder", "lstm_classifier", "bigru", "lstm_encoder",
                                           "lstm2_batch_first"));

// Real OCR models (PaddleOCR PP-OCRv4 detector and recognizer, its direction classifier; RapidOCR's
// ONNX files) on a rendered page and its text lines, two input sizes each for the detector and
// the recognizer (models/export_ocr.py).
INSTANTIATE_TEST_SUITE_P(PaddleOCR, ExportedModel,
                         ::testing::Values("ppocr_v4_det", "ppocr_v4_rec", "ppocr_mobile_v2_cls"));

// The speech-activity style model run as its users run it: the spoken test sentence (espeak-ng)
// chunk by chunk, each chunk's LSTM state fed into the next, at 16 and 8 kHz (the If on "sr"
// picks the front-end) in one session. Every chunk's probability must match ONNX Runtime's
// within 1e-4 -- the state carried through 300 chunks would show any drift.
TEST(ExportedModels, SpeechActivityChunkByChunk) {
  const std::string base = models_dir() + "/vad_like";
  ASSERT_TRUE(exists(base + ".onnx")) << base << ".onnx is missing: run models/make_all.sh " << models_dir();
  auto s = ocl_infer::Session::from_file(base + ".onnx");
  for (int64_t rate : {16000, 8000}) {
    const Tensor audio = cli::read_npy(base + ".audio" + std::to_string(rate) + ".npy");
    const Tensor want = cli::read_npy(base + ".probs" + std::to_string(rate) + ".npy");
    ASSERT_EQ(audio.shape.size(), 2u);
    const int64_t chunks = audio.shape[0], len = audio.shape[1];
    ASSERT_EQ(want.numel(), chunks);
    ASSERT_GE(chunks, 100);
    Tensor h(DType::Float32, {2, 1, 64}), c(DType::Float32, {2, 1, 64});
    std::fill(h.data<float>(), h.data<float>() + h.numel(), 0.0f);
    std::fill(c.data<float>(), c.data<float>() + c.numel(), 0.0f);
    Tensor sr(DType::Int64, {});
    sr.data<int64_t>()[0] = rate;
    double worst = 0, lo = 1, hi = 0;
    for (int64_t k = 0; k < chunks; ++k) {
      Tensor x(DType::Float32, {1, len});
      std::copy(audio.data<float>() + k * len, audio.data<float>() + (k + 1) * len, x.data<float>());
      auto out = s.run({{"x", x}, {"sr", sr}, {"h", h}, {"c", c}});
      const double p = out.at("prob").data<float>()[0], ref = want.data<float>()[k];
      worst = std::max(worst, std::fabs(p - ref));
      lo = std::min(lo, ref), hi = std::max(hi, ref);
      ASSERT_NEAR(p, ref, 1e-4) << rate << " Hz, chunk " << k;
      h = out.at("hn");
      c = out.at("cn");
    }
    std::cout << "vad_like " << rate << " Hz: " << chunks << " chunks, probabilities " << lo << ".." << hi
              << ", max |diff| from onnxruntime " << worst << "\n";
    EXPECT_GT(hi - lo, 0.1) << "the probabilities hardly move: the comparison would check little";
  }
}

}  // namespace
