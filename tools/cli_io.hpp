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

// How many elements of a float32/float16/float64 tensor are NaN or infinite (0 for other types).
int64_t count_non_finite(const ocl_infer::Tensor& t);

// "a.b/c" -> "a.b_c": characters outside [A-Za-z0-9._-] become '_'.
std::string safe_file_name(const std::string& name);

}  // namespace cli
