// Strided matrix views and the index arithmetic every entry point validates them with.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace fastgemm {

// A matrix view with signed element strides (a transpose is just swapped strides,
// a reversed axis a negative stride, a broadcast axis a zero stride).
template <typename T>
struct View {
    T* data;
    int64_t rows;
    int64_t cols;
    int64_t rs;  // elements between rows
    int64_t cs;  // elements between columns
};

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

constexpr int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
constexpr int64_t round_up(int64_t a, int64_t m) { return ceil_div(a, m) * m; }

inline int64_t abs64(int64_t x) { return x < 0 ? -x : x; }

// Farthest element offset a view reaches from its start, in either direction: it must be
// representable, or pointer arithmetic in the loops wraps. Throws std::overflow_error.
template <typename V>
int64_t extent(const V& v) {
    if (v.rows == 0 || v.cols == 0) return 0;
    return checked_add(checked_mul(v.rows - 1, abs64(v.rs)), checked_mul(v.cols - 1, abs64(v.cs)));
}

// True when two distinct (i, j) of the view name the same element: i*rs + j*cs == i'*rs + j'*cs
// has a solution with |i - i'| < rows, |j - j'| < cols exactly when the smallest nonzero step
// (|cs|/g, -|rs|/g), g = gcd(|rs|, |cs|), fits in the view.
template <typename V>
bool overlaps_itself(const V& v) {
    if (v.rows <= 0 || v.cols <= 0) return false;
    const int64_t r = abs64(v.rs), c = abs64(v.cs);
    if (r == 0 || c == 0) return (r == 0 && v.rows > 1) || (c == 0 && v.cols > 1);
    // g = 1 where either step is 1, as in every contiguous view: no divisions (they cost a
    // single small product a tenth of its time).
    if (c == 1 || r == 1) return c < v.rows && r < v.cols;
    int64_t x = r, y = c;
    while (y) {
        const int64_t t = x % y;
        x = y;
        y = t;
    }
    return c / x < v.rows && r / x < v.cols;
}

inline std::string shape_str(int64_t rows, int64_t cols) {
    return "(" + std::to_string(rows) + ", " + std::to_string(cols) + ")";
}

// The one shape check of a product C = A @ B: dimensions non-negative and matching, every
// extent indexable. `what` names the caller in the message. Throws std::invalid_argument or
// std::overflow_error.
template <typename A, typename B, typename C>
void check_product(const A& a, const B& b, const C& c, const char* what) {
    if (a.rows != c.rows || b.cols != c.cols || a.cols != b.rows)
        throw std::invalid_argument(std::string(what) + ": A " + shape_str(a.rows, a.cols) + " @ B " +
                                    shape_str(b.rows, b.cols) + " does not fit C " + shape_str(c.rows, c.cols));
    if (a.rows < 0 || a.cols < 0 || b.cols < 0)
        throw std::invalid_argument(std::string(what) + ": negative matrix dimension");
    extent(a);
    extent(b);
    extent(c);
}

}  // namespace fastgemm
