// An idle worker's spin between two kernels of a run (runtime/backend/keep_warm.hpp, spin mode).
//
// One work-item, on a queue of its own: it returns as soon as *started, the number of the run's
// kernels that have begun (raised by a host callback as each starts), reaches `target`, or after
// `bound` reads, whichever comes first. It writes nothing; only its timing matters.
__kernel void idle_spin(volatile __global const int* started, int target, int bound) {
  for (int i = 0; i < bound; ++i)
    if ((int)((uint)*started - (uint)target) >= 0) return;
}
