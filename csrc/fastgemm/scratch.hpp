// Packing memory: one 64-byte aligned buffer per calling thread, kept between calls so
// repeated calls do not allocate, and concurrent calls never share it.
#pragma once

#include <cstddef>
#include <cstdint>

namespace fastgemm {

// 64-byte aligned memory that frees itself. From 2 MiB up it is 2 MiB aligned and asks for
// transparent huge pages: packed panels span megabytes and are swept by every microkernel
// call (on 4 KiB pages, a TLB miss every few calls). Throws std::bad_alloc.
class AlignedBuffer {
   public:
    AlignedBuffer() = default;
    explicit AlignedBuffer(std::size_t bytes) { allocate(bytes); }
    AlignedBuffer(AlignedBuffer&& o) noexcept : ptr_(o.ptr_), size_(o.size_), mapped_(o.mapped_) { o.forget(); }
    AlignedBuffer& operator=(AlignedBuffer&& o) noexcept;
    AlignedBuffer(const AlignedBuffer&) = delete;
    AlignedBuffer& operator=(const AlignedBuffer&) = delete;
    ~AlignedBuffer() { release(); }

    void* data() const { return ptr_; }
    std::size_t size() const { return size_; }
    // Frees what it holds, then holds at least `bytes` (uninitialised).
    void allocate(std::size_t bytes);
    void release();

   private:
    void forget() { ptr_ = nullptr, size_ = 0, mapped_ = false; }
    void* ptr_ = nullptr;
    std::size_t size_ = 0;
    bool mapped_ = false;  // mmap'ed (Linux, huge): munmap, not free
};

// At least `bytes` of 64-byte aligned memory owned by the calling thread, valid until its
// next call. The buffer grows on demand; a large one is given back once 32 calls in a row
// needed less than a quarter of it (after a product on many threads, say). Throws
// std::bad_alloc.
void* thread_scratch(std::size_t bytes);
// The same, a second buffer: a product's result computed in full before it goes to C (the
// blocked path, which packs into thread_scratch, writing C^T). Throws std::bad_alloc.
void* thread_c_scratch(std::size_t bytes);
// The size of the calling thread's thread_scratch buffer (0: none yet).
std::size_t thread_scratch_bytes();

// `count` chunks of `bytes` (kGemvChunkBytes or kFewRowsBufferBytes, kernel.hpp; a multiple of
// 64), 64-byte aligned, owned by the calling thread, for the streaming kernels of its team
// (chunk i for thread i). Separate from thread_scratch so neither resizes the other. Throws
// std::bad_alloc.
void* thread_gemv_chunks(int count, int64_t bytes);

}  // namespace fastgemm
