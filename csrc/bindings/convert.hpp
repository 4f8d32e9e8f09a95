// ndarray -> core View, shared by every binding that hands NumPy arrays to the core.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "../fastgemm/batched.hpp"
#include "../fastgemm/epilogue.hpp"
#include "../fastgemm/view.hpp"

namespace fastgemm {
namespace bindings {

// dtype T in native byte order. Compared by type number: dtype objects are not unique (an
// array that went through pickle has its own float32 descriptor).
template <typename T>
void check_dtype(const pybind11::array& x, const std::string& what) {
    using E = std::remove_const_t<T>;
    const pybind11::dtype want = pybind11::dtype::of<E>();
    const pybind11::dtype got = x.dtype();
    if (got.num() != want.num())
        throw pybind11::type_error(what + ": wrong dtype " + std::string(pybind11::str(got)) + ", expected " +
                                   std::string(pybind11::str(want)));
    constexpr char native = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? '<' : '>';
    const char order = got.byteorder();
    if (order != '=' && order != '|' && order != native)
        throw pybind11::type_error(what + ": dtype " + std::string(pybind11::str(got.attr("str"))) +
                                   " is not in native byte order; convert it with .astype(" +
                                   std::string(pybind11::str(want)) + ")");
}

// The 2-D products take matrices only (stacks go through the batched entries).
inline void require_2d(const pybind11::array& x, const char* what) {
    if (x.ndim() != 2) throw pybind11::value_error(std::string(what) + ": expected a 2-D array");
}

// a, b and c stacks of matrices with one batch shape (the batched entries; `fn` names the entry).
inline void require_same_batch(const pybind11::array& a, const pybind11::array& b, const pybind11::array& c,
                               const std::string& fn) {
    const pybind11::ssize_t nd = c.ndim();
    if (nd < 2 || a.ndim() != nd || b.ndim() != nd)
        throw pybind11::value_error(fn + ": a, b and c must have the same number (>= 2) of dimensions");
    for (pybind11::ssize_t d = 0; d < nd - 2; ++d)
        if (a.shape(d) != c.shape(d) || b.shape(d) != c.shape(d))
            throw pybind11::value_error(fn + ": a, b and c must have the same batch shape");
}

// Element stride of axis `axis` (byte strides must be whole elements).
template <typename T>
int64_t element_stride(const pybind11::array& x, pybind11::ssize_t axis, const std::string& what) {
    const auto item = pybind11::ssize_t(sizeof(T));
    if (x.strides(axis) % item) throw pybind11::value_error(what + ": strides are not a multiple of the item size");
    return x.strides(axis) / item;
}

// The batch axes of stacks a, b, c that passed require_same_batch (items TA, TB, TC): c's
// lengths and each operand's element strides.
template <typename TA, typename TB, typename TC>
std::vector<BatchAxis> batch_axes(const pybind11::array& a, const pybind11::array& b, const pybind11::array& c,
                                  const std::string& fn) {
    std::vector<BatchAxis> axes;
    for (pybind11::ssize_t d = 0; d < c.ndim() - 2; ++d)
        axes.push_back({c.shape(d), element_stride<TA>(a, d, fn + ": a"), element_stride<TB>(b, d, fn + ": b"),
                        element_stride<TC>(c, d, fn + ": c")});
    return axes;
}

// The matrix in x's last two axes (item 0 of a stack), dtype-checked. T const: read only;
// otherwise x must be writeable.
template <typename T>
View<T> matrix_view(const pybind11::array& x, const std::string& what) {
    check_dtype<T>(x, what);
    if (x.ndim() < 2) throw pybind11::value_error(what + ": expected at least 2 dimensions");
    T* data;
    if constexpr (std::is_const_v<T>) {
        data = static_cast<T*>(x.data());
    } else {
        if (!x.writeable()) throw pybind11::value_error(what + ": array is read-only");
        data = static_cast<T*>(const_cast<pybind11::array&>(x).mutable_data());
    }
    const pybind11::ssize_t r = x.ndim() - 2, c = x.ndim() - 1;
    return {data, x.shape(r), x.shape(c), element_stride<T>(x, r, what), element_stride<T>(x, c, what)};
}

// The epilogue's bias (None, or a contiguous 1-D array of C's n columns, not overlapping C:
// fastgemm._epilogue makes it so) and activation number.
template <typename T>
Epilogue<T> epilogue_of(const std::optional<pybind11::array>& bias, int activation, const View<T>& c) {
    if (activation < 0 || activation >= kActivationCount) throw pybind11::value_error("activation: unknown number");
    Epilogue<T> ep{nullptr, Activation(activation)};
    if (bias) {
        check_dtype<T>(*bias, "bias");
        if (bias->ndim() != 1 || bias->shape(0) != c.cols || (c.cols > 1 && bias->strides(0) != sizeof(T)))
            throw pybind11::value_error("bias: expected a contiguous 1-D array of C's column count");
        ep.bias = static_cast<const T*>(bias->data());
    }
    return ep;
}

}  // namespace bindings
}  // namespace fastgemm
