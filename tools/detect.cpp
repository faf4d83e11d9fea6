#include "tools/detect.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <numeric>

#include "tools/profile_report.hpp"

#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#endif
#include "stb_easy_font.h"
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

namespace cli {

using ocl_infer::DType;
using ocl_infer::InputError;
using ocl_infer::Tensor;

const char* layout_name(DetectionLayout l) {
  switch (l) {
    case DetectionLayout::BoxesScoresLabels:
      return "boxes/scores/labels";
    case DetectionLayout::YoloV8:
      return "YOLOv8 [1,4+C,N]";
    case DetectionLayout::YoloV5:
      return "YOLOv5 [1,N,5+C]";
    default:
      return "unknown";
  }
}

namespace {

// The layout as --json names it.
const char* layout_key(DetectionLayout l) {
  switch (l) {
    case DetectionLayout::BoxesScoresLabels:
      return "boxes_scores_labels";
    case DetectionLayout::YoloV8:
      return "yolov8";
    case DetectionLayout::YoloV5:
      return "yolov5";
    default:
      return "unknown";
  }
}

bool is_float(DType t) {
  return t == DType::Float32 || t == DType::Float16 || t == DType::Float64;
}
bool is_integer(DType t) {
  return t == DType::Int64 || t == DType::Int32 || t == DType::Int16 || t == DType::Int8 ||
         t == DType::UInt8 || t == DType::UInt16 || t == DType::UInt32 || t == DType::UInt64;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string describe(const std::vector<OutputDesc>& outputs) {
  std::string r;
  for (const auto& o : outputs)
    r += (r.empty() ? "" : ", ") + ("'" + o.name + "' " + ocl_infer::dtype_name(o.dtype) + " " +
                                    ocl_infer::shape_to_string(o.shape));
  return r.empty() ? "none" : r;
}

[[noreturn]] void not_detections(const std::vector<OutputDesc>& outputs, const std::string& why) {
  throw InputError(
      "the model's outputs cannot be read as detections (" + why + "): " + describe(outputs) +
      "; --task detect reads boxes [N,4] + scores [N] + labels [N] (a model with its own NMS, "
      "as torchvision exports them), one [1,4+C,N] tensor (YOLOv8) or one [1,N,5+C] tensor "
      "(YOLOv5)");
}

// A dim that is open (-1) fits any value.
bool dim_is(int64_t d, int64_t v) {
  return d < 0 || d == v;
}

// Element i of a float or integer tensor as double.
double value_at(const Tensor& t, int64_t i) {
  switch (t.dtype) {
    case DType::Float32:
      return t.data<float>()[i];
    case DType::Float16:
      return ocl_infer::half_to_float(t.data<uint16_t>()[i]);
    case DType::Float64:
      return t.data<double>()[i];
    case DType::Int64:
      return static_cast<double>(t.data<int64_t>()[i]);
    case DType::Int32:
      return t.data<int32_t>()[i];
    case DType::Int16:
      return t.data<int16_t>()[i];
    case DType::Int8:
      return t.data<int8_t>()[i];
    case DType::UInt8:
      return t.data<uint8_t>()[i];
    case DType::UInt16:
      return t.data<uint16_t>()[i];
    case DType::UInt32:
      return t.data<uint32_t>()[i];
    case DType::UInt64:
      return static_cast<double>(t.data<uint64_t>()[i]);
    default:
      throw InputError(std::string("detections of type ") + ocl_infer::dtype_name(t.dtype) +
                       " cannot be read");
  }
}

// Floats into a vector, so that decoding reads one type.
std::vector<float> as_floats(const Tensor& t) {
  std::vector<float> v(static_cast<size_t>(t.numel()));
  if (t.dtype == DType::Float32)
    std::copy(t.data<float>(), t.data<float>() + t.numel(), v.begin());
  else
    for (int64_t i = 0; i < t.numel(); ++i) v[i] = static_cast<float>(value_at(t, i));
  return v;
}

Detection from_center(float cx, float cy, float w, float h, int64_t label, float score) {
  Detection d;
  d.label = label;
  d.score = score;
  d.box[0] = cx - w / 2;
  d.box[1] = cy - h / 2;
  d.box[2] = cx + w / 2;
  d.box[3] = cy + h / 2;
  return d;
}

bool finite_box(const Detection& d) {
  return std::isfinite(d.box[0]) && std::isfinite(d.box[1]) && std::isfinite(d.box[2]) &&
         std::isfinite(d.box[3]);
}

}  // namespace

LayoutChoice choose_layout(const std::vector<OutputDesc>& outputs) {
  LayoutChoice c;
  // By name first: torchvision's exports call them boxes, scores and labels.
  for (size_t i = 0; i < outputs.size(); ++i) {
    const std::string n = lower(outputs[i].name);
    if (n == "boxes" && c.boxes < 0)
      c.boxes = static_cast<int>(i);
    else if (n == "scores" && c.scores < 0)
      c.scores = static_cast<int>(i);
    else if (n == "labels" && c.labels < 0)
      c.labels = static_cast<int>(i);
  }
  // A name on the wrong tensor (an export that named its outputs in another order) loses to dtypes.
  const auto fits = [&](int i, bool integer_ok) {
    const DType t = outputs[i].dtype;
    return t == DType::Undefined || is_float(t) || (integer_ok && is_integer(t));
  };
  const bool by_name = c.boxes >= 0 && c.scores >= 0 && c.labels >= 0 && fits(c.boxes, false) &&
                       fits(c.scores, false) && fits(c.labels, true);
  if (!by_name) {
    c.boxes = c.scores = c.labels = -1;
    // By shape and dtype: float [N,4] (or [1,N,4]), float [N], integer [N].
    for (size_t i = 0; i < outputs.size(); ++i) {
      const auto& o = outputs[i];
      const auto& s = o.shape;
      const int idx = static_cast<int>(i);
      if (is_float(o.dtype) && !s.empty() && s.back() == 4 &&
          (s.size() == 2 || (s.size() == 3 && dim_is(s[0], 1))) && c.boxes < 0)
        c.boxes = idx;
      else if (is_float(o.dtype) && s.size() == 1 && c.scores < 0)
        c.scores = idx;
      else if (is_integer(o.dtype) && s.size() == 1 && c.labels < 0)
        c.labels = idx;
    }
  }
  if (c.boxes >= 0 && c.scores >= 0 && c.labels >= 0) {
    const auto& b = outputs[c.boxes];
    if (!is_float(b.dtype) || b.shape.empty() || !dim_is(b.shape.back(), 4) || b.shape.size() > 3)
      not_detections(outputs, "'" + b.name + "' is not float [N,4]");
    if (!is_float(outputs[c.scores].dtype))
      not_detections(outputs, "'" + outputs[c.scores].name + "' is not float");
    c.layout = DetectionLayout::BoxesScoresLabels;
    return c;
  }
  c.boxes = c.scores = c.labels = -1;
  // One float tensor of rank 3 with batch 1: a YOLO head.
  for (size_t i = 0; i < outputs.size(); ++i) {
    const auto& o = outputs[i];
    if (!is_float(o.dtype) || o.shape.size() != 3) continue;
    if (c.tensor >= 0) not_detections(outputs, "more than one rank-3 output");
    c.tensor = static_cast<int>(i);
  }
  if (c.tensor < 0)
    not_detections(outputs, "no boxes/scores/labels outputs and no float tensor of rank 3");
  const auto& s = outputs[c.tensor].shape;
  if (!dim_is(s[0], 1))
    not_detections(outputs, "batch " + std::to_string(s[0]) + ", only 1 is read");
  const int64_t a = s[1], b = s[2];
  if (a < 0 || b < 0) {
    c.layout = DetectionLayout::YoloV8;
    return c;
  }
  // Channels are the shorter axis: 4+C (YOLOv8) first, or 5+C (YOLOv5) last.
  if (a < b) {
    if (a < 5) not_detections(outputs, "[1,4+C,N] needs at least 5 channels");
    c.layout = DetectionLayout::YoloV8;
  } else {
    if (b < 6) not_detections(outputs, "[1,N,5+C] needs at least 6 channels");
    c.layout = DetectionLayout::YoloV5;
  }
  return c;
}

const char* detector_layout(const std::vector<OutputDesc>& outputs) {
  LayoutChoice c;
  try {
    c = choose_layout(outputs);
  } catch (const ocl_infer::InputError&) {
    return nullptr;
  }
  if (c.layout == DetectionLayout::BoxesScoresLabels) {
    const auto named = [&](int i, const char* n) { return lower(outputs[i].name) == n; };
    return named(c.boxes, "boxes") && named(c.scores, "scores") && named(c.labels, "labels") ? layout_name(c.layout)
                                                                                            : nullptr;
  }
  if (c.tensor < 0) return nullptr;
  const auto& s = outputs[c.tensor].shape;
  if (s.size() != 3 || s[0] != 1 || s[1] < 0 || s[2] < 0) return nullptr;
  const int64_t channels = std::min(s[1], s[2]), boxes = std::max(s[1], s[2]);
  return boxes > channels && channels <= 1005 ? layout_name(c.layout) : nullptr;
}

double box_iou(const float* a, const float* b) {
  const double ix = std::max(0.0, std::min<double>(a[2], b[2]) - std::max<double>(a[0], b[0]));
  const double iy = std::max(0.0, std::min<double>(a[3], b[3]) - std::max<double>(a[1], b[1]));
  const double inter = ix * iy;
  const double area_a = std::max(0.0, static_cast<double>(a[2]) - a[0]) *
                        std::max(0.0, static_cast<double>(a[3]) - a[1]);
  const double area_b = std::max(0.0, static_cast<double>(b[2]) - b[0]) *
                        std::max(0.0, static_cast<double>(b[3]) - b[1]);
  const double uni = area_a + area_b - inter;
  return uni > 0 ? inter / uni : 0.0;
}

std::vector<Detection> non_max_suppression(std::vector<Detection> candidates, float iou,
                                           int max_det) {
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Detection& x, const Detection& y) { return x.score > y.score; });
  constexpr size_t kMaxNms = 30000;
  if (candidates.size() > kMaxNms) candidates.resize(kMaxNms);
  std::vector<Detection> kept;
  for (const auto& d : candidates) {
    if (static_cast<int>(kept.size()) >= max_det) break;
    bool suppressed = false;
    for (const auto& k : kept)
      if (k.label == d.label && box_iou(k.box, d.box) > iou) {
        suppressed = true;
        break;
      }
    if (!suppressed) kept.push_back(d);
  }
  return kept;
}

