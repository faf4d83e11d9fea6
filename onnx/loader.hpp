// ONNX ModelProto -> oi::Graph. The only place that sees protobuf types.
#pragma once

#include <cstddef>
#include <string>

#include "runtime/ir/graph.hpp"

namespace oi {

// Parses a serialized ModelProto. `model_dir` resolves external-data files ("" = none allowed).
// Throws ModelError for anything malformed: not protobuf, truncated, dangling references, cycles,
// initializers whose data does not match their dims, external data outside model_dir.
Graph load_onnx(const void* data, size_t size, const std::string& model_dir);

// Reads a file and calls load_onnx with its directory. Throws ModelError naming the path.
Graph load_onnx_file(const std::string& path);

// Parses a serialized TensorProto (the .pb files of the ONNX test data). Throws ModelError.
Tensor load_tensor_proto(const void* data, size_t size, std::string* name = nullptr);

}  // namespace oi
