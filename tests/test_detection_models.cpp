// torchvision's detectors (models/export_detection.py: SSDlite and Faster R-CNN with random
// weights, exported with their post-processing -- If, Loop, NonZero, TopK, NonMaxSuppression,
// RoiAlign, ScatterElements) against ONNX Runtime's outputs, at two input sizes in one session.
// Detections are compared as sets: every reference box has a partner with the same label, IoU >=
// 0.98 and a score within 1e-3 of the top score, and the counts agree within the boxes whose
// score sits within that tolerance of the cut-off (near-ties at the last place may swap).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
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

double iou(const float* a, const float* b) {
  const double ix = std::max(0.0, std::min<double>(a[2], b[2]) - std::max<double>(a[0], b[0]));
  const double iy = std::max(0.0, std::min<double>(a[3], b[3]) - std::max<double>(a[1], b[1]));
  const double inter = ix * iy;
  const double ua = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter;
  return ua > 0 ? inter / ua : (inter == 0 && std::equal(a, a + 4, b) ? 1.0 : 0.0);
}

struct Detections {
  Tensor boxes, scores, labels;
  int64_t count() const { return scores.numel(); }
};

// How many of `ref`'s detections have no partner in `got` (same label, IoU >= 0.98, score within
// `tol`); each partner is used once.
int64_t unmatched(const Detections& ref, const Detections& got, double tol, std::string* first) {
  std::vector<bool> used(static_cast<size_t>(got.count()), false);
  int64_t missing = 0;
  for (int64_t i = 0; i < ref.count(); ++i) {
    const float* rb = ref.boxes.data<float>() + 4 * i;
    bool found = false;
    for (int64_t j = 0; j < got.count() && !found; ++j) {
      if (used[j] || got.labels.data<int64_t>()[j] != ref.labels.data<int64_t>()[i]) continue;
      if (std::fabs(got.scores.data<float>()[j] - ref.scores.data<float>()[i]) > tol) continue;
      if (iou(rb, got.boxes.data<float>() + 4 * j) < 0.98) continue;
      used[j] = found = true;
    }
    if (!found) {
      if (missing == 0 && first)
        *first = "detection " + std::to_string(i) + " label " + std::to_string(ref.labels.data<int64_t>()[i]) +
                 " score " + std::to_string(ref.scores.data<float>()[i]) + " box " + std::to_string(rb[0]) + "," +
                 std::to_string(rb[1]) + "," + std::to_string(rb[2]) + "," + std::to_string(rb[3]);
      ++missing;
    }
  }
  return missing;
}

class DetectionModel : public ::testing::TestWithParam<std::string> {};

TEST_P(DetectionModel, MatchesOnnxRuntimeAtTwoSizes) {
  const std::string base = models_dir() + "/" + GetParam();
  ASSERT_TRUE(exists(base + ".onnx")) << base << ".onnx is missing: run models/make_all.sh " << models_dir();
  std::vector<std::string> log;
  ocl_infer::SessionOptions opt;
  opt.log = [&log](const std::string& l) { log.push_back(l); };
  auto s = ocl_infer::Session::from_file(base + ".onnx", opt);
  for (int round = 0; round < 2; ++round)
    for (int k = 0; k < 2; ++k) {
      const std::string in = base + ".in" + std::to_string(k) + ".npy";
      auto out = s.run({{"images", cli::read_npy(in)}});
      Detections got{out.at("boxes"), out.at("scores"), out.at("labels")};
      const std::string ref_base = base + ".out" + std::to_string(k) + "_";
      Detections ref{cli::read_npy(ref_base + "boxes.npy"), cli::read_npy(ref_base + "scores.npy"),
                     cli::read_npy(ref_base + "labels.npy")};
      ASSERT_EQ(got.boxes.shape.size(), 2u);
      ASSERT_EQ(got.labels.dtype, ocl_infer::DType::Int64);
      float top = 0, last = 1e30f;
      for (int64_t i = 0; i < ref.count(); ++i) {
        top = std::max(top, ref.scores.data<float>()[i]);
        last = std::min(last, ref.scores.data<float>()[i]);
      }
      const double tol = 1e-3 * top;
      // Reference detections within tol of the lowest kept score may fall either side of the cut.
      int64_t near_cut = 0;
      for (int64_t i = 0; i < ref.count(); ++i) near_cut += ref.scores.data<float>()[i] <= last + tol;
      std::string first;
      const int64_t missing = unmatched(ref, got, tol, &first);
      std::cout << GetParam() << " input " << k << ": " << got.count() << " detections (onnxruntime "
                << ref.count() << "), " << missing << " without a partner\n";
      EXPECT_LE(missing, near_cut) << "input " << k << ": first unmatched " << first;
      EXPECT_LE(std::llabs(got.count() - ref.count()), near_cut) << "input " << k;
      EXPECT_GT(ref.count(), 0) << "the reference has no detection: the test would not check anything";
    }
  // The second round ran with the same counts: no segment was planned again.
  int planned = 0, cached = 0;
  for (auto& l : log) {
    planned += l.find(": planned in") != std::string::npos;
    cached += l.find("plan found in the cache") != std::string::npos;
  }
  std::cout << GetParam() << ": segment plans made " << planned << ", found in the cache " << cached << "\n";
  EXPECT_GT(cached, 0);
}

INSTANTIATE_TEST_SUITE_P(Torchvision, DetectionModel,
                         ::testing::Values("ssdlite320_mobilenet_v3_large", "fasterrcnn_mobilenet_v3_large_320_fpn"));

}  // namespace