std::vector<Detection> read_detections(const std::vector<Tensor>& outputs,
                                       const std::vector<std::string>& names,
                                       const LayoutChoice& choice, const DetectionParams& params) {
  std::vector<Detection> cands;
  if (choice.layout == DetectionLayout::BoxesScoresLabels) {
    const Tensor& boxes = outputs.at(choice.boxes);
    const Tensor& scores = outputs.at(choice.scores);
    const Tensor& labels = outputs.at(choice.labels);
    const int64_t n = scores.numel();
    if (boxes.numel() != 4 * n || labels.numel() != n)
      throw InputError("the detection outputs do not agree: '" + names.at(choice.boxes) + "' " +
                       ocl_infer::shape_to_string(boxes.shape) + ", '" + names.at(choice.scores) +
                       "' " + ocl_infer::shape_to_string(scores.shape) + ", '" +
                       names.at(choice.labels) + "' " + ocl_infer::shape_to_string(labels.shape) +
                       " (want [N,4], [N], [N])");
    const std::vector<float> b = as_floats(boxes), s = as_floats(scores);
    for (int64_t i = 0; i < n; ++i) {
      if (!(s[i] > params.conf)) continue;
      Detection d;
      d.label = static_cast<int64_t>(value_at(labels, i));
      d.score = s[i];
      std::copy(b.begin() + 4 * i, b.begin() + 4 * i + 4, d.box);
      if (finite_box(d)) cands.push_back(d);
    }
    // The model ran its own NMS: only order and count are ours.
    std::stable_sort(cands.begin(), cands.end(),
                     [](const Detection& x, const Detection& y) { return x.score > y.score; });
    if (static_cast<int>(cands.size()) > params.max_det) cands.resize(params.max_det);
    return cands;
  }
  const Tensor& t = outputs.at(choice.tensor);
  if (t.shape.size() != 3 || t.shape[0] != 1)
    throw InputError("output '" + names.at(choice.tensor) + "' is " +
                     ocl_infer::shape_to_string(t.shape) +
                     "; a YOLO head is read as [1,4+C,N] or [1,N,5+C] (batch 1)");
  const std::vector<float> v = as_floats(t);
  if (choice.layout == DetectionLayout::YoloV8) {
    const int64_t ch = t.shape[1], n = t.shape[2], classes = ch - 4;
    if (classes < 1)
      throw InputError("output '" + names.at(choice.tensor) + "' " +
                       ocl_infer::shape_to_string(t.shape) +
                       " has no class channels for the YOLOv8 layout [1,4+C,N]");
    auto at = [&](int64_t c, int64_t i) { return v[static_cast<size_t>(c * n + i)]; };
    for (int64_t i = 0; i < n; ++i) {
      int64_t best = 0;
      float score = at(4, i);
      for (int64_t c = 1; c < classes; ++c)
        if (at(4 + c, i) > score) score = at(4 + c, i), best = c;
      if (!(score > params.conf)) continue;
      Detection d = from_center(at(0, i), at(1, i), at(2, i), at(3, i), best, score);
      if (finite_box(d)) cands.push_back(d);
    }
  } else {
    const int64_t n = t.shape[1], ch = t.shape[2], classes = ch - 5;
    if (classes < 1)
      throw InputError("output '" + names.at(choice.tensor) + "' " +
                       ocl_infer::shape_to_string(t.shape) +
                       " has no class channels for the YOLOv5 layout [1,N,5+C]");
    for (int64_t i = 0; i < n; ++i) {
      const float* r = v.data() + i * ch;
      const float obj = r[4];
      if (!(obj > params.conf)) continue;  // ultralytics' candidate filter, before the class scores
      int64_t best = 0;
      for (int64_t c = 1; c < classes; ++c)
        if (r[5 + c] > r[5 + best]) best = c;
      const float score = obj * r[5 + best];
      if (!(score > params.conf)) continue;
      Detection d = from_center(r[0], r[1], r[2], r[3], best, score);
      if (finite_box(d)) cands.push_back(d);
    }
  }
  return non_max_suppression(std::move(cands), params.iou, params.max_det);
}

