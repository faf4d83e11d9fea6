#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <memory>

#include "tools/cli_io.hpp"

#define STB_IMAGE_IMPLEMENTATION
#define STBI_FAILURE_USERMSG
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wsign-compare"
#endif
#include "stb_image.h"
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include "stb_image_write.h"
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

namespace cli {

using ocl_infer::InputError;
using ocl_infer::Tensor;

namespace {

// stb_image parses PNM header numbers into an int without an overflow check (undefined
// behaviour for a hostile width): check the header's three numbers first.
void check_pnm_header(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  char head[2] = {0, 0};
  if (!f.read(head, 2) || head[0] != 'P' || (head[1] != '5' && head[1] != '6')) return;
  for (int field = 0; field < 3; ++field) {
    int c = f.get();
    while (c != EOF && (std::isspace(c) || c == '#')) {
      if (c == '#')
        while (c != EOF && c != '\n') c = f.get();
      c = f.get();
    }
    int digits = 0;
    for (; c != EOF && std::isdigit(c); c = f.get()) ++digits;
    if (digits == 0 || digits > 7)
      throw InputError("image '" + path + "' has a corrupt or absurd PNM header (field " + std::to_string(field + 1) + ")");
  }
}

}  // namespace

Image decode_image(const std::string& path) {
  check_pnm_header(path);
  int w = 0, h = 0, c = 0;
  if (!stbi_info(path.c_str(), &w, &h, &c)) {
    const char* why = stbi_failure_reason();
    throw InputError("cannot read image '" + path + "': " + (why ? why : "unknown error"));
  }
  if (w <= 0 || h <= 0 || static_cast<int64_t>(w) * h > (1ll << 28))
    throw InputError("image '" + path + "' has an unusable size " + std::to_string(w) + "x" + std::to_string(h));
  std::unique_ptr<unsigned char, void (*)(void*)> px(stbi_load(path.c_str(), &w, &h, &c, 3), stbi_image_free);
  if (!px) {
    const char* why = stbi_failure_reason();
    throw InputError("cannot decode image '" + path + "': " + (why ? why : "unknown error"));
  }
  Image img;
  img.width = w;
  img.height = h;
  img.rgb.assign(px.get(), px.get() + static_cast<size_t>(w) * h * 3);
  return img;
}

namespace {

// Bilinear sample of channel k at the source position of destination pixel (x, y) of an image
// scaled by (sx, sy) source pixels per destination pixel, with half-pixel centres (torch's
// interpolate(align_corners=False) and OpenCV's INTER_LINEAR without antialiasing).
double sample(const Image& img, double sx, double sy, int x, int y, int k) {
  const int w = img.width, h = img.height;
  double fy = std::max(0.0, (y + 0.5) * sy - 0.5);
  int iy = std::min(static_cast<int>(fy), h - 1), iy1 = std::min(iy + 1, h - 1);
  double wy = fy - iy;
  double fx = std::max(0.0, (x + 0.5) * sx - 0.5);
  int ix = std::min(static_cast<int>(fx), w - 1), ix1 = std::min(ix + 1, w - 1);
  double wx = fx - ix;
  auto at = [&](int yy, int xx) { return static_cast<double>(img.rgb[(static_cast<size_t>(yy) * w + xx) * 3 + k]); };
  return (1 - wy) * ((1 - wx) * at(iy, ix) + wx * at(iy, ix1)) + wy * ((1 - wx) * at(iy1, ix) + wx * at(iy1, ix1));
}

void store(float* out, const Preprocess& p, int h, int w, int y, int x, int k, double v) {
  const int ck = p.bgr ? 2 - k : k;
  const float f = (static_cast<float>(v) * p.scale - p.mean[ck]) / p.std[ck];
  if (p.nhwc) out[(static_cast<size_t>(y) * w + x) * 3 + ck] = f;
  else out[(static_cast<size_t>(ck) * h + y) * w + x] = f;
}

}  // namespace

Tensor load_image(const std::string& path, const Preprocess& p) {
  const Image img = decode_image(path);
  const int w = img.width, h = img.height;
  // Resize so that the shorter side is p.resize, bilinear with half-pixel centres (like
  // torch's interpolate(align_corners=False) without antialiasing).
  int rw = w, rh = h;
  if (p.resize > 0) {
    if (w <= h) {
      rw = p.resize;
      rh = static_cast<int>(static_cast<int64_t>(h) * p.resize / w);
    } else {
      rh = p.resize;
      rw = static_cast<int>(static_cast<int64_t>(w) * p.resize / h);
    }
  }
  int cw = p.crop > 0 ? p.crop : rw, ch = p.crop > 0 ? p.crop : rh;
  if (cw > rw || ch > rh)
    throw InputError("crop " + std::to_string(cw) + " is larger than the resized image " +
                     std::to_string(rw) + "x" + std::to_string(rh));
  int x0 = (rw - cw) / 2, y0 = (rh - ch) / 2;
  Tensor t(ocl_infer::DType::Float32, p.nhwc ? std::vector<int64_t>{1, ch, cw, 3}
                                             : std::vector<int64_t>{1, 3, ch, cw});
  float* out = t.data<float>();
  const double sx = static_cast<double>(w) / rw, sy = static_cast<double>(h) / rh;
  for (int y = 0; y < ch; ++y)
    for (int x = 0; x < cw; ++x)
      for (int k = 0; k < 3; ++k) store(out, p, ch, cw, y, x, k, sample(img, sx, sy, x + x0, y + y0, k));
  return t;
}

Tensor letterbox_image(const Image& img, int width, int height, const Preprocess& p, float pad,
                       LetterboxTransform* transform) {
  if (width <= 0 || height <= 0 || static_cast<int64_t>(width) * height > (1ll << 28))
    throw InputError("unusable letterbox size " + std::to_string(width) + "x" + std::to_string(height));
  const double r = std::min(static_cast<double>(width) / img.width, static_cast<double>(height) / img.height);
  const int nw = std::clamp(static_cast<int>(std::lround(img.width * r)), 1, width);
  const int nh = std::clamp(static_cast<int>(std::lround(img.height * r)), 1, height);
  const int left = (width - nw) / 2, top = (height - nh) / 2;
  Tensor t(ocl_infer::DType::Float32, p.nhwc ? std::vector<int64_t>{1, height, width, 3}
                                             : std::vector<int64_t>{1, 3, height, width});
  float* out = t.data<float>();
  const double sx = static_cast<double>(img.width) / nw, sy = static_cast<double>(img.height) / nh;
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x) {
      const bool inside = x >= left && x < left + nw && y >= top && y < top + nh;
      for (int k = 0; k < 3; ++k)
        store(out, p, height, width, y, x, k, inside ? sample(img, sx, sy, x - left, y - top, k) : pad);
    }
  if (transform) {
    transform->scale_x = static_cast<double>(nw) / img.width;
    transform->scale_y = static_cast<double>(nh) / img.height;
    transform->pad_x = left;
    transform->pad_y = top;
    transform->width = width;
    transform->height = height;
    transform->photo_width = img.width;
    transform->photo_height = img.height;
  }
  return t;
}

void write_png(const std::string& path, const Image& img) {
  if (img.width <= 0 || img.height <= 0 || img.rgb.size() != static_cast<size_t>(img.width) * img.height * 3)
    throw InputError("cannot write '" + path + "': not an RGB image");
  if (!stbi_write_png(path.c_str(), img.width, img.height, 3, img.rgb.data(), img.width * 3))
    throw InputError("cannot write PNG '" + path + "'");
}

}  // namespace cli
