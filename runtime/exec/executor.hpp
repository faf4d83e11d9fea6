// Executor: writes the inputs, enqueues every launch of a Plan on the one in-order queue with no
// host synchronisation between layers, and reads the outputs back once at the end.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "runtime/backend/keep_warm.hpp"
#include "runtime/exec/plan.hpp"

namespace oi {

// `inputs` by model input value id; returns outputs by name. Throws DeviceError on CL failures.
// With `events`, one event per launch is returned there (the caller releases them); without, no
// events are created. `fetch` names further values (ids) to return: each is read back right after
// the step that writes it, before a later step can reuse its bytes, so buffer reuse stays as
// planned. With `warm`, markers on its queue keep the driver's idle workers busy between kernels
// (runtime/backend/keep_warm.hpp).
std::map<std::string, Tensor> execute(Plan& plan, ClRuntime& cl, const std::map<int, const Tensor*>& inputs,
                                      std::vector<cl_event>* events = nullptr, const std::vector<int>& fetch = {},
                                      KeepWarm* warm = nullptr);

}  // namespace oi