void map_to_photo(std::vector<Detection>& dets, const LetterboxTransform& t) {
  const double w = t.photo_width, h = t.photo_height;
  for (auto& d : dets) {
    d.box[0] = static_cast<float>(std::clamp(t.to_photo_x(d.box[0]), 0.0, w));
    d.box[1] = static_cast<float>(std::clamp(t.to_photo_y(d.box[1]), 0.0, h));
    d.box[2] = static_cast<float>(std::clamp(t.to_photo_x(d.box[2]), 0.0, w));
    d.box[3] = static_cast<float>(std::clamp(t.to_photo_y(d.box[3]), 0.0, h));
  }
}

namespace {

struct Rgb {
  uint8_t r, g, b;
};

// Ultralytics' 20-colour palette, so that a class has the colour people know from its plots.
const Rgb kPalette[] = {{255, 56, 56},  {255, 157, 151}, {255, 112, 31},  {255, 178, 29},
                        {207, 210, 49}, {72, 249, 10},   {146, 204, 23},  {61, 219, 134},
                        {26, 147, 52},  {0, 212, 187},   {44, 153, 168},  {0, 194, 255},
                        {52, 69, 147},  {100, 115, 255}, {0, 24, 236},    {132, 56, 255},
                        {82, 0, 133},   {203, 56, 255},  {255, 149, 200}, {255, 55, 199}};

Rgb class_colour(int64_t label) {
  const int64_t n = sizeof kPalette / sizeof kPalette[0];
  return kPalette[((label % n) + n) % n];
}

void fill_rect(Image& img, int x0, int y0, int x1, int y1, Rgb c) {
  x0 = std::max(x0, 0), y0 = std::max(y0, 0);
  x1 = std::min(x1, img.width), y1 = std::min(y1, img.height);
  for (int y = y0; y < y1; ++y)
    for (int x = x0; x < x1; ++x) {
      uint8_t* p = &img.rgb[(static_cast<size_t>(y) * img.width + x) * 3];
      p[0] = c.r, p[1] = c.g, p[2] = c.b;
    }
}

// Text with stb_easy_font: it returns each glyph stroke as an axis-aligned quad, filled here
// scaled by `scale` at (x, y) (top left).
void draw_text(Image& img, int x, int y, const std::string& text, int scale, Rgb c) {
  std::vector<char> buf(text.begin(), text.end());
  buf.push_back('\0');
  std::vector<char> vertices(text.size() * 300 + 1024);
  const int quads = stb_easy_font_print(0, 0, buf.data(), nullptr, vertices.data(),
                                        static_cast<int>(vertices.size()));
  for (int q = 0; q < quads; ++q) {
    float xs[4], ys[4];
    for (int k = 0; k < 4; ++k) {
      const char* v = vertices.data() + (static_cast<size_t>(q) * 4 + k) * 16;
      std::copy(v, v + sizeof(float), reinterpret_cast<char*>(&xs[k]));
      std::copy(v + sizeof(float), v + 2 * sizeof(float), reinterpret_cast<char*>(&ys[k]));
    }
    const float qx0 = *std::min_element(xs, xs + 4), qx1 = *std::max_element(xs, xs + 4);
    const float qy0 = *std::min_element(ys, ys + 4), qy1 = *std::max_element(ys, ys + 4);
    fill_rect(img, x + static_cast<int>(std::lround(qx0 * scale)),
              y + static_cast<int>(std::lround(qy0 * scale)),
              x + static_cast<int>(std::lround(qx1 * scale)),
              y + static_cast<int>(std::lround(qy1 * scale)), c);
  }
}

}  // namespace

