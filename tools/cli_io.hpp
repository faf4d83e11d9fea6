// File formats the CLI reads and writes: .npy tensors, ONNX TensorProto .pb files, and images
// preprocessed into a model input. Everything throws ocl_infer::InputError with the path.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ocl_infer/ocl_infer.hpp"

namespace cli {

// Reads a NumPy .npy file (format 1.0-3.0, little-endian, C order, numeric or bool dtypes).
ocl_infer::Tensor read_npy(const std::string& path);
// Writes `t` as .npy (format 1.0).
void write_npy(const std::string& path, const ocl_infer::Tensor& t);
// Reads a tensor from .npy or, for other extensions, a serialized ONNX TensorProto.
ocl_infer::Tensor read_tensor_file(const std::string& path);

struct Preprocess {
  int resize = 256;  // shorter side after resize; 0 = no resize
  int crop = 224;    // centre crop (square); 0 = take the resized image whole
  float scale = 1.0f / 255.0f;
  float mean[3] = {0.485f, 0.456f, 0.406f};
  float std[3] = {0.229f, 0.224f, 0.225f};
  bool bgr = false;
  bool nhwc = false;
};

// Decodes JPEG/PNG/BMP/... with stb_image, converts to RGB (or BGR), resizes the shorter side
// (bilinear, half-pixel centres), centre-crops, normalises: (pixel * scale - mean) / std. Returns
// float32 [1,3,H,W] (or [1,H,W,3] for nhwc).
ocl_infer::Tensor load_image(const std::string& path, const Preprocess& p);

// A decoded photo: 8-bit RGB, row-major, width * height * 3 bytes.
struct Image {
  int width = 0, height = 0;
  std::vector<uint8_t> rgb;
};

// Decodes a photo with stb_image (the formats load_image reads) to RGB. Throws InputError with the
// path for an unreadable, corrupt or absurdly large image.
Image decode_image(const std::string& path);

// Where a letterboxed photo sits in the model input: input pixel x = photo x * scale_x + pad_x
// (likewise y). Scales are per axis because the scaled size is rounded to whole pixels.
struct LetterboxTransform {
  double scale_x = 1, scale_y = 1;
  int pad_x = 0, pad_y = 0;          // left and top padding, input pixels
  int width = 0, height = 0;         // the model input's size
  int photo_width = 0, photo_height = 0;
  // Input pixel -> photo pixel (not clipped).
  double to_photo_x(double x) const { return (x - pad_x) / scale_x; }
  double to_photo_y(double y) const { return (y - pad_y) / scale_y; }
};

// Letterboxes `img` into a width x height input: scales it by one factor r = min(width / w,
// height / h) to round(w * r) x round(h * r) (bilinear, half-pixel centres, no antialiasing),
// centres it and fills the border with `pad` (in pixel units, e.g. 114 for YOLO's grey); then
// (pixel * scale - mean) / std, channels RGB (or BGR), as p says (p.resize and p.crop are not
// used). Returns float32 [1,3,height,width] (or [1,height,width,3] for p.nhwc) and the transform.
ocl_infer::Tensor letterbox_image(const Image& img, int width, int height, const Preprocess& p, float pad,
                                  LetterboxTransform* transform);

// Writes `img` as a PNG file (stb_image_write). Throws InputError when it cannot be written.
void write_png(const std::string& path, const Image& img);

// How many elements of a float32/float16/float64 tensor are NaN or infinite (0 for other types).
int64_t count_non_finite(const ocl_infer::Tensor& t);

// "a.b/c" -> "a.b_c": characters outside [A-Za-z0-9._-] become '_'.
std::string safe_file_name(const std::string& name);

}  // namespace cli
