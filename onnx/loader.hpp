// ONNX ModelProto -> oi::Graph. The only place that sees protobuf types.
#pragma once

#include <cstddef>
#include <string>

#include "runtime/ir/graph.hpp"

namespace oi {

constexpr uint64_t kNoLimit = ~uint64_t{0};

// Parses a serialized ModelProto. `model_dir` resolves external-data files ("" = none allowed).
// Throws ModelError for anything malformed: not protobuf, truncated, dangling references, cycles,
// initializers whose data does not match their dims, external data outside model_dir (symbolic
// links resolved), not a regular file or shorter than claimed. Sizes are checked (overflow-safe)
// against what the file holds and against `max_bytes` (all constants together) before anything is
// allocated.
Graph load_onnx(const void* data, size_t size, const std::string& model_dir, uint64_t max_bytes = kNoLimit);

// Reads a file and calls load_onnx with its directory. Throws ModelError naming the path.
Graph load_onnx_file(const std::string& path, uint64_t max_bytes = kNoLimit);

// Parses a serialized TensorProto (the .pb files of the ONNX test data). Throws ModelError.
Tensor load_tensor_proto(const void* data, size_t size, std::string* name = nullptr, uint64_t max_bytes = kNoLimit);

}  // namespace oi