void draw_detections(Image& img, const std::vector<Detection>& dets,
                     const std::vector<std::string>& labels) {
  const int side = std::min(img.width, img.height);
  const int thick = std::max(2, side / 250);
  const int scale = std::max(1, side / 250);
  std::vector<size_t> order(dets.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return dets[a].score < dets[b].score; });
  for (size_t i : order) {
    const Detection& d = dets[i];
    const Rgb c = class_colour(d.label);
    const int x0 = static_cast<int>(std::lround(d.box[0])),
              y0 = static_cast<int>(std::lround(d.box[1]));
    const int x1 = static_cast<int>(std::lround(d.box[2])),
              y1 = static_cast<int>(std::lround(d.box[3]));
    fill_rect(img, x0, y0, x1, y0 + thick, c);
    fill_rect(img, x0, y1 - thick, x1, y1, c);
    fill_rect(img, x0, y0, x0 + thick, y1, c);
    fill_rect(img, x1 - thick, y0, x1, y1, c);
    const std::string name = d.label >= 0 && d.label < static_cast<int64_t>(labels.size())
                                 ? labels[d.label]
                                 : "class " + std::to_string(d.label);
    char score[16];
    std::snprintf(score, sizeof score, " %.2f", d.score);
    std::string text;
    for (char ch : name + score) text += (ch >= 32 && ch < 127) ? ch : '?';  // the font is ASCII
    std::vector<char> buf(text.begin(), text.end());
    buf.push_back('\0');
    const int tw = stb_easy_font_width(buf.data()) * scale, th = 7 * scale;
    const int pad = scale + 1;
    // The label sits on the box's top edge, inside the photo.
    int ly = y0 - th - 2 * pad;
    if (ly < 0) ly = y0;
    const int lx = std::clamp(x0, 0, std::max(0, img.width - tw - 2 * pad));
    fill_rect(img, lx, ly, lx + tw + 2 * pad, ly + th + 2 * pad, c);
    const bool light = 0.299 * c.r + 0.587 * c.g + 0.114 * c.b > 150;
    draw_text(img, lx + pad, ly + pad, text, scale, light ? Rgb{0, 0, 0} : Rgb{255, 255, 255});
  }
}

