// Table of the kernels/*.cl sources embedded at build time (see cmake/embed_kernels.cmake).
#pragma once

namespace oi {

struct EmbeddedKernel {
  const char* name;    // file name without ".cl"; nullptr terminates the table
  const char* source;
};

const EmbeddedKernel* embedded_kernels();

}  // namespace oi
