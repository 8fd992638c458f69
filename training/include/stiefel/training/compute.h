// The CPU compute configuration of a training process, set by the program itself so that a run's
// numbers do not depend on the machine's core count or on OPENBLAS_NUM_THREADS / OMP_NUM_THREADS /
// GOTO_NUM_THREADS in the environment:
//   - OpenBLAS on one thread (OpenBLAS sizes its pool from the environment at load time; the
//     thread count changes how some kernels split their sums, hence the results);
//   - LibTorch's OpenMP intra-op pool on `intra_op_threads` threads (1 by default: a second pool
//     on top of OpenBLAS's oversubscribes the cores) and one inter-op thread;
//   - glibc keeps freed memory (mmap threshold 32 MiB, no trimming), so that the activations freed
//     and re-allocated every step are not returned to the kernel and faulted in again.
// The kernels OpenBLAS and ATen select still follow the CPU (and OPENBLAS_CORETYPE,
// ATEN_CPU_CAPABILITY); both are recorded.
#pragma once

#include <nlohmann/json.hpp>

namespace stiefel::training {

// Applies the configuration (idempotent) and returns its description for the run record.
nlohmann::json configure_cpu_compute(int intra_op_threads = 1);

// Seed batching: stacked activations outgrow glibc's largest mmap threshold (32 MiB), and a block
// mmapped and unmapped every step is faulted in afresh every step; this serves every block from the
// heap, where freed memory is kept. Returns the record's "malloc" description.
std::string keep_every_freed_block();

}  // namespace stiefel::training