namespace {

bool file_exists(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::vector<std::string> read_label_file(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw InputError("cannot read labels file '" + path + "'");
  std::vector<std::string> r;
  std::string line;
  while (std::getline(f, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    r.push_back(line);
  }
  return r;
}

// --labels, else MODEL_STEM.labels.txt, else coco.names beside the model; "" when none.
std::string label_file(const std::string& model, const std::string& given) {
  if (!given.empty()) return given;
  const size_t slash = model.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : model.substr(0, slash);
  std::string stem = slash == std::string::npos ? model : model.substr(slash + 1);
  if (stem.size() > 5 && stem.compare(stem.size() - 5, 5, ".onnx") == 0)
    stem.resize(stem.size() - 5);
  for (const std::string& p : {dir + "/" + stem + ".labels.txt", dir + "/coco.names"})
    if (file_exists(p)) return p;
  return "";
}

// --draw OUT.png for photo k of n: OUT.png, or OUT-1.png, OUT-2.png, ... for several photos.
std::string draw_path(const std::string& out, size_t k, size_t n) {
  if (n == 1) return out;
  const size_t dot = out.rfind('.');
  const size_t slash = out.rfind('/');
  const bool has_ext = dot != std::string::npos && (slash == std::string::npos || dot > slash);
  const std::string suffix = "-" + std::to_string(k + 1);
  return has_ext ? out.substr(0, dot) + suffix + out.substr(dot) : out + suffix;
}

int round_up(int v, int m) {
  return (v + m - 1) / m * m;
}

}  // namespace

int detect_photos(ocl_infer::Session& s, const std::string& model,
                  const std::vector<std::string>& photos, const DetectOptions& o) {
  if (s.inputs().size() != 1)
    throw InputError("--task detect needs a model with one input; this one has " +
                     std::to_string(s.inputs().size()));
  const auto& in = s.inputs()[0];
  const bool nhwc = o.pre.nhwc;
  const auto& is = in.shape;
  const bool rank4 = is.size() == 4 && dim_is(is[0], 1) && dim_is(is[nhwc ? 3 : 1], 3);
  const bool rank3 = is.size() == 3 && dim_is(is[nhwc ? 2 : 0], 3);
  if (in.dtype != DType::Float32 || (!rank4 && !rank3))
    throw InputError(std::string("--task detect needs a float32 image input [1,3,H,W] or [3,H,W]") +
                     (nhwc ? " (with --layout nhwc: [1,H,W,3] or [H,W,3])" : "") +
                     "; the model has '" + in.name + "' " + ocl_infer::dtype_name(in.dtype) + " " +
                     ocl_infer::shape_to_string(is));
  const size_t hw = (rank4 ? 1 : 0) + (nhwc ? 0 : 1);
  const int64_t in_h = is[hw], in_w = is[hw + 1];

  // Layout from the declared outputs: it decides the padding of open input sizes, and a model
  // whose outputs cannot be detections fails before any photo is read.
  // Outputs without a declared type or shape are only known after a run: then the names decide.
  std::vector<OutputDesc> declared;
  bool complete = true, named = false;
  for (const auto& v : s.outputs()) {
    declared.push_back({v.name, v.dtype, v.shape});
    // Declared outputs with open dims (a dynamic batch or box count) are judged on the real ones.
    complete &= v.dtype != DType::Undefined && !v.shape.empty() &&
                std::all_of(v.shape.begin(), v.shape.end(), [](int64_t d) { return d >= 0; });
    named |= lower(v.name) == "boxes";
  }
  const bool yolo =
      complete ? choose_layout(declared).layout != DetectionLayout::BoxesScoresLabels : !named;

  std::vector<std::string> labels;
  const std::string lf = label_file(model, o.labels);
  if (!lf.empty()) labels = read_label_file(lf);
  auto label = [&](int64_t i) {
    return i >= 0 && i < static_cast<int64_t>(labels.size()) ? labels[i]
                                                             : "class " + std::to_string(i);
  };
  if (o.size > 0 && in_h > 0 && in_w > 0)
    std::cerr << "ocl-infer: the model's input size is fixed (" << in_w << "x" << in_h
              << "); --size is not used\n";

  if (o.json)
    std::cout << "{\"device\": \"" << json_escape(s.device().name) << "\", \"results\": [";
  for (size_t k = 0; k < photos.size(); ++k) {
    Image img = decode_image(photos[k]);
    // Open sizes: the longer side becomes --size (a fixed side bounds the scale); YOLO heads want
    // multiples of their largest stride, 32.
    int tw = static_cast<int>(in_w), th = static_cast<int>(in_h);
    if (in_w <= 0 || in_h <= 0) {
      double r = static_cast<double>(o.size > 0 ? o.size : 320) / std::max(img.width, img.height);
      if (in_w > 0) r = std::min(r, static_cast<double>(in_w) / img.width);
      if (in_h > 0) r = std::min(r, static_cast<double>(in_h) / img.height);
      const int nw = std::max(1, static_cast<int>(std::lround(img.width * r)));
      const int nh = std::max(1, static_cast<int>(std::lround(img.height * r)));
      if (in_w <= 0) tw = yolo ? round_up(nw, 32) : nw;
      if (in_h <= 0) th = yolo ? round_up(nh, 32) : nh;
    }
    LetterboxTransform tf;
    Tensor x = letterbox_image(img, tw, th, o.pre, 114.0f, &tf);
    if (rank3) x.shape.erase(x.shape.begin());
    auto outs = s.run({{in.name, x}});

    std::vector<OutputDesc> actual;
    std::vector<Tensor> tensors;
    std::vector<std::string> names;
    for (const auto& v : s.outputs()) {
      Tensor& t = outs.at(v.name);
      actual.push_back({v.name, t.dtype, t.shape});
      names.push_back(v.name);
      tensors.push_back(std::move(t));
    }
    const LayoutChoice choice = choose_layout(actual);
    std::vector<Detection> dets = read_detections(tensors, names, choice, o.params);
    map_to_photo(dets, tf);

    if (o.json) {
      std::cout << (k ? ", " : "") << "{\"image\": \"" << json_escape(photos[k])
                << "\", \"width\": " << img.width << ", \"height\": " << img.height
                << ", \"input\": [" << tw << ", " << th << "], \"layout\": \""
                << layout_key(choice.layout) << "\", \"detections\": [";
      for (size_t i = 0; i < dets.size(); ++i) {
        const auto& d = dets[i];
        char line[160];
        std::snprintf(line, sizeof line, "\"score\": %.6g, \"box\": [%.3f, %.3f, %.3f, %.3f]}",
                      d.score, d.box[0], d.box[1], d.box[2], d.box[3]);
        std::cout << (i ? ", " : "") << "{\"index\": " << d.label << ", \"label\": \""
                  << json_escape(label(d.label)) << "\", " << line;
      }
      std::cout << "]}";
    } else {
      const std::string out_name =
          choice.layout == DetectionLayout::BoxesScoresLabels
              ? ""
              : " " + ocl_infer::shape_to_string(tensors[choice.tensor].shape);
      std::cout << photos[k] << ": " << dets.size()
                << (dets.size() == 1 ? " detection" : " detections") << " (" << img.width << "x"
                << img.height << " photo, " << tw << "x" << th << " input, "
                << layout_name(choice.layout) << out_name << ")\n";
      if (!dets.empty())
        std::cout << "  class  label                 score       x1       y1       x2       y2\n";
      for (const auto& d : dets) {
        char line[200];
        std::snprintf(line, sizeof line, "  %5lld  %-18s  %7.4f  %7.1f  %7.1f  %7.1f  %7.1f\n",
                      static_cast<long long>(d.label), label(d.label).c_str(), d.score, d.box[0],
                      d.box[1], d.box[2], d.box[3]);
        std::cout << line;
      }
    }
    if (!o.draw.empty()) {
      draw_detections(img, dets, labels);
      const std::string path = draw_path(o.draw, k, photos.size());
      write_png(path, img);
      std::cerr << "ocl-infer: wrote " << path << " (" << img.width << "x" << img.height << ", "
                << dets.size() << (dets.size() == 1 ? " box" : " boxes") << ")\n";
    }
  }
  if (o.json) std::cout << "]}\n";
  return 0;
}

}  // namespace cli
