// Packing memory: one 64-byte aligned buffer per calling thread, kept between calls so
// repeated calls do not allocate, and concurrent calls never share it.
#pragma once

#include <cstddef>

namespace fastgemm {

// At least `bytes` of 64-byte aligned memory owned by the calling thread, valid until its
// next call. The buffer grows on demand; a large one is given back when a call needs less
// than a quarter of it (after a product on many threads, say). Throws std::bad_alloc.
void* thread_scratch(std::size_t bytes);

// `count` chunks of kGemvChunkBytes (kernel.hpp), 64-byte aligned, owned by the calling
// thread, for the matrix-vector kernels of its team (chunk i for thread i). Separate from
// thread_scratch so neither resizes the other. Throws std::bad_alloc.
void* thread_gemv_chunks(int count);

}  // namespace fastgemm
