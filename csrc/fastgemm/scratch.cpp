#include "scratch.hpp"

#include <cstdlib>
#include <new>

namespace fastgemm {
namespace {

struct Buffer {
    void* ptr = nullptr;
    std::size_t size = 0;
    ~Buffer() { std::free(ptr); }
};

}  // namespace

void* thread_scratch(std::size_t bytes) {
    thread_local Buffer buf;
    if (bytes > buf.size) {
        const std::size_t rounded = (bytes + 63) / 64 * 64;
        void* p = std::aligned_alloc(64, rounded);
        if (!p) throw std::bad_alloc();
        std::free(buf.ptr);
        buf.ptr = p;
        buf.size = rounded;
    }
    return buf.ptr;
}

}  // namespace fastgemm
