// The fused epilogue of a product: C = act(alpha * A @ B + beta * C + bias), bias one value per
// column of C, applied to each finished tile while it is still in L1; see docs/DESIGN.md,
// "Fused bias and activation".
#pragma once

#include <cstdint>

namespace fastgemm {

// The values fastgemm._epilogue.ACTIVATIONS maps the Python names to.
enum class Activation : int { none, relu, gelu, gelu_tanh, silu, sigmoid, tanh };
constexpr int kActivationCount = 7;

template <typename T>
struct Epilogue {
    const T* bias = nullptr;  // n values, one per column of C; null: no bias
    Activation act = Activation::none;
    bool active() const { return bias != nullptr || act != Activation::none; }
    // The epilogue of columns [j, ...) of the same product.
    Epilogue from_column(int64_t j) const { return {bias ? bias + j : nullptr, act}; }
};

template <typename T>
struct KernelTable;
template <typename T>
struct View;

// The epilogue on a finished block of C with any strides, through the table's vectorised
// `epilogue` (rows of unit column stride; other layouts go through a small contiguous buffer).
template <typename T>
void apply_epilogue(const KernelTable<T>& uk, const View<T>& c, const Epilogue<T>& ep) {
    constexpr int64_t kBuf = 256;
    T buf[kBuf];
    if (c.rows <= 0 || c.cols <= 0) return;
    const bool column = c.cols == 1 && c.rows > 1;
    if (!column && (c.cs == 1 || c.cols == 1)) {
        uk.epilogue(c.rows, c.cols, c.data, c.rs, ep.bias, ep.act);
        return;
    }
    // A column or a column-major C: each column holds one bias value, spread over a buffer so
    // the column is one vectorised row.
    if (column || (c.rs == 1 && c.rows > 1)) {
        T fill[kBuf];
        for (int64_t j = 0; j < c.cols; ++j) {
            T* col = c.data + j * c.cs;
            for (int64_t i0 = 0; i0 < c.rows; i0 += kBuf) {
                const int64_t len = c.rows - i0 < kBuf ? c.rows - i0 : kBuf;
                if (ep.bias)
                    for (int64_t i = 0; i < len; ++i) fill[i] = ep.bias[j];
                T* p = col + i0 * c.rs;
                if (c.rs == 1) {
                    uk.epilogue(1, len, p, 0, ep.bias ? fill : nullptr, ep.act);
                    continue;
                }
                for (int64_t i = 0; i < len; ++i) buf[i] = p[i * c.rs];
                uk.epilogue(1, len, buf, 0, ep.bias ? fill : nullptr, ep.act);
                for (int64_t i = 0; i < len; ++i) p[i * c.rs] = buf[i];
            }
        }
        return;
    }
    // Any other strides: row by row through the buffer.
    for (int64_t i = 0; i < c.rows; ++i)
        for (int64_t j0 = 0; j0 < c.cols; j0 += kBuf) {
            const int64_t len = c.cols - j0 < kBuf ? c.cols - j0 : kBuf;
            T* p = c.data + i * c.rs + j0 * c.cs;
            for (int64_t j = 0; j < len; ++j) buf[j] = p[j * c.cs];
            uk.epilogue(1, len, buf, 0, ep.bias ? ep.bias + j0 : nullptr, ep.act);
            for (int64_t j = 0; j < len; ++j) p[j * c.cs] = buf[j];
        }
}

}  // namespace fastgemm
