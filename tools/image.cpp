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

Tensor load_image(const std::string& path, const Preprocess& p) {
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
  const unsigned char* src = px.get();
  const double sx = static_cast<double>(w) / rw, sy = static_cast<double>(h) / rh;
  for (int y = 0; y < ch; ++y) {
    double fy = std::max(0.0, (y + y0 + 0.5) * sy - 0.5);
    int iy = std::min(static_cast<int>(fy), h - 1), iy1 = std::min(iy + 1, h - 1);
    double wy = fy - iy;
    for (int x = 0; x < cw; ++x) {
      double fx = std::max(0.0, (x + x0 + 0.5) * sx - 0.5);
      int ix = std::min(static_cast<int>(fx), w - 1), ix1 = std::min(ix + 1, w - 1);
      double wx = fx - ix;
      for (int k = 0; k < 3; ++k) {
        auto at = [&](int yy, int xx) { return static_cast<double>(src[(static_cast<size_t>(yy) * w + xx) * 3 + k]); };
        double v = (1 - wy) * ((1 - wx) * at(iy, ix) + wx * at(iy, ix1)) +
                   wy * ((1 - wx) * at(iy1, ix) + wx * at(iy1, ix1));
        int ck = p.bgr ? 2 - k : k;
        float f = (static_cast<float>(v) * p.scale - p.mean[ck]) / p.std[ck];
        if (p.nhwc) out[(static_cast<size_t>(y) * cw + x) * 3 + ck] = f;
        else out[(static_cast<size_t>(ck) * ch + y) * cw + x] = f;
      }
    }
  }
  return t;
}

}  // namespace cli
