// Overflow-checked index arithmetic shared by the entry points that validate views.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace fastgemm {

inline int64_t checked_mul(int64_t x, int64_t y) {
    int64_t r;
    if (__builtin_mul_overflow(x, y, &r)) throw std::overflow_error("matrix sizes overflow 64-bit indexing");
    return r;
}

inline int64_t checked_add(int64_t x, int64_t y) {
    int64_t r;
    if (__builtin_add_overflow(x, y, &r)) throw std::overflow_error("matrix sizes overflow 64-bit indexing");
    return r;
}

// Farthest element offset a view reaches from its start, in either direction: it must be
// representable, or pointer arithmetic in the loops wraps. Throws std::overflow_error.
template <typename V>
int64_t extent(const V& v) {
    if (v.rows == 0 || v.cols == 0) return 0;
    return checked_add(checked_mul(v.rows - 1, v.rs < 0 ? -v.rs : v.rs),
                       checked_mul(v.cols - 1, v.cs < 0 ? -v.cs : v.cs));
}

inline std::string shape_str(int64_t rows, int64_t cols) {
    return "(" + std::to_string(rows) + ", " + std::to_string(cols) + ")";
}

}  // namespace fastgemm
