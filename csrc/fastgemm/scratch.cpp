#include "scratch.hpp"

#include <cstdint>
#include <cstdlib>
#include <new>

#include "kernel.hpp"

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace fastgemm {
namespace {

constexpr std::size_t kHugePage = std::size_t(2) << 20;
// Buffers at least this large are given back when a call needs under a quarter of them.
constexpr std::size_t kShrinkFrom = std::size_t(4) << 20;

// Packed panels span megabytes and are swept by every microkernel call: on 4 KiB pages that
// is a TLB miss every few calls. Large buffers are 2 MiB aligned and ask for transparent huge
// pages (as NumPy does for its own large arrays). On Linux they are mapped directly, so
// freeing one returns it to the OS (malloc may keep a freed block in its heap).
struct Buffer {
    void* ptr = nullptr;
    std::size_t size = 0;
    bool mapped = false;

    void release() {
#if defined(__linux__)
        if (mapped) {
            munmap(ptr, size);
        } else {
            std::free(ptr);
        }
#else
        std::free(ptr);
#endif
        ptr = nullptr;
        size = 0;
        mapped = false;
    }
    void allocate(std::size_t bytes) {
        const bool huge = bytes >= kHugePage;
        const std::size_t align = huge ? kHugePage : 64;
        const std::size_t rounded = (bytes + align - 1) / align * align;
#if defined(__linux__)
        if (huge) {
            // Over-map by one huge page, then unmap the unaligned head and the tail.
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
            ptr = reinterpret_cast<void*>(aligned);
            size = rounded;
            mapped = true;
            return;
        }
#endif
        ptr = std::aligned_alloc(align, rounded);
        if (!ptr) throw std::bad_alloc();
        size = rounded;
        mapped = false;
    }
    ~Buffer() { release(); }
};

struct GemvChunks {
    void* ptr = nullptr;
    int count = 0;
    ~GemvChunks() { std::free(ptr); }
};

}  // namespace

void* thread_scratch(std::size_t bytes) {
    thread_local Buffer buf;
    const bool grow = bytes > buf.size;
    const bool shrink = buf.size >= kShrinkFrom && bytes < buf.size / 4;
    if (grow || shrink) {
        buf.release();
        buf.allocate(bytes);
    }
    return buf.ptr;
}

void* thread_gemv_chunks(int count) {
    thread_local GemvChunks chunks;
    if (count > chunks.count) {
        void* p = std::aligned_alloc(64, std::size_t(count) * std::size_t(kGemvChunkBytes));
        if (!p) throw std::bad_alloc();
        std::free(chunks.ptr);
        chunks.ptr = p;
        chunks.count = count;
    }
    return chunks.ptr;
}

}  // namespace fastgemm
