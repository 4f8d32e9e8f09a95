#include "scratch.hpp"

#include <cstdint>
#include <cstdlib>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace fastgemm {
namespace {

constexpr std::size_t kHugePage = std::size_t(2) << 20;
// Buffers at least this large are given back once kShrinkAfterCalls calls in a row needed under
// a quarter of them. Given back at the first such call, a loop alternating a large product and a
// smaller one mapped the buffer afresh for every large one: 300 x 2000 x 300 float32 on 2
// threads after a 1-thread call took 6.5-8.7 ms against 1.8 (Zen 4, a 4 MiB buffer of huge
// pages faulted in each time).
constexpr std::size_t kShrinkFrom = std::size_t(4) << 20;
constexpr int kShrinkAfterCalls = 32;

// Each buffer with the calls in a row that needed under a quarter of it.
thread_local AlignedBuffer t_scratch, t_c_scratch;
thread_local int t_scratch_small_calls = 0, t_c_scratch_small_calls = 0;

void* grown(AlignedBuffer& buf, int& small_calls, std::size_t bytes) {
    const bool small = buf.size() >= kShrinkFrom && bytes < buf.size() / 4;
    small_calls = small ? small_calls + 1 : 0;
    if (bytes > buf.size() || small_calls >= kShrinkAfterCalls) {
        buf.allocate(bytes);
        small_calls = 0;
    }
    return buf.data();
}

}  // namespace

AlignedBuffer& AlignedBuffer::operator=(AlignedBuffer&& o) noexcept {
    if (this != &o) {
        release();
        ptr_ = o.ptr_, size_ = o.size_, mapped_ = o.mapped_;
        o.forget();
    }
    return *this;
}

void AlignedBuffer::release() {
#if defined(__linux__)
    if (mapped_) {
        munmap(ptr_, size_);
    } else {
        std::free(ptr_);
    }
#else
    std::free(ptr_);
#endif
    forget();
}

void AlignedBuffer::allocate(std::size_t bytes) {
    release();
    const bool huge = bytes >= kHugePage;
    const std::size_t align = huge ? kHugePage : 64;
    const std::size_t rounded = (bytes + align - 1) / align * align;
#if defined(__linux__)
    if (huge) {
        // Over-map by one huge page, then unmap the unaligned head and the tail. Mapped
        // directly, so freeing it returns it to the OS (malloc may keep a freed block).
        void* raw = mmap(nullptr, rounded + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (raw == MAP_FAILED) throw std::bad_alloc();
        const auto base = reinterpret_cast<std::uintptr_t>(raw);
        const std::uintptr_t aligned = (base + kHugePage - 1) / kHugePage * kHugePage;
        if (aligned > base) munmap(raw, aligned - base);
        const std::size_t tail = kHugePage - (aligned - base);
        if (tail) munmap(reinterpret_cast<void*>(aligned + rounded), tail);
#if defined(MADV_HUGEPAGE)
        madvise(reinterpret_cast<void*>(aligned), rounded, MADV_HUGEPAGE);
#endif
        ptr_ = reinterpret_cast<void*>(aligned);
        size_ = rounded;
        mapped_ = true;
        return;
    }
#endif
    ptr_ = std::aligned_alloc(align, rounded);
    if (!ptr_) throw std::bad_alloc();
    size_ = rounded;
    mapped_ = false;
}

namespace {

struct GemvChunks {
    void* ptr = nullptr;
    std::size_t bytes = 0;
    ~GemvChunks() { std::free(ptr); }
};

}  // namespace

void* thread_scratch(std::size_t bytes) { return grown(t_scratch, t_scratch_small_calls, bytes); }

void* thread_c_scratch(std::size_t bytes) { return grown(t_c_scratch, t_c_scratch_small_calls, bytes); }

std::size_t thread_scratch_bytes() { return t_scratch.size(); }

void* thread_gemv_chunks(int count, int64_t bytes) {
    thread_local GemvChunks chunks;
    const std::size_t need = std::size_t(count) * std::size_t(bytes);
    if (need > chunks.bytes) {
        void* p = std::aligned_alloc(64, need);
        if (!p) throw std::bad_alloc();
        std::free(chunks.ptr);
        chunks.ptr = p;
        chunks.bytes = need;
    }
    return chunks.ptr;
}

}  // namespace fastgemm
