// Object detection on photos for `ocl-infer --task detect`: letterbox the photo into the model's
// input, read the outputs as detections in one of three layouts, suppress overlaps (on the host),
// map the boxes back to photo pixels, print them and optionally draw them. Public API only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ocl_infer/ocl_infer.hpp"
#include "tools/cli_io.hpp"

namespace cli {

// How a model's outputs hold detections.
enum class DetectionLayout {
  Unknown,
  // boxes [N,4] (x1,y1,x2,y2, input pixels), scores [N], labels [N]: the model ran its own NMS
  // (torchvision's exports). A leading batch dim of 1 is accepted.
  BoxesScoresLabels,
  // One tensor [1, 4+C, N]: cx,cy,w,h (input pixels) then C class scores, no objectness.
  YoloV8,
  // One tensor [1, N, 5+C]: cx,cy,w,h, objectness, C class scores; score = objectness * class.
  YoloV5,
};
// "YOLOv8 [1,4+C,N]", ... for messages and the table.
const char* layout_name(DetectionLayout l);

// A model output as the layout choice sees it: declared (dims may be -1) or actual.
struct OutputDesc {
  std::string name;
  ocl_infer::DType dtype = ocl_infer::DType::Undefined;
  std::vector<int64_t> shape;
};

// Which outputs hold what. For a single-tensor layout `tensor` is its index; for
// BoxesScoresLabels, `boxes`, `scores`, `labels`.
struct LayoutChoice {
  DetectionLayout layout = DetectionLayout::Unknown;
  int tensor = -1, boxes = -1, scores = -1, labels = -1;
};

// Picks the layout from output names ("boxes", "scores", "labels", unless their dtypes say
// otherwise), else shapes and dtypes. Declared shapes may have open dims (-1): a rank-3 tensor
// whose last two dims are open reads as YoloV8 until a run's shapes decide. Throws InputError
// naming every output's dtype and shape when the outputs cannot be read as detections.
LayoutChoice choose_layout(const std::vector<OutputDesc>& outputs);

// For a photo given without --task: the layout's name when the declared outputs are plainly a
// detector's, else nullptr. Stricter than choose_layout: outputs named boxes, scores and labels
// (a model with its own NMS), or one fully declared float tensor [1,4+C,N] / [1,N,5+C] with
// more boxes than channels and at most 1,000 classes -- a classifier's [1,C], a segmenter's map
// or a text recognizer's [1,T,C] (T < C) never reads as one.
const char* detector_layout(const std::vector<OutputDesc>& outputs);

// One detection. `box` is x1,y1,x2,y2: input pixels after decoding, photo pixels after mapping.
struct Detection {
  int64_t label = 0;
  float score = 0;
  float box[4] = {0, 0, 0, 0};
};

struct DetectionParams {
  float conf = 0.25f;  // keep scores > conf
  float iou = 0.45f;   // suppress a box whose IoU with a kept box of its class is > iou
  int max_det = 100;   // keep at most this many, highest scores first
};

// The detections in the outputs of one run, in input pixels, best first. For the YOLO layouts:
// each box takes its best class, scores > conf are kept, then class-aware greedy NMS (sort by
// score, drop same-class boxes with IoU > iou, as ultralytics' offset-by-class NMS does) and
// max_det. For BoxesScoresLabels (the model's own NMS): scores > conf, then max_det. Throws
// InputError when the tensors do not fit `choice` (a batch other than 1, too few channels).
std::vector<Detection> read_detections(const std::vector<ocl_infer::Tensor>& outputs,
                                       const std::vector<std::string>& names,
                                       const LayoutChoice& choice, const DetectionParams& params);

// Greedy class-aware non-maximum suppression on the host: `candidates` sorted best first (stable),
// at most 30000 of them considered (as ultralytics' max_nms), then kept while no kept box of the
// same label overlaps with IoU > iou, until max_det are kept.
std::vector<Detection> non_max_suppression(std::vector<Detection> candidates, float iou,
                                           int max_det);

// IoU of two x1,y1,x2,y2 boxes (0 when both are empty).
double box_iou(const float* a, const float* b);

// Maps boxes from input pixels to photo pixels through `t` and clips them to the photo.
void map_to_photo(std::vector<Detection>& dets, const LetterboxTransform& t);

// Draws each detection's box (a colour per class) and "label score" text on `img`, lowest score
// first so the best ones stay on top.
void draw_detections(Image& img, const std::vector<Detection>& dets,
                     const std::vector<std::string>& labels);

// What `ocl-infer MODEL PHOTO... --task detect` was asked for.
struct DetectOptions {
  DetectionParams params;
  std::string labels;  // --labels FILE; "": MODEL_STEM.labels.txt, else coco.names beside the model
  std::string draw;    // --draw OUT.png; "": none. Several photos: OUT-1.png, OUT-2.png, ...
  int size = 0;        // --size (models with an open input size); 0: 320
  bool json = false;
  Preprocess pre;  // scale, mean, std, bgr, nhwc (resize and crop are not used)
};

// Runs the model on each photo and prints its detections (a table, or JSON with o.json). The model
// must have one float32 input [1,3,H,W], [3,H,W] or (nhwc) [1,H,W,3]. Fixed H and W: the photo is
// letterboxed into them (grey 114 padding); open H and W: the photo is scaled so that its longer
// side is o.size, and for the YOLO layouts padded to multiples of 32. Returns 0; throws
// InputError / ocl_infer errors.
int detect_photos(ocl_infer::Session& s, const std::string& model,
                  const std::vector<std::string>& photos, const DetectOptions& o);

}  // namespace cli
