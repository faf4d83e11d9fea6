// onnx-conformance: runs the ONNX project's backend test data (model.onnx + test_data_set_*/
// input_*.pb, output_*.pb) through the public API and compares outputs (rtol 1e-3, atol 1e-5).
//
// Tests run in a forked worker process so that a crash or hang in one test is a failure of that
// test, not of the run; the worker runs test after test and is replaced after a failure
// (--fresh-process: a new one for every test). Prints every test that does not pass with its
// reason (-v: every test), a per-op summary of what is unsupported and, last,
// "conformance: N passed, N failed, N skipped". With --expect FILE, exits 1 when a test listed
// there does not pass. --root DIR takes another copy of the data (e.g. a newer ONNX release's
// onnx/backend/test/data), --min-opset N only its models of default opset N or newer, --opsets
// A,B,.. only those of the opsets listed.
#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/select.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "ocl_infer/ocl_infer.hpp"

namespace {

using ocl_infer::DType;
using ocl_infer::Tensor;

constexpr double kRtol = 1e-3, kAtol = 1e-5;

// The default-domain opset a model.onnx imports (ModelProto field 8, OperatorSetIdProto's domain 1
// and version 2), read straight off the protobuf wire format; -1 when unreadable. Only for
// --min-opset, which selects the tests of newer opsets (the runtime loads models itself).
int64_t model_opset(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  const std::string b((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  auto varint = [&](size_t& i, uint64_t& v) {
    v = 0;
    for (int shift = 0; i < b.size() && shift < 64; shift += 7) {
      const uint8_t c = static_cast<uint8_t>(b[i++]);
      v |= static_cast<uint64_t>(c & 0x7f) << shift;
      if (!(c & 0x80)) return true;
    }
    return false;
  };
  // Calls on_field(field, wire type, value or length, start of a length-delimited payload) for
  // each field of the message in b[i, end); false when malformed.
  auto scan = [&](size_t i, size_t end, auto&& on_field) {
    while (i < end) {
      uint64_t key, v;
      if (!varint(i, key)) return false;
      const int wire = static_cast<int>(key & 7);
      if (wire == 0) {
        if (!varint(i, v)) return false;
      } else if (wire == 2) {
        if (!varint(i, v) || v > end - i) return false;
      } else if (wire == 1 || wire == 5) {
        v = wire == 1 ? 8 : 4;
        if (v > end - i) return false;
      } else {
        return false;
      }
      on_field(key >> 3, wire, v, i);
      if (wire != 0) i += v;
    }
    return true;
  };
  int64_t opset = -1;
  scan(0, b.size(), [&](uint64_t field, int wire, uint64_t len, size_t at) {
    if (field != 8 || wire != 2) return;
    bool default_domain = true;
    int64_t version = -1;
    scan(at, at + len, [&](uint64_t f2, int w2, uint64_t v2, size_t at2) {
      if (f2 == 1 && w2 == 2) {
        const std::string d = b.substr(at2, v2);
        default_domain = d.empty() || d == "ai.onnx";
      }
      if (f2 == 2 && w2 == 0) version = static_cast<int64_t>(v2);
    });
    if (default_domain) opset = std::max(opset, version);
  });
  return opset;
}

std::vector<std::string> list_dir(const std::string& path) {
  std::vector<std::string> r;
  if (DIR* d = opendir(path.c_str())) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') r.push_back(e->d_name);
    closedir(d);
  }
  std::sort(r.begin(), r.end());
  return r;
}

bool exists(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0;
}

double get(const Tensor& t, int64_t i) {
  switch (t.dtype) {
    case DType::Float32: return t.data<float>()[i];
    case DType::Float64: return t.data<double>()[i];
    case DType::Float16: return ocl_infer::half_to_float(t.data<uint16_t>()[i]);
    case DType::BFloat16: {
      const uint32_t bits = static_cast<uint32_t>(t.data<uint16_t>()[i]) << 16;
      float f;
      std::memcpy(&f, &bits, sizeof f);
      return f;
    }
    case DType::Int64: return static_cast<double>(t.data<int64_t>()[i]);
    case DType::Int32: return t.data<int32_t>()[i];
    case DType::Int16: return t.data<int16_t>()[i];
    case DType::Int8: return t.data<int8_t>()[i];
    case DType::UInt8: case DType::Bool: return t.data<uint8_t>()[i];
    case DType::UInt16: return t.data<uint16_t>()[i];
    case DType::UInt32: return t.data<uint32_t>()[i];
    case DType::UInt64: return static_cast<double>(t.data<uint64_t>()[i]);
    default: return NAN;
  }
}

// "" when equal within tolerance, else why not.
std::string compare(const Tensor& got, const Tensor& want) {
  if (got.dtype != want.dtype)
    return std::string("dtype ") + ocl_infer::dtype_name(got.dtype) + " != expected " + ocl_infer::dtype_name(want.dtype);
  if (got.shape != want.shape)
    return "shape " + ocl_infer::shape_to_string(got.shape) + " != expected " + ocl_infer::shape_to_string(want.shape);
  // float16 results compare like float32 ones: rtol 1e-3 is two float16 ulps.
  bool exact = got.dtype != DType::Float32 && got.dtype != DType::Float64 && got.dtype != DType::Float16;
  int bad = 0;
  std::string first;
  for (int64_t i = 0; i < got.numel(); ++i) {
    double a = get(got, i), b = get(want, i);
    bool ok = exact ? a == b : ((std::isnan(a) && std::isnan(b)) || a == b || std::fabs(a - b) <= kAtol + kRtol * std::fabs(b));
    if (!ok && bad++ == 0) {
      std::ostringstream os;
      os << "element " << i << ": got " << a << ", expected " << b;
      first = os.str();
    }
  }
  if (bad) return std::to_string(bad) + " of " + std::to_string(got.numel()) + " elements differ; first " + first;
  return "";
}

// Tests whose expected outputs are draws of numpy's random generator (Bernoulli and its function
// body's RandomUniformLike): no other generator reproduces them. They run, and what they can check
// is checked -- dtype, shape, every value one of the values the reference draws from (0 and 1) --
// and they count as skipped with that said.
bool random_draws(const std::string& dir) { return dir.find("/test_bernoulli") != std::string::npos; }

// "" when `got` could be a draw of the distribution behind `want`, else why not.
std::string compare_draws(const Tensor& got, const Tensor& want) {
  if (got.dtype != want.dtype)
    return std::string("dtype ") + ocl_infer::dtype_name(got.dtype) + " != expected " + ocl_infer::dtype_name(want.dtype);
  if (got.shape != want.shape)
    return "shape " + ocl_infer::shape_to_string(got.shape) + " != expected " + ocl_infer::shape_to_string(want.shape);
  for (int64_t i = 0; i < got.numel(); ++i)
    if (get(got, i) != 0 && get(got, i) != 1) return "element " + std::to_string(i) + " is neither 0 nor 1";
  return "";
}

// Tests whose data this runtime does not follow, with why. They still run; a failure is reported as
// a skip with this reason (and a pass as a pass).
constexpr const char* kAttention121 =
    "ONNX 1.21's expected values add the mask to mode-1 qk_matmul_output and cap after the mask; ONNX 1.23's "
    "reference and ONNX Runtime cap first and leave the mask out of mode 1";

const std::map<std::string, std::string>& data_disagreements() {
  static const std::map<std::string, std::string> m = {
      {"test_cast_FLOAT_to_BFLOAT16",
       "the expected values truncate float32 to bfloat16; this runtime rounds to nearest even, as PyTorch, "
       "ONNX Runtime and later ONNX test data do"},
      {"test_castlike_BFLOAT16_to_FLOAT", "the test data feeds 'like' as [1]; the model declares [3, 4]"},
      {"test_castlike_BFLOAT16_to_FLOAT_expanded", "the test data feeds 'like' as [1]; the model declares [3, 4]"},
      {"test_castlike_FLOAT_to_BFLOAT16", "the test data feeds 'like' as [1]; the model declares [3, 4]"},
      {"test_castlike_FLOAT_to_BFLOAT16_expanded", "the test data feeds 'like' as [1]; the model declares [3, 4]"},
      // ONNX 1.18's data (opset 21) wraps a product of -236 to 20 in int8; the operator saturates
      // (-128), as ONNX Runtime does.
      {"test_qlinearmatmul_2D_int8_float32", "the expected values wrap out-of-range int8 results instead of saturating"},
      {"test_qlinearmatmul_3D_int8_float32", "the expected values wrap out-of-range int8 results instead of saturating"},
      // The same with float16 scales (ONNX 1.21): ONNX Runtime 1.32 gives this runtime's values.
      {"test_qlinearmatmul_2D_int8_float16", "the expected values wrap out-of-range int8 results instead of saturating"},
      {"test_qlinearmatmul_3D_int8_float16", "the expected values wrap out-of-range int8 results instead of saturating"},
      // ONNX 1.21's Attention data: qk_matmul_output mode 1 with the mask added, softcap after the
      // mask. ONNX 1.23's reference and ONNX Runtime 1.32 give mode 1 without the mask and cap
      // before it, as this runtime does (its outputs equal ONNX Runtime's on these tests).
      {"test_attention_3d_with_past_and_present_qk_matmul_bias", kAttention121},
      {"test_attention_3d_with_past_and_present_qk_matmul_softcap", kAttention121},
      {"test_attention_4d_with_past_and_present_qk_matmul_bias", kAttention121},
      {"test_attention_4d_with_past_and_present_qk_matmul_bias_3d_mask", kAttention121},
      {"test_attention_4d_with_past_and_present_qk_matmul_bias_3d_mask_causal", kAttention121},
      {"test_attention_4d_with_past_and_present_qk_matmul_bias_4d_mask", kAttention121},
      {"test_attention_4d_with_past_and_present_qk_matmul_bias_4d_mask_causal", kAttention121},
      {"test_attention_4d_with_qk_matmul_bias", kAttention121},
      {"test_attention_4d_with_qk_matmul_softcap", kAttention121},
  };
  return m;
}

enum class Outcome { Pass, Fail, Skip };

// The summary's group for a skipped test that is not about one operator ("" when it is).
std::string skip_group(const std::string& name, const std::string& detail) {
  auto has = [](const std::string& s, const char* what) { return s.find(what) != std::string::npos; };
  if (has(detail, "random draws")) return "(random draws: not comparable; dtype, shape and values checked)";
  if (has(detail, "test data this runtime does not follow")) return "(test data this runtime does not follow)";
  if (has(name, "training") || has(detail, "training"))
    return "(training: training_mode, training Dropout, ai.onnx.preview.training ops)";
  if (has(name, "BFLOAT16") || has(detail, "element type 16")) return "(bfloat16 tensors)";
  if (has(name, "STRING") || has(name, "strnorm") || has(detail, "element type 8")) return "(string tensors)";
  if (has(detail, "is not a tensor") || has(detail, "is a sequence") || has(detail, "Optional"))
    return "(sequence- or optional-typed model inputs and outputs)";
  return "";
}

struct Result {
  Outcome outcome;
  std::string detail;
};

Result run_test(const std::string& dir, const std::string& device) {
  ocl_infer::SessionOptions opt;
  opt.device = device;
  try {
    auto s = ocl_infer::Session::from_file(dir + "/model.onnx", opt);
    int sets = 0;
    for (auto& sub : list_dir(dir)) {
      if (sub.rfind("test_data_set_", 0) != 0) continue;
      ++sets;
      std::string sd = dir + "/" + sub;
      std::map<std::string, Tensor> feeds;
      for (size_t k = 0;; ++k) {
        std::string p = sd + "/input_" + std::to_string(k) + ".pb";
        if (!exists(p)) break;
        if (k >= s.inputs().size()) return {Outcome::Fail, "more input files than model inputs"};
        Tensor in = ocl_infer::read_tensor_proto(p);
        // The test data stores bfloat16 tensors as uint16 (numpy has no bfloat16): the same bits.
        if (s.inputs()[k].dtype == DType::BFloat16 && in.dtype == DType::UInt16) in.dtype = DType::BFloat16;
        feeds[s.inputs()[k].name] = std::move(in);
      }
      auto outs = s.run(feeds);
      for (size_t k = 0;; ++k) {
        std::string p = sd + "/output_" + std::to_string(k) + ".pb";
        if (!exists(p)) break;
        if (k >= s.outputs().size()) return {Outcome::Fail, "more output files than model outputs"};
        Tensor want = ocl_infer::read_tensor_proto(p);
        if (outs.at(s.outputs()[k].name).dtype == DType::BFloat16 && want.dtype == DType::UInt16) want.dtype = DType::BFloat16;
        std::string why = random_draws(dir) ? compare_draws(outs.at(s.outputs()[k].name), want)
                                            : compare(outs.at(s.outputs()[k].name), want);
        if (!why.empty()) return {Outcome::Fail, sub + " output '" + s.outputs()[k].name + "': " + why};
      }
    }
    if (sets == 0) return {Outcome::Skip, "no test data sets"};
    if (random_draws(dir))
      return {Outcome::Skip, "random draws (numpy's generator): dtype, shape and values in {0, 1} checked"};
    return {Outcome::Pass, ""};
  } catch (const ocl_infer::UnsupportedError& e) {
    return {Outcome::Skip, e.what()};
  } catch (const std::exception& e) {
    return {Outcome::Fail, e.what()};
  }
}

// Writes all of `bytes` to `fd`; false when the reader is gone.
bool write_all(int fd, const std::string& bytes) {
  size_t off = 0;
  while (off < bytes.size()) {
    const ssize_t n = write(fd, bytes.data() + off, bytes.size() - off);
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

// A child process that runs tests one after another, so that the OpenCL driver and its compiler
// start once per worker rather than once per test (PoCL's first program build in a process costs
// ~0.6 s: from cold caches, most of a 1,000-test run went there). A crash or a timeout is a
// failure of the test being run; the worker is then replaced, as it is after every failure, so
// that the next test starts in a clean process. `fresh`: a new worker for every test.
class Worker {
 public:
  Worker(std::string device, int timeout_s, bool fresh) : device_(std::move(device)), timeout_s_(timeout_s), fresh_(fresh) {}
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;
  ~Worker() { stop(); }

  Result run(const std::string& dir) {
    if (pid_ < 0 && !start()) return run_test(dir, device_);  // no fork: run here
    if (!write_all(to_, dir + "\n")) {
      // The worker ended after its last result (nothing runs there between tests): a new one.
      lost("");
      if (!start()) return run_test(dir, device_);
      if (!write_all(to_, dir + "\n")) return lost("the test process could not be started");
    }
    const auto t0 = std::chrono::steady_clock::now();
    std::string msg;
    char buf[4096];
    // A result is "<decimal length>\n<outcome digit><detail>"; read until one is complete.
    for (;;) {
      const size_t nl = msg.find('\n');
      if (nl != std::string::npos) {
        const size_t len = std::strtoull(msg.c_str(), nullptr, 10);
        if (msg.size() >= nl + 1 + len && len >= 1) {
          Result r{static_cast<Outcome>(msg[nl + 1] - '0'), msg.substr(nl + 2, len - 1)};
          if (fresh_ || r.outcome == Outcome::Fail) stop();
          return r;
        }
      }
      fd_set set;
      FD_ZERO(&set);
      FD_SET(from_, &set);
      timeval tv{0, 200000};
      if (select(from_ + 1, &set, nullptr, nullptr, &tv) > 0) {
        const ssize_t n = read(from_, buf, sizeof buf);
        if (n <= 0) return lost("");
        msg.append(buf, static_cast<size_t>(n));
      }
      if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(timeout_s_)) {
        kill(pid_, SIGKILL);
        stop();
        return {Outcome::Fail, "timed out after " + std::to_string(timeout_s_) + " s"};
      }
    }
  }

 private:
  bool start() {
    int in[2], out[2];
    if (pipe(in) != 0) return false;
    if (pipe(out) != 0) {
      close(in[0]), close(in[1]);
      return false;
    }
    std::cout.flush();
    const pid_t pid = fork();
    if (pid < 0) {
      close(in[0]), close(in[1]), close(out[0]), close(out[1]);
      return false;
    }
    if (pid == 0) {
      close(in[1]);
      close(out[0]);
      std::string line;
      char c;
      for (;;) {
        const ssize_t n = read(in[0], &c, 1);
        if (n <= 0) break;
        if (c != '\n') {
          line += c;
          continue;
        }
        const Result r = run_test(line, device_);
        const std::string body = std::to_string(static_cast<int>(r.outcome)) + r.detail;
        if (!write_all(out[1], std::to_string(body.size()) + "\n" + body)) break;
        line.clear();
      }
      _exit(0);
    }
    close(in[0]);
    close(out[1]);
    pid_ = pid, to_ = in[1], from_ = out[0];
    return true;
  }

  // Ends the worker (closing its input makes it exit) and returns its wait status.
  int stop() {
    int status = 0;
    if (pid_ < 0) return status;
    close(to_);
    close(from_);
    waitpid(pid_, &status, 0);
    pid_ = -1;
    return status;
  }

  // The worker ended without a result: a crash (or an exit) during the test.
  Result lost(const std::string& why) {
    const int status = stop();
    if (!why.empty()) return {Outcome::Fail, why};
    if (WIFSIGNALED(status)) return {Outcome::Fail, std::string("crashed with signal ") + strsignal(WTERMSIG(status))};
    return {Outcome::Fail, "the test process exited without a result"};
  }

  std::string device_;
  int timeout_s_;
  bool fresh_;
  pid_t pid_ = -1;
  int to_ = -1, from_ = -1;
};

}  // namespace

int main(int argc, char** argv) {
  std::string root = "/usr/share/libonnx-testdata/data", filter, expect_file, write_file, device;
  std::vector<std::string> suites = {"node", "pytorch-converted", "pytorch-operator", "simple"};
  bool verbose = false, fresh = false;
  int timeout_s = 60;
  int64_t min_opset = 0;  // --min-opset N: only models importing default opset N or newer
  std::set<int64_t> opsets;  // --opsets A,B,...: only models importing one of these default opsets
  int shard = 0, shards = 1;  // --shard I/N: every N-th test from the I-th (parallel runs)
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << a << " needs a value\n";
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--root") root = value();
    else if (a == "--filter") filter = value();
    else if (a == "--expect") expect_file = value();
    else if (a == "--write-expect") write_file = value();
    else if (a == "--device") device = value();
    else if (a == "--timeout") timeout_s = std::stoi(value());
    else if (a == "--min-opset") min_opset = std::stoi(value());
    else if (a == "--opsets") {
      std::stringstream list(value());
      for (std::string v; std::getline(list, v, ',');) opsets.insert(std::stoi(v));
    }
    else if (a == "--shard") {
      const std::string v = value();
      const size_t slash = v.find('/');
      try {
        shard = std::stoi(v.substr(0, slash));
        shards = slash == std::string::npos ? 0 : std::stoi(v.substr(slash + 1));
      } catch (const std::exception&) {
        shards = 0;
      }
      if (shards < 1 || shard < 0 || shard >= shards) {
        std::cerr << "--shard needs I/N with 0 <= I < N, e.g. 0/4\n";
        return 2;
      }
    }
    else if (a == "--verbose" || a == "-v") verbose = true;
    else if (a == "--fresh-process") fresh = true;
    else {
      std::cerr << "usage: onnx-conformance [--root DIR] [--filter SUBSTR] [--expect FILE] "
                   "[--write-expect FILE] [--device D] [--timeout S] [--shard I/N] [--min-opset N] [--opsets A,B,..] "
                   "[--fresh-process] "
                   "[--verbose]\n";
      return 2;
    }
  }
  if (shards > 1 && !write_file.empty()) {
    std::cerr << "--write-expect needs the whole suite, not a --shard\n";
    return 2;
  }
  std::set<std::string> expected;
  if (!expect_file.empty()) {
    std::ifstream f(expect_file);
    if (!f) {
      std::cerr << "cannot read " << expect_file << "\n";
      return 2;
    }
    std::string line;
    while (std::getline(f, line))
      if (!line.empty() && line[0] != '#') expected.insert(line);
  }
  if (!exists(root)) {
    std::cerr << "no ONNX test data at " << root << " (install Debian's libonnx-testdata)\n";
    return 2;
  }
  int pass = 0, fail = 0, skip = 0;
  std::vector<std::string> passed, regressions;
  std::map<std::string, int> unsupported;
  std::regex op_re("([A-Za-z0-9_.]+) \\(opset \\d+[):]");
  int index = 0;
  signal(SIGPIPE, SIG_IGN);  // a worker that crashed is seen as a failed write, not a dead runner
  Worker worker(device, timeout_s, fresh);
  for (auto& suite : suites) {
    for (auto& t : list_dir(root + "/" + suite)) {
      std::string name = suite + "/" + t;
      if (!filter.empty() && name.find(filter) == std::string::npos) continue;
      std::string dir = root + "/" + suite + "/" + t;
      if (!exists(dir + "/model.onnx")) continue;
      if (min_opset > 0 || !opsets.empty()) {
        const int64_t v = model_opset(dir + "/model.onnx");
        if (v < min_opset || (!opsets.empty() && !opsets.count(v))) continue;
      }
      if (index++ % shards != shard) continue;
      Result r = worker.run(dir);
      if (auto it = data_disagreements().find(t); it != data_disagreements().end() && r.outcome == Outcome::Fail)
        r = {Outcome::Skip, "test data this runtime does not follow: " + it->second + " (" + r.detail + ")"};
      const char* tag = r.outcome == Outcome::Pass ? "PASS" : r.outcome == Outcome::Fail ? "FAIL" : "SKIP";
      if (r.outcome == Outcome::Pass) ++pass, passed.push_back(name);
      else if (r.outcome == Outcome::Fail) ++fail;
      else {
        ++skip;
        std::string d = r.detail;
        std::string group = skip_group(name, d);
        bool any = !group.empty();
        if (any) unsupported[group]++;
        for (auto it = std::sregex_iterator(d.begin(), d.end(), op_re); !any && it != std::sregex_iterator(); ++it) {
          unsupported[(*it)[1]]++;
          any = true;
          if (d.find("unsupported operator") == std::string::npos) break;
        }
        if (!any) unsupported["(other: types or attributes)"]++;
      }
      if (r.outcome != Outcome::Pass && expected.count(name)) regressions.push_back(name + ": " + r.detail);
      // Every test that does not pass is listed with its reason; -v lists the passes too.
      if (verbose || r.outcome != Outcome::Pass)
        std::cout << tag << " " << name << (r.detail.empty() ? "" : ": " + r.detail.substr(0, 300)) << "\n";
    }
  }
  if (!unsupported.empty()) {
    std::vector<std::pair<int, std::string>> rows;
    for (auto& [op, n] : unsupported) rows.push_back({n, op});
    std::sort(rows.rbegin(), rows.rend());
    std::cout << "skipped tests by unsupported operator:\n";
    for (auto& [n, op] : rows) std::cout << "  " << op << ": " << n << "\n";
  }
  if (!write_file.empty()) {
    std::ofstream f(write_file);
    f << "# ONNX conformance tests that pass; generated by onnx-conformance --write-expect.\n";
    for (auto& p : passed) f << p << "\n";
  }
  for (auto& r : regressions) std::cout << "REGRESSION " << r.substr(0, 300) << "\n";
  std::cout << "conformance: " << pass << " passed, " << fail << " failed, " << skip << " skipped\n";
  return regressions.empty() ? 0 : 1;
}
