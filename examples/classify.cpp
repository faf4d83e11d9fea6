// Minimal application embedding ocl-infer: load a model, describe its inputs and outputs, feed a
// deterministic input, print the top-5 entries of the first output.
//   classify MODEL.onnx [DEVICE]
#include <algorithm>
#include <cmath>
#include <iostream>
#include <numeric>

#include <ocl_infer/ocl_infer.hpp>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: classify MODEL.onnx [DEVICE]\n";
    return 2;
  }
  try {
    ocl_infer::SessionOptions options;
    if (argc > 2) options.device = argv[2];
    auto session = ocl_infer::Session::from_file(argv[1], options);
    std::cout << "device: " << session.device().name << "\n";
    std::map<std::string, ocl_infer::Tensor> feeds;
    for (const auto& in : session.inputs()) {
      std::vector<int64_t> shape = in.shape;
      for (auto& d : shape)
        if (d < 0) d = 1;  // open dims (batch) -> 1
      std::cout << "input " << in.name << " " << ocl_infer::dtype_name(in.dtype) << " "
                << ocl_infer::shape_to_string(shape) << "\n";
      if (in.dtype != ocl_infer::DType::Float32) {
        std::cerr << "this example feeds float32 inputs only\n";
        return 1;
      }
      ocl_infer::Tensor t(in.dtype, shape);
      float* p = t.data<float>();
      for (int64_t i = 0; i < t.numel(); ++i) p[i] = std::sin(0.01f * static_cast<float>(i));
      feeds[in.name] = std::move(t);
    }
    auto outputs = session.run(feeds);
    const auto& first = session.outputs().at(0);
    const ocl_infer::Tensor& y = outputs.at(first.name);
    std::cout << "output " << first.name << " " << ocl_infer::shape_to_string(y.shape) << "\n";
    const float* v = y.data<float>();
    std::vector<int64_t> idx(y.numel());
    std::iota(idx.begin(), idx.end(), 0);
    size_t k = std::min<size_t>(5, idx.size());
    std::partial_sort(idx.begin(), idx.begin() + k, idx.end(),
                      [&](int64_t a, int64_t b) { return v[a] > v[b]; });
    for (size_t i = 0; i < k; ++i) std::cout << "top " << idx[i] << " " << v[idx[i]] << "\n";
    return 0;
  } catch (const ocl_infer::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
