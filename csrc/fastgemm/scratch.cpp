#include "scratch.hpp"

#include <cstdlib>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace fastgemm {
namespace {

constexpr std::size_t kHugePage = std::size_t(2) << 20;

struct Buffer {
    void* ptr = nullptr;
    std::size_t size = 0;
    ~Buffer() { std::free(ptr); }
};

}  // namespace

void* thread_scratch(std::size_t bytes) {
    thread_local Buffer buf;
    if (bytes > buf.size) {
        // Packed panels span megabytes and are swept by every microkernel call: on 4 KiB
        // pages that is a TLB miss every few calls. Large buffers get 2 MiB alignment and ask
        // for transparent huge pages (as NumPy does for its own large arrays).
        const bool huge = bytes >= kHugePage;
        const std::size_t align = huge ? kHugePage : 64;
        const std::size_t rounded = (bytes + align - 1) / align * align;
        void* p = std::aligned_alloc(align, rounded);
        if (!p) throw std::bad_alloc();
#if defined(__linux__) && defined(MADV_HUGEPAGE)
        if (huge) madvise(p, rounded, MADV_HUGEPAGE);
#endif
        std::free(buf.ptr);
        buf.ptr = p;
        buf.size = rounded;
    }
    return buf.ptr;
}

}  // namespace fastgemm
