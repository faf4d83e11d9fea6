// Fuzz target: any bytes as an ONNX model, loaded with Session::from_memory and, when that
// succeeds, planned and run once on small inputs. Every failure must be an ocl_infer::Error (a
// one-line message); anything else (another exception, a crash, a sanitizer report, a hang) is a
// bug.
//
// Built two ways (CMakeLists.txt):
//   fuzz_load    with clang's libFuzzer and ASan/UBSan, by tools/sanitize.sh (OCL_INFER_FUZZ=ON):
//                build-fuzz/fuzz_load tests/fuzz_corpus -max_total_time=600
//   fuzz_replay  a plain program that feeds every file given (or every file in the folders given)
//                through the same function: ctest runs the committed corpus (tests/fuzz_corpus)
//                this way in every build.
#include <dirent.h>
#include <sys/stat.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <typeinfo>
#include <vector>

#include "ocl_infer/ocl_infer.hpp"

namespace {

// Inputs for every model input: open dims become 2, at most 2^16 elements, zero-filled.
std::map<std::string, ocl_infer::Tensor> small_inputs(const ocl_infer::Session& s) {
  std::map<std::string, ocl_infer::Tensor> feeds;
  for (auto& in : s.inputs()) {
    std::vector<int64_t> shape = in.shape;
    int64_t n = 1;
    for (auto& d : shape) {
      if (d < 0) d = 2;
      n = d > 0 && n > (int64_t{1} << 16) / d ? (int64_t{1} << 17) : n * d;
    }
    if (n > (int64_t{1} << 16) || ocl_infer::dtype_size(in.dtype) == 0) return {};
    feeds[in.name] = ocl_infer::Tensor(in.dtype, shape);
  }
  return feeds;
}

}  // namespace

// Returns 0; throws (or crashes) only on a bug.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ocl_infer::SessionOptions opt;
  opt.max_memory_bytes = uint64_t{256} << 20;  // keep hostile sizes cheap
  try {
    auto s = ocl_infer::Session::from_memory(data, size, opt);
    auto feeds = small_inputs(s);
    if (feeds.size() == s.inputs().size()) s.run(feeds);
  } catch (const ocl_infer::Error&) {
    // A clean, one-line error: what a malformed model should give.
  }
  return 0;
}

#ifndef OCL_INFER_LIBFUZZER
// fuzz_replay FILE|DIR ...: runs every file; prints one line per file; exit 1 on a foreign exception.
int main(int argc, char** argv) {
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    struct stat st;
    if (stat(argv[i], &st) != 0) {
      std::cerr << "fuzz_replay: cannot open " << argv[i] << "\n";
      return 2;
    }
    if (S_ISDIR(st.st_mode)) {
      DIR* d = opendir(argv[i]);
      while (dirent* e = d ? readdir(d) : nullptr)
        if (e->d_name[0] != '.') files.push_back(std::string(argv[i]) + "/" + e->d_name);
      if (d) closedir(d);
    } else {
      files.push_back(argv[i]);
    }
  }
  int bad = 0;
  for (auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string bytes = ss.str();
    try {
      LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
      std::cout << "ok   " << f << "\n";
    } catch (const std::exception& e) {
      std::cout << "BUG  " << f << ": " << typeid(e).name() << ": " << e.what() << "\n";
      ++bad;
    }
  }
  std::cout << "fuzz_replay: " << files.size() << " inputs, " << bad << " failures outside ocl_infer::Error\n";
  return bad ? 1 : 0;
}
#endif
