// Packing memory: one 64-byte aligned buffer per calling thread, grown on demand and kept,
// so repeated calls do not allocate and concurrent calls never share it.
#pragma once

#include <cstddef>

namespace fastgemm {

// At least `bytes` of 64-byte aligned memory owned by the calling thread, valid until its
// next call. Throws std::bad_alloc.
void* thread_scratch(std::size_t bytes);

}  // namespace fastgemm
