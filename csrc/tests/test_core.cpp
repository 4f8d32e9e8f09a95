// C++ test driver for the core: fastgemm::gemm<float/double> with every runnable kernel, over
// edge shapes, strides (transposed, stepped, negative) and alpha/beta cases, against a long
// double reference. Built with ASan/UBSan (FASTGEMM_SANITIZE) it shows that no kernel reads
// or writes outside its arrays: A and B live in allocations of exactly their extent, C once in
// an exact allocation (the sanitizer catches any stray access) and once between sentinel-filled
// guards (a stray write changes a sentinel). Portable: no ISA-specific code, kernels come from
// runnable_kernels(), so it also runs on aarch64 under qemu. The 2-byte and int8 entries too.
// `--quick`: each product family once per kernel set (CI's emulated x86 CPUs check dispatch);
// `--shard I/N`: a part of the kernel sets (CI runs the sanitized driver in two such parts).
#include <algorithm>
#include <atomic>
#include <cfenv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "../fastgemm/batched.hpp"
#include "../fastgemm/blocking.hpp"
#include "../fastgemm/caches.hpp"
#include "../fastgemm/dispatch.hpp"
#include "../fastgemm/driver.hpp"
#include "../fastgemm/fma_width.hpp"
#include "../fastgemm/gemm.hpp"
#include "../fastgemm/gemm_int8.hpp"
#include "../fastgemm/gemm_lowp.hpp"
#include "../fastgemm/packed.hpp"
#include "../fastgemm/paths.hpp"
#include "../fastgemm/scratch.hpp"
#include "../fastgemm/threading.hpp"
#include "../fastgemm/view.hpp"

extern "C" int fastgemm_set_num_threads(int n);

using fastgemm::View;

namespace {

int passed = 0, failed = 0;

void report(bool ok, const std::string& what) {
    if (ok) {
        ++passed;
    } else if (++failed <= 30) {
        std::printf("FAIL %s\n", what.c_str());
    }
}

// f() ran to the end; an exception is reported as a failure of `what`.
template <typename F>
bool ran(const char* what, F f) {
    try {
        f();
        return true;
    } catch (const std::exception& e) {
        report(false, std::string(what) + ": threw " + e.what());
        return false;
    }
}

uint64_t rng_state = 0x9e3779b97f4a7c15ull;
double uniform() {  // in [-1, 1), deterministic on every platform
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return double(rng_state >> 11) / double(1ull << 52) - 1.0;
}

enum Layout { kRowMajor, kColMajor, kStepped, kNegative, kLayouts };
const char* const kLayoutName[] = {"row", "col", "stepped", "negative"};

// A rows x cols matrix stored with a layout's strides, with `guard` sentinel elements on
// both sides of its extent (0: the allocation is exactly the extent).
template <typename T>
struct Placed {
    std::vector<T> store;
    T* origin = nullptr;
    int64_t rows, cols, rs, cs, guard;

    Placed(int64_t r, int64_t c, Layout layout, int64_t g, T sentinel) : rows(r), cols(c), guard(g) {
        const int64_t r1 = r > 0 ? r : 1, c1 = c > 0 ? c : 1;
        switch (layout) {
            case kRowMajor: rs = c1, cs = 1; break;
            case kColMajor: rs = 1, cs = r1; break;
            case kStepped: rs = 2 * c1 + 3, cs = 2; break;
            default: rs = -c1, cs = -1; break;
        }
        int64_t lo = 0, hi = 0;
        if (r > 0 && c > 0) {
            for (int64_t span : {(r - 1) * rs, (c - 1) * cs}) (span < 0 ? lo : hi) += span;
            store.assign(size_t(2 * g + hi - lo + 1), sentinel);
        } else {
            store.assign(size_t(2 * g), sentinel);  // nothing may be touched at all
        }
        origin = store.data() + g - lo;
    }
    T& at(int64_t i, int64_t j) { return origin[i * rs + j * cs]; }
    // The matrix = `values` (rows x cols, row-major).
    void fill(const std::vector<T>& values) {
        for (int64_t i = 0; i < rows; ++i)
            for (int64_t j = 0; j < cols; ++j) at(i, j) = values[size_t(i * cols + j)];
    }
    View<T> view() { return {origin, rows, cols, rs, cs}; }
    View<const T> cview() { return {origin, rows, cols, rs, cs}; }
    // Elements outside the matrix itself (guards and stepped gaps) all still hold `sentinel`.
    bool outside_untouched(T sentinel) {
        std::vector<char> inside(store.size(), 0);
        for (int64_t i = 0; i < rows; ++i)
            for (int64_t j = 0; j < cols; ++j) inside[size_t(&at(i, j) - store.data())] = 1;
        for (size_t e = 0; e < store.size(); ++e)
            if (!inside[e] && !(store[e] == sentinel)) return false;
        return true;
    }
};

template <typename T>
const char* type_name() {
    return sizeof(T) == 4 ? "float" : "double";
}

struct Case {
    int64_t m, n, k;
    Layout la, lb, lc;
    double alpha, beta;
    bool nan_in_c;   // C starts as NaN: must not survive beta == 0
    bool nan_in_ab;  // A and B are NaN: must not be read when alpha == 0 or k == 0
};

// packed: B goes through a PackedB made for the active kernel set.
// One product checked on a C placed with layout lc, first inside sentinel guards (stray writes),
// then exactly (the sanitizer catches any access): C starts as c0 (m x n, row-major), compute(c)
// runs the product, describe(what, size, guard) names the case. Each element must be NaN where
// the long double reference alpha * sum_p term(i, p, j) + beta * c0 is, else within
// 2 (k + 2) (u |terms| + tiny) of it: K roundings in the dot product plus alpha and beta
// scaling (DESIGN.md).
template <typename T, typename Term, typename Compute, typename Describe>
void check_guarded(int64_t m, int64_t n, int64_t k, Layout lc, const std::vector<T>& c0, T alpha, T beta, Term term,
                   Compute compute, Describe describe) {
    const T sentinel = T(-12345.0);
    const long double u = sizeof(T) == 4 ? std::ldexp(1.0L, -24) : std::ldexp(1.0L, -53);
    const long double tiny = std::numeric_limits<T>::denorm_min();
    // Guarded C catches stray writes by sentinel; exact C lets the sanitizer catch any access.
    for (int64_t guard : {int64_t(64), int64_t(0)}) {
        Placed<T> c(m, n, lc, guard, sentinel);
        c.fill(c0);
        char what[256];
        describe(what, sizeof what, guard ? "+guards" : "");
        if (!ran(what, [&] { compute(c.view()); })) continue;
        bool ok = true;
        for (int64_t i = 0; i < m && ok; ++i)
            for (int64_t j = 0; j < n && ok; ++j) {
                long double ref = 0, mag = 0;
                if (alpha != T(0)) {
                    for (int64_t p = 0; p < k; ++p) {
                        const long double x = term(i, p, j);
                        ref += x;
                        mag += std::fabs(x);
                    }
                    ref *= (long double)alpha;
                    mag *= std::fabs((long double)alpha);
                }
                if (beta != T(0)) {
                    const long double cij = c0[size_t(i * n + j)];
                    ref += (long double)beta * cij;
                    mag += std::fabs((long double)beta * cij);
                }
                const long double got = c.at(i, j);
                if (std::isnan(ref)) {
                    ok = std::isnan(got);
                } else {
                    const long double bound = 2.0L * (k + 2) * (u * mag + tiny);
                    ok = std::isfinite(got) && std::fabs(got - ref) <= bound;
                }
                if (!ok)
                    std::snprintf(what + std::strlen(what), sizeof what - std::strlen(what),
                                  ": C[%lld,%lld] = %Lg, expected %Lg", (long long)i, (long long)j, got, ref);
            }
        report(ok, what);
        report(c.outside_untouched(sentinel), std::string(what) + ": wrote outside C");
    }
}

// packed: B goes through a PackedB made for the active kernel set.
template <typename T>
void run_case(const char* kernel, const Case& cs, bool packed = false) {
    const int64_t m = cs.m, n = cs.n, k = cs.k;
    Placed<T> a(m, k, cs.la, 0, T(0)), b(k, n, cs.lb, 0, T(0));
    const T nan = std::numeric_limits<T>::quiet_NaN();
    for (int64_t i = 0; i < m; ++i)
        for (int64_t p = 0; p < k; ++p) a.at(i, p) = cs.nan_in_ab ? nan : T(uniform());
    for (int64_t p = 0; p < k; ++p)
        for (int64_t j = 0; j < n; ++j) b.at(p, j) = cs.nan_in_ab ? nan : T(uniform());
    std::vector<T> c0(size_t(m * n));
    for (T& x : c0) x = cs.nan_in_c ? nan : T(uniform());
    const T alpha = T(cs.alpha), beta = T(cs.beta);
    check_guarded<T>(
        m, n, k, cs.lc, c0, alpha, beta,
        [&](int64_t i, int64_t p, int64_t j) { return (long double)a.at(i, p) * (long double)b.at(p, j); },
        [&](View<T> c) {
            if (packed)
                fastgemm::gemm<T>(alpha, a.cview(), fastgemm::PackedB<T>(fastgemm::active_kernels(), b.cview()), beta,
                                  c);
            else fastgemm::gemm<T>(alpha, a.cview(), b.cview(), beta, c);
        },
        [&](char* what, size_t size, const char* guard) {
            std::snprintf(what, size, "%s %s m=%lld n=%lld k=%lld A=%s B=%s%s C=%s%s alpha=%g beta=%g%s%s", kernel,
                          type_name<T>(), (long long)m, (long long)n, (long long)k, kLayoutName[cs.la],
                          kLayoutName[cs.lb], packed ? " packed" : "", kLayoutName[cs.lc], guard, cs.alpha, cs.beta,
                          cs.nan_in_c ? " NaN-in-C" : "", cs.nan_in_ab ? " NaN-in-AB" : "");
        });
}

const fastgemm::KernelTable<float>& table_of(const fastgemm::KernelSet& ks, float) { return ks.f32; }
const fastgemm::KernelTable<double>& table_of(const fastgemm::KernelSet& ks, double) { return ks.f64; }

template <typename T>
void run_kernel(const fastgemm::KernelSet& ks, bool packed = false) {
    const fastgemm::KernelTable<T>& uk = table_of(ks, T(0));
    const int64_t mr = uk.mr, nr = uk.nr;
    const fastgemm::Blocking bs = fastgemm::blocking_for(uk);
    const int64_t mc = bs.mc, kc = bs.kc;

    std::vector<std::vector<int64_t>> shapes = {
        {0, 0, 0}, {0, 5, 3},    {5, 0, 3},    {5, 3, 0},   {1, 1, 1},   {1, 7, 1},   {7, 1, 1},
        {1, 1, 9}, {13, 17, 19}, {31, 37, 41}, {401, 2, 3}, {2, 401, 3}, {3, 2, 509},
    };
    for (int64_t d : {-1, 0, 1}) {
        shapes.push_back({mr + d, nr + 1, 7});
        shapes.push_back({2 * mr + d, 2 * nr - 1, 3});
        shapes.push_back({mr + 1, nr + d, 5});
        shapes.push_back({mr - 1, 2 * nr + d, 4});
        shapes.push_back({mr + 1, nr - 1, kc + d});
        shapes.push_back({mc + d, 3, 4});
    }
    shapes.push_back({mc + 1, nr + 1, kc + 1});  // every loop has a partial block
    // One block of rows against a B past L2 (not a small product): B packed a group of slivers
    // at a time (driver.hpp, b_by_group), two groups and a partial sliver, three k slices.
    const int64_t group = std::max<int64_t>(1, fastgemm::caches().l2.size / 4 / (kc * nr * int64_t(sizeof(T))));
    // A small product with C past half of L2: the small kernels take it 16 rows at a time
    // (paths.hpp, small_block_rows), the last block partial; with k <= kShortKMax whole, short_k
    // grouping rows 8 (float64) or 16 (float32) apart over all of them on AVX-512.
    const int64_t past_half_l2 = int64_t(fastgemm::caches().l2.size) / (515 * int64_t(sizeof(T))) + 7;
    shapes.push_back({past_half_l2, 515, fastgemm::kShortKMax + 1});
    shapes.push_back({past_half_l2, 515, 3});
    const int64_t wide = 2 * group * nr + 5;
    shapes.push_back(
        {mr + 3, wide, std::max(2 * kc + 1, fastgemm::caches().l2.size / (wide * int64_t(sizeof(T))) + 1)});
    // Past L2 for the small kernels: few rows streamed (2 to 6 rows), two chunks of partial sums
    // for 3 rows. Only on sets that stream them: elsewhere the blocked path, covered above, would
    // take these (slow under qemu).
    if (ks.tuning.few_rows_max_m > 0) {
        shapes.push_back({2, 1030, 1030});
        shapes.push_back({3, fastgemm::kFewRowsChunkBytes / int64_t(sizeof(T)) / 3 + 5, 203});
        shapes.push_back({fastgemm::kFewRowsMaxM, 777, 1500});
    }
    shapes.push_back({3, bs.nc + 5, 4});  // two NC panels

    const double scalars[][2] = {{1, 0}, {0.75, -0.5}, {-1, 1}, {0, 0.5}, {0, 0}};
    int idx = 0;
    for (const auto& s : shapes) {
        if (s[0] < 0 || s[1] < 0 || s[2] < 0) continue;
        // Rotate layouts and scalars through the shapes; the small shapes below get them all.
        for (int sc = 0; sc < 5; ++sc, ++idx) {
            const Case c{s[0],
                         s[1],
                         s[2],
                         Layout(idx % kLayouts),
                         Layout((idx / 4) % kLayouts),
                         Layout((idx / 2 + 1) % kLayouts),
                         scalars[sc][0],
                         scalars[sc][1],
                         false,
                         false};
            run_case<T>(ks.name, c, packed);
        }
    }
    for (const auto& s : std::vector<std::vector<int64_t>>{{1, 1, 1}, {mr + 1, nr - 1, 5}})
        for (int la = 0; la < kLayouts; ++la)
            for (int lb = 0; lb < kLayouts; ++lb)
                for (int lc = 0; lc < kLayouts; ++lc)
                    run_case<T>(ks.name,
                                {s[0], s[1], s[2], Layout(la), Layout(lb), Layout(lc), 1.5, -1.0, false, false},
                                packed);
    // A narrow C with A by columns: the small kernels on C^T, each thread's piece put into C
    // (gemm.cpp, try_narrow_small_transposed; 12 of 16 lanes, and a few-column product past 200
    // rows with short k); A by columns past small_columns_max_m rows with short k and C's rows
    // within 1152 bytes (short_columns_fit); two columns past a vector at k = 20 (float32: the
    // few-row kernels, small_tail_rows); every B and C layout, beta 0 and not.
    const int64_t idle = std::max<int64_t>(2, uk.lanes * 3 / 4);
    for (const auto& s :
         std::vector<std::vector<int64_t>>{{300, idle, 40}, {250, 7, 100}, {197, 101, 12}, {300, uk.lanes + 2, 20}})
        for (int lb = 0; lb < kLayouts; ++lb)
            for (int lc = 0; lc < kLayouts; ++lc)
                run_case<T>(
                    ks.name,
                    {s[0], s[1], s[2], kColMajor, Layout(lb), Layout(lc), 0.75, lc % 2 ? 0.5 : 0.0, false, false},
                    packed);
    for (const auto& s : std::vector<std::vector<int64_t>>{{1, 1, 1}, {mr + 1, nr + 1, 3}, {mr - 1, nr - 1, 0}}) {
        for (int lc = 0; lc < kLayouts; ++lc) {
            run_case<T>(ks.name, {s[0], s[1], s[2], kRowMajor, kColMajor, Layout(lc), 1.0, 0.0, true, false}, packed);
            run_case<T>(ks.name, {s[0], s[1], s[2], kColMajor, kRowMajor, Layout(lc), 0.0, 0.5, false, true}, packed);
            run_case<T>(ks.name, {s[0], s[1], s[2], kStepped, kNegative, Layout(lc), 0.0, 0.0, true, true}, packed);
        }
    }
}

template <typename Ex, typename F>
void expect_throw(const char* what, F f) {
    bool ok = false;
    try {
        f();
    } catch (const Ex&) {
        ok = true;
    } catch (...) {
    }
    report(ok, what);
}

// tile_rows cuts a block into ceil(mc / MR) tiles covering each row once, of heights 1..MR that
// differ by at most one (whole MR-row tiles when MR divides mc).
void tile_heights() {
    for (int mr : {4, 6, 8, 14, 16})
        for (int64_t mc = 1; mc <= 200; ++mc) {
            const int64_t tiles = fastgemm::ceil_div(mc, int64_t(mr));
            int64_t next = 0;
            int lo = mr, hi = 0;
            bool ok = true;
            for (int64_t t = 0; t < tiles; ++t) {
                const auto [r, h] = fastgemm::tile_rows(mc, tiles, t);
                ok = ok && r == next && h >= 1 && h <= mr && (mc % mr != 0 || h == mr);
                next = r + h, lo = std::min(lo, h), hi = std::max(hi, h);
            }
            report(ok && next == mc && hi - lo <= 1,
                   "tile_rows mr " + std::to_string(mr) + " mc " + std::to_string(mc));
        }
}

void bad_input() {
    float x[4] = {1, 2, 3, 4};
    const View<const float> a{x, 2, 2, 2, 1};
    expect_throw<std::invalid_argument>("mismatched shapes throw", [&] {
        fastgemm::gemm<float>(1.f, a, View<const float>{x, 3, 1, 1, 1}, 0.f, View<float>{x, 2, 1, 1, 1});
    });
    // Extents that cannot be indexed are refused before anything is touched.
    const int64_t big = int64_t(1) << 40;
    expect_throw<std::overflow_error>("overflowing extent throws", [&] {
        fastgemm::gemm<float>(1.f, View<const float>{x, big, 2, big, 1}, a, 0.f, View<float>{x, big, 2, big, 1});
    });
    expect_throw<std::invalid_argument>("unknown kernel name throws", [] { fastgemm::set_kernels("no-such-kernel"); });
}

// overlaps_itself against brute force: every (rows, cols, rs, cs) in a small box.
void overlap_rule() {
    bool ok = true;
    for (int64_t rows = 0; rows <= 4 && ok; ++rows)
        for (int64_t cols = 0; cols <= 4 && ok; ++cols)
            for (int64_t rs = -6; rs <= 6 && ok; ++rs)
                for (int64_t cs = -6; cs <= 6 && ok; ++cs) {
                    bool brute = false;
                    for (int64_t i = 0; i < rows; ++i)
                        for (int64_t j = 0; j < cols; ++j)
                            for (int64_t i2 = 0; i2 < rows; ++i2)
                                for (int64_t j2 = 0; j2 < cols; ++j2)
                                    if ((i != i2 || j != j2) && i * rs + j * cs == i2 * rs + j2 * cs) brute = true;
                    const View<float> v{nullptr, rows, cols, rs, cs};
                    if (fastgemm::overlaps_itself(v) != brute) {
                        ok = false;
                        std::printf("  overlaps_itself rows=%lld cols=%lld rs=%lld cs=%lld: %d, brute force %d\n",
                                    (long long)rows, (long long)cols, (long long)rs, (long long)cs,
                                    int(fastgemm::overlaps_itself(v)), int(brute));
                    }
                }
    report(ok, "overlaps_itself matches brute force");
    float x[16] = {};
    const View<const float> a{x, 2, 2, 2, 1};
    expect_throw<std::invalid_argument>("gemm refuses a C with a zero row stride",
                                        [&] { fastgemm::gemm<float>(1.f, a, a, 0.f, View<float>{x, 2, 2, 0, 1}); });
    expect_throw<std::invalid_argument>("gemm refuses a C whose rows overlap",
                                        [&] { fastgemm::gemm<float>(1.f, a, a, 0.f, View<float>{x, 2, 2, 1, 1}); });
    expect_throw<std::invalid_argument>("gemm_batched refuses a C that overlaps itself", [&] {
        fastgemm::gemm_batched<float>(1.f, a, a, 0.f, View<float>{x, 2, 2, 0, 1}, {{2, 4, 4, 4}});
    });
    const View<float> c{x + 8, 2, 2, 2, 1};
    report(fastgemm::c_disjoint(c, {{2, 4, 4, 4}}) && !fastgemm::c_disjoint(c, {{2, 4, 4, 3}}) &&
               !fastgemm::c_disjoint(View<float>{x, 2, 2, 1, 1}, {}),
           "c_disjoint: separate items, overlapping items, a self-overlapping matrix");
}

// A row of C times a matrix stored by rows (the matrix-vector rows form) whose rows start at
// every element offset in a line: gemv_range runs the elements before the line boundary apart
// on Intel CPUs (paths.hpp, gemv_head). Every offset gives the bits of the matrix on a line boundary, within
// the K-scaled bound of a double reference; rows not a multiple of 64 bytes apart (no head)
// and widths just past and under the head's bound alike.
template <typename T>
void gemv_head_check(const fastgemm::KernelSet& ks) {
    constexpr int64_t per_line = 64 / int64_t(sizeof(T)), k = 37;
    // The first element of buf on a 64-byte line boundary.
    auto first_line = [](std::vector<T>& buf) {
        return buf.data() + ((64 - reinterpret_cast<uintptr_t>(buf.data()) % 64) % 64) / sizeof(T);
    };
    const int64_t bound = fastgemm::kGemvHeadMinBytes / int64_t(sizeof(T));
    for (int64_t n : {bound + per_line, bound + per_line - 1, bound + 2 * per_line, 4 * bound + 3}) {
        const int64_t ld = n % per_line == 0 ? n : n + per_line - n % per_line;
        for (int64_t ldm : {ld, ld + 1}) {
            std::vector<T> x(static_cast<size_t>(k)), src(static_cast<size_t>(k * n));
            for (T& v : x) v = T(uniform());
            for (T& v : src) v = T(uniform());
            std::vector<T> buf(size_t(k * ldm + per_line + 64 / sizeof(T)));
            T* line = first_line(buf);
            std::vector<T> first;
            bool same = true, close = true;
            for (int64_t off = 0; off < per_line; ++off) {
                T* mat = line + off;
                for (int64_t p = 0; p < k; ++p)
                    for (int64_t j = 0; j < n; ++j) mat[p * ldm + j] = src[size_t(p * n + j)];
                std::vector<T> c(size_t(n), T(0));
                fastgemm::gemm<T>(T(1.25), {x.data(), 1, k, k, 1}, {mat, k, n, ldm, 1}, T(0), {c.data(), 1, n, n, 1});
                if (off == 0) first = c;
                same = same && c == first;
                for (int64_t j = 0; j < n; ++j) {
                    double ref = 0, mag = 0;
                    for (int64_t p = 0; p < k; ++p) {
                        const double t = 1.25 * double(x[size_t(p)]) * double(src[size_t(p * n + j)]);
                        ref += t;
                        mag += std::fabs(t);
                    }
                    const double u = sizeof(T) == 4 ? std::ldexp(1.0, -24) : std::ldexp(1.0, -53);
                    close = close && std::fabs(double(c[size_t(j)]) - ref) <= 2.0 * double(k + 2) * u * mag;
                }
            }
            const std::string what = std::string(ks.name) + " " + type_name<T>() + " gemv rows form, 1 x " +
                                     std::to_string(n) + " x " + std::to_string(k) + ", rows " + std::to_string(ldm) +
                                     " apart, every offset in a line";
            report(close, what + ": against the reference");
            report(same, what + ": the bits of the matrix on a line boundary");
        }
    }
    // The dots form (C a column: A's rows along k), whose rows 32 bytes past a line gemv_dots
    // reads in half-width loads on Intel (kernels/gemv.hpp, HalvesLoad): the same bits.
    for (int64_t kk : {int64_t(3) * per_line + 5, int64_t(40) * per_line}) {
        const int64_t m = 9, ld = kk % per_line == 0 ? kk : kk + per_line - kk % per_line;
        std::vector<T> x(static_cast<size_t>(kk)), src(static_cast<size_t>(m * kk));
        for (T& v : x) v = T(uniform());
        for (T& v : src) v = T(uniform());
        std::vector<T> buf(size_t(m * ld + 2 * per_line));
        T* line = first_line(buf);
        std::vector<T> first;
        bool same = true;
        for (int64_t off = 0; off < per_line; ++off) {
            T* mat = line + off;
            for (int64_t i = 0; i < m; ++i)
                for (int64_t p = 0; p < kk; ++p) mat[i * ld + p] = src[size_t(i * kk + p)];
            std::vector<T> c(size_t(m), T(0));
            fastgemm::gemm<T>(T(1.25), {mat, m, kk, ld, 1}, {x.data(), kk, 1, 1, 1}, T(0), {c.data(), m, 1, 1, 1});
            if (off == 0) first = c;
            same = same && c == first;
        }
        report(same, std::string(ks.name) + " " + type_name<T>() + " gemv dots form, " + std::to_string(m) + " x 1 x " +
                         std::to_string(kk) + ": the same bits at every offset of A in a line");
    }
}

// gemv_rows must not compute on chunk lanes past the row length: a chunk full of signalling
// NaNs (what a reused stack could hold) must raise no FE_INVALID and leave the result exact.
// Without a chunk (y within kGemvNarrowVectors vectors, the sums in registers): exact too, no
// FE_INVALID from the masked lanes, nothing written past y.
template <typename T>
void gemv_tail(const fastgemm::KernelSet& ks) {
    const fastgemm::KernelTable<T>& uk = table_of(ks, T(0));
    const int64_t elems = fastgemm::kGemvChunkBytes / int64_t(sizeof(T));
    const int64_t narrow = fastgemm::kGemvNarrowVectors * uk.lanes;
    T* chunk = static_cast<T*>(std::aligned_alloc(64, size_t(fastgemm::kGemvChunkBytes)));
    for (int64_t n : {int64_t(1), int64_t(3), int64_t(uk.lanes / 2 + 1), int64_t(uk.lanes + 1), narrow, int64_t(257),
                      elems - 1, elems + 5})
        for (bool in_chunk : {true, false}) {
            if (!in_chunk && n > narrow) continue;
            const int64_t k = 9;
            std::vector<T> x(static_cast<size_t>(k)), mat(static_cast<size_t>(k * n));
            std::vector<T> y(static_cast<size_t>(n + 16), T(7));
            for (int64_t p = 0; p < k; ++p) x[size_t(p)] = T(p + 1);
            for (int64_t e = 0; e < k * n; ++e) mat[size_t(e)] = T(e % 5);
            for (int64_t e = 0; e < elems; ++e) chunk[e] = std::numeric_limits<T>::signaling_NaN();
            std::feclearexcept(FE_ALL_EXCEPT);
            uk.gemv_rows(n, k, T(1), x.data(), 1, mat.data(), n, T(0), y.data(), in_chunk ? chunk : nullptr,
                         n % 2 == 1);
            bool ok = !std::fetestexcept(FE_INVALID);
            for (int64_t j = 0; j < n && ok; ++j) {
                T want = 0;
                for (int64_t p = 0; p < k; ++p) want += x[size_t(p)] * mat[size_t(p * n + j)];
                ok = y[size_t(j)] == want;
            }
            for (int64_t j = n; j < n + 16 && ok; ++j) ok = y[size_t(j)] == T(7);
            report(ok, std::string(ks.name) + " " + type_name<T>() + " gemv_rows n=" + std::to_string(n) +
                           (in_chunk ? ": no FE_INVALID from the chunk's tail" : " in registers: no FE_INVALID") +
                           ", exact result, nothing past y");
        }
    std::free(chunk);
}

// copy_columns: every element of a B stored by columns lands at its row-major place, and
// nothing between the rows (ld > n) or past the last one is written; k and n around the
// vector width and its square (the register transposes' blocks and both tails, the last rows
// from half a vector transposed too), and 2-8 columns into rows back to back (ld == n: woven).
template <typename T>
void copy_columns(const fastgemm::KernelSet& ks) {
    const fastgemm::KernelTable<T>& uk = table_of(ks, T(0));
    const int64_t w = uk.lanes;
    for (int64_t k : {int64_t(1), w / 2 - 1, w / 2, w - 1, w, w + 1, w + w / 2, 3 * w + 2})
        for (int64_t n : {int64_t(1), int64_t(2), int64_t(3), int64_t(7), w - 1, w, 2 * w + 3})
            for (int64_t pad : {int64_t(5), int64_t(0)}) {
                if (k < 1 || n < 1) continue;
                const int64_t csb = k + 3, ld = n + pad;
                std::vector<T> b(size_t(n * csb)), dst(size_t(k * ld + 7), T(-1));
                for (int64_t e = 0; e < n * csb; ++e) b[size_t(e)] = T(e);
                uk.copy_columns(k, n, b.data(), csb, dst.data(), ld);
                bool ok = true;
                for (int64_t e = 0; e < k * ld + 7; ++e) {
                    const int64_t p = e / ld, j = e % ld;
                    ok = ok && dst[size_t(e)] == (p < k && j < n ? b[size_t(j * csb + p)] : T(-1));
                }
                report(ok, std::string(ks.name) + " " + type_name<T>() + " copy_columns k=" + std::to_string(k) +
                               " n=" + std::to_string(n) + " ld=" + std::to_string(ld));
            }
}

// A run of `count` stack items against the double reference, alpha -2: each element of C (at
// at_c(i, r, j)) equals beta * C0 - 2 * sum_p A B (small integers, so exact; beta 0: C0 not
// read), and every element of c outside the items still holds `gap`.
template <typename T, typename AtA, typename AtB, typename AtC>
bool stack_exact(int64_t count, int64_t m, int64_t n, int64_t k, const std::vector<T>& a, AtA at_a,
                 const std::vector<T>& b, AtB at_b, double beta, const std::vector<T>& c0, const std::vector<T>& c,
                 AtC at_c, T gap) {
    std::vector<bool> in_c(c.size(), false);
    bool ok = true;
    for (int64_t i = 0; i < count; ++i)
        for (int64_t r = 0; r < m; ++r)
            for (int64_t j = 0; j < n; ++j) {
                double sum = 0.0;
                for (int64_t p = 0; p < k; ++p)
                    sum += double(a[size_t(at_a(i, r, p))]) * double(b[size_t(at_b(i, p, j))]);
                const size_t e = size_t(at_c(i, r, j));
                in_c[e] = true;
                ok = ok && double(c[e]) == (beta == 0.0 ? 0.0 : beta * double(c0[e])) - 2.0 * sum;
            }
    for (size_t e = 0; e < c.size(); ++e) ok = ok && (in_c[e] || c[e] == gap);
    return ok;
}

// small_stack_b_cols / small_stack_c_cols: runs of 3 items with B (or C) stored by columns,
// the columns and items apart by gaps, small integers (exact sums): every element against a
// double reference, alpha -2, beta 2 over C (b_cols) or 0 over a C of NaN (c_cols, never
// read), nothing written in the gaps; squares of the vector width, twice and four times it and
// of half of it (the fixed transposes, C^T's in registers), and shapes off them (copy_columns,
// or transposed_product's row groups, remainders and last panels where the table has
// transposed_min_k).
template <typename T>
void stack_cols(const fastgemm::KernelSet& ks) {
    const fastgemm::KernelTable<T>& uk = table_of(ks, T(0));
    const int64_t w = uk.lanes, h = std::max<int64_t>(w / 2, 1);
    struct Shape {
        int64_t m, n, k;
    };
    for (Shape s : {Shape{w, w, w}, Shape{2 * w, 2 * w, 2 * w}, Shape{4 * w, 4 * w, 4 * w}, Shape{3, 5, 7},
                    Shape{w + 1, w + 2, 2 * w + 3}, Shape{13, 2 * w + 1, 9}, Shape{h, h, h},
                    Shape{2 * w + 4, 3 * w, 13}, Shape{w + 7, 3 * w + 5, 2 * w}})
        for (bool c_cols : {false, true}) {
            const int64_t m = s.m, n = s.n, k = s.k, count = 3;
            const int64_t lda = k + 2, ldb = c_cols ? n + 3 : k + 3, ldc = c_cols ? m + 2 : n + 2;
            const int64_t sa = m * lda + 1, sb = (c_cols ? k : n) * ldb + 2, sc = (c_cols ? n : m) * ldc + 3;
            std::vector<T> a(size_t(count * sa)), b(size_t(count * sb)), c(size_t(count * sc + 5), T(-7));
            for (size_t e = 0; e < a.size(); ++e) a[e] = T(int(e * 7 % 11) - 5);
            for (size_t e = 0; e < b.size(); ++e) b[e] = T(int(e * 5 % 13) - 6);
            auto at_b = [&](int64_t i, int64_t p, int64_t j) { return i * sb + (c_cols ? p * ldb + j : j * ldb + p); };
            auto at_c = [&](int64_t i, int64_t r, int64_t j) { return i * sc + (c_cols ? j * ldc + r : r * ldc + j); };
            for (int64_t i = 0; i < count; ++i)
                for (int64_t r = 0; r < m; ++r)
                    for (int64_t j = 0; j < n; ++j)
                        c[size_t(at_c(i, r, j))] = c_cols ? std::numeric_limits<T>::quiet_NaN() : T(int(r - j));
            const std::vector<T> c0 = c;
            std::vector<T> t(size_t(std::max(m, k) * fastgemm::round_up(n, w)));
            const fastgemm::StackRun run{count, sa, sb, sc};
            if (c_cols)
                uk.small_stack_c_cols(run, m, n, k, T(-2), a.data(), lda, b.data(), ldb, c.data(), ldc, t.data());
            else
                uk.small_stack_b_cols(run, m, n, k, T(-2), a.data(), lda, 1, b.data(), ldb, T(2), c.data(), ldc,
                                      t.data(), 0);
            auto at_a = [&](int64_t i, int64_t r, int64_t p) { return i * sa + r * lda + p; };
            const bool ok = stack_exact(count, m, n, k, a, at_a, b, at_b, c_cols ? 0.0 : 2.0, c0, c, at_c, T(-7));
            report(ok, std::string(ks.name) + " " + type_name<T>() +
                           (c_cols ? " small_stack_c_cols " : " small_stack_b_cols ") + std::to_string(m) + "x" +
                           std::to_string(n) + "x" + std::to_string(k));
        }
}

// small_stack's and small_stack_b_cols' tail down A's columns (column_tail: A stored by
// columns, rows 1 apart; B by rows, or by columns and its other columns copied): runs of 3
// items apart by gaps, A's columns, B's and C's rows apart by gaps, small integers (exact sums):
// every element against a double reference, alpha -2 and beta 2 over C or beta 0 over a C of
// NaN (never read), nothing written in the gaps; rows around one vector and the passes of 4 (2
// where 16 registers) vectors, tails of 1-4 columns past 2 whole vectors.
template <typename T>
void stack_column_tail(const fastgemm::KernelSet& ks) {
    const fastgemm::KernelTable<T>& uk = table_of(ks, T(0));
    const int64_t w = uk.lanes;
    for (int64_t m : {int64_t(1), w - 1, w + 1, 2 * w + 1, 4 * w + 1, 8 * w + 3})
        for (int64_t tail = 1; tail <= fastgemm::kTailColumnsMax; ++tail)
            for (bool beta0 : {false, true})
                for (bool b_cols : {false, true}) {
                    if (m < 1) continue;
                    const int64_t n = 2 * w + tail, k = 11, count = 3;
                    const int64_t lda = m + 3, ldb = b_cols ? k + 2 : n + 2, ldc = n + 2;
                    const int64_t sa = k * lda + 1, sb = (b_cols ? n : k) * ldb + 2, sc = m * ldc + 3;
                    std::vector<T> a(size_t(count * sa)), b(size_t(count * sb)), c(size_t(count * sc + 5), T(-7));
                    for (size_t e = 0; e < a.size(); ++e) a[e] = T(int(e * 7 % 11) - 5);
                    for (size_t e = 0; e < b.size(); ++e) b[e] = T(int(e * 5 % 13) - 6);
                    auto at_b = [&](int64_t i, int64_t p, int64_t j) {
                        return i * sb + (b_cols ? j * ldb + p : p * ldb + j);
                    };
                    auto at_c = [&](int64_t i, int64_t r, int64_t j) { return i * sc + r * ldc + j; };
                    for (int64_t i = 0; i < count; ++i)
                        for (int64_t r = 0; r < m; ++r)
                            for (int64_t j = 0; j < n; ++j)
                                c[size_t(at_c(i, r, j))] = beta0 ? std::numeric_limits<T>::quiet_NaN() : T(int(r - j));
                    const std::vector<T> c0 = c;
                    const T beta = beta0 ? T(0) : T(2);
                    const fastgemm::StackRun run{count, sa, sb, sc};
                    std::vector<T> t(size_t(std::max(m, k) * fastgemm::round_up(n, w)));
                    if (b_cols)
                        uk.small_stack_b_cols(run, m, n, k, T(-2), a.data(), 1, lda, b.data(), ldb, beta, c.data(), ldc,
                                              t.data(), tail);
                    else
                        uk.small_stack(run, m, n, k, T(-2), a.data(), 1, lda, b.data(), ldb, beta, c.data(), ldc, tail);
                    auto at_a = [&](int64_t i, int64_t r, int64_t p) { return i * sa + p * lda + r; };
                    const bool ok = stack_exact(count, m, n, k, a, at_a, b, at_b, double(beta), c0, c, at_c, T(-7));
                    report(ok, std::string(ks.name) + " " + type_name<T>() +
                                   (b_cols ? " small_stack_b_cols" : " small_stack") + " column tail " +
                                   std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) +
                                   " tail=" + std::to_string(tail) + (beta0 ? " beta=0" : ""));
                }
}

// dots: m x n dot products of rows along k against a double reference (small integers, so
// exact), C strided with a gap between its elements that must stay untouched, beta 0 over a
// NaN-filled C (never read) and beta 2; m around the kernel's 3- and 4-row blocks, n around its
// 3-, 4- and 5-wide ones, k around the vector width (the masked tail). Then inexact values: every
// output of a block has the bits of the same dot computed alone (one dot a block sums its lanes
// by V::reduce, a block of W / 2 or more all at once by V::reduce_w: the same tree); not on
// generic, whose a * b + c the compiler may fuse in one block's instance and not another's (GCC
// on aarch64).
template <typename T>
void dots_check(const fastgemm::KernelSet& ks) {
    const fastgemm::KernelTable<T>& uk = table_of(ks, T(0));
    const int64_t w = uk.lanes;
    const T nan = std::numeric_limits<T>::quiet_NaN();
    const bool fused = std::string(ks.name) != "generic";
    // 101 columns over 5w + 3 of k: B's rows pass dots' strip bound (A's within it), strips outer.
    for (int64_t m : {4, 5, 6, 9, 13})
        for (int64_t n : {4, 6, 11, 101})
            for (int64_t k : {w - 1, 5 * w + 3})
                for (T beta : {T(0), T(0.75)}) {
                    if (k < 1 || !fused) continue;
                    std::vector<T> a(size_t(m * k)), b(size_t(n * k)), c(size_t(m * n)), one(size_t(m * n));
                    for (size_t e = 0; e < a.size(); ++e) a[e] = T(1) / T(int64_t(e % 13) + 3) - T(0.2);
                    for (size_t e = 0; e < b.size(); ++e) b[e] = T(1) / T(int64_t(e % 11) + 2) - T(0.3);
                    for (size_t e = 0; e < c.size(); ++e) c[e] = one[e] = T(int64_t(e % 5) - 2) / T(3);
                    uk.dots(m, n, k, T(1.25), a.data(), k, b.data(), k, beta, c.data(), n, 1);
                    for (int64_t i = 0; i < m; ++i)
                        for (int64_t j = 0; j < n; ++j)
                            uk.dots(1, 1, k, T(1.25), a.data() + i * k, k, b.data() + j * k, k, beta,
                                    one.data() + i * n + j, 1, 1);
                    report(std::memcmp(c.data(), one.data(), c.size() * sizeof(T)) == 0,
                           std::string(ks.name) + " " + type_name<T>() + " dots blocks as single dots " +
                               std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k));
                }
    // C by rows with gaps between elements, by rows with gaps between rows (each row of a block
    // one store) and by columns (each column one): every element off C stays as it was.
    for (int layout = 0; layout < 3; ++layout)
        for (int64_t m : {1, 2, 3, 4, 5, 7, 8, 9})
            for (int64_t n : {1, 3, 4, 5, 6, 9, 11})
                for (int64_t k : {int64_t(1), w - 1, w, w + 1, 3 * w + 2})
                    for (T beta : {T(0), T(2)}) {
                        if (k < 1) continue;
                        const int64_t lda = k + 1, ldb = k + 3;
                        const int64_t rsc = layout == 0 ? 2 * n + 1 : layout == 1 ? n + 3 : 1;
                        const int64_t csc = layout == 0 ? 2 : layout == 1 ? 1 : m + 2;
                        std::vector<T> a(size_t(m * lda)), b(size_t(n * ldb)),
                            c(size_t((m - 1) * rsc + (n - 1) * csc + 8), beta == T(0) ? nan : T(1));
                        std::vector<int> at(c.size(), -1);  // output index i * n + j there, else -1
                        for (int64_t i = 0; i < m; ++i)
                            for (int64_t j = 0; j < n; ++j) at[size_t(i * rsc + j * csc)] = int(i * n + j);
                        for (size_t e = 0; e < a.size(); ++e) a[e] = T(int64_t(e % 7) - 3);
                        for (size_t e = 0; e < b.size(); ++e) b[e] = T(int64_t(e % 5) - 2);
                        uk.dots(m, n, k, T(0.5), a.data(), lda, b.data(), ldb, beta, c.data(), rsc, csc);
                        bool ok = true;
                        for (size_t e = 0; e < c.size(); ++e) {
                            const T got = c[e];
                            if (at[e] < 0) {
                                ok = ok && (beta == T(0) ? got != got : got == T(1));
                                continue;
                            }
                            const int64_t i = at[e] / n, j = at[e] % n;
                            double dot = 0;
                            for (int64_t p = 0; p < k; ++p)
                                dot += double(a[size_t(i * lda + p)]) * double(b[size_t(j * ldb + p)]);
                            ok = ok && double(got) == 0.5 * dot + double(beta);
                        }
                        report(ok, std::string(ks.name) + " " + type_name<T>() + " dots " + std::to_string(m) + "x" +
                                       std::to_string(n) + "x" + std::to_string(k) + " beta " +
                                       std::to_string(int(beta)) + " layout " + std::to_string(layout));
                    }
}

// The small kernels' last part of a vector, after whole vectors or alone, with half_tails()
// forced each way (kernels/small.hpp, to_half_tail): the same bits either way, for one product
// (small) and a run of 3 items (small_stack), within the K-scaled bound of a double reference,
// and C's columns past n untouched; beta 0 over a NaN-filled C (never read), beta -0.5 otherwise.
template <typename T>
void half_tails_check(const fastgemm::KernelSet& ks) {
    const fastgemm::KernelTable<T>& uk = table_of(ks, T(0));
    const int64_t w = uk.lanes, half = std::max<int64_t>(1, w / 2);
    const T nan = std::numeric_limits<T>::quiet_NaN();
    uint32_t seed = 11;
    auto rnd = [&] { return T(int64_t((seed = seed * 1664525u + 1013904223u) >> 8) % 2001 - 1000) / T(997); };
    constexpr int64_t items = 3;
    for (int64_t n : {half, w + 1, w + half, 2 * w + half, 4 * w + half - 1})
        for (int64_t m : {int64_t(1), int64_t(5), int64_t(13)})
            for (int64_t k : {int64_t(3), int64_t(30)})
                for (T beta : {T(0), T(-0.5)}) {
                    const int64_t ldc = n + 3, sa = m * k, sb = k * n, sc = m * ldc;
                    std::vector<T> a(size_t(items * sa)), b(size_t(items * sb)), c0(size_t(items * sc));
                    for (T& x : a) x = rnd();
                    for (T& x : b) x = rnd();
                    for (T& x : c0) x = rnd();
                    std::vector<T> out[2][2];  // [half_tails][stack]
                    for (int mode : {0, 1}) {
                        fastgemm::set_half_tails(mode);
                        for (std::vector<T>& c : out[mode]) {
                            c = c0;
                            for (int64_t i = 0; i < items && beta == T(0); ++i)
                                for (int64_t r = 0; r < m; ++r) std::fill_n(c.begin() + i * sc + r * ldc, n, nan);
                        }
                        uk.small(m, n, k, T(0.75), a.data(), k, 1, b.data(), n, beta, out[mode][0].data(), ldc);
                        uk.small_stack(fastgemm::StackRun{items, sa, sb, sc}, m, n, k, T(0.75), a.data(), k, 1,
                                       b.data(), n, beta, out[mode][1].data(), ldc, 0);
                    }
                    fastgemm::set_half_tails(-1);
                    bool same = true, close = true;
                    for (int64_t it = 0; it < items; ++it)
                        for (int64_t i = 0; i < m; ++i)
                            for (int64_t j = 0; j < ldc; ++j) {
                                const size_t e = size_t(it * sc + i * ldc + j);
                                for (int st : {0, 1}) {
                                    if (it > 0 && st == 0) continue;  // small computed item 0 only
                                    same = same && std::memcmp(&out[0][st][e], &out[1][st][e], sizeof(T)) == 0;
                                }
                                const T got = out[0][1][e];
                                if (j >= n) {
                                    close = close && got == c0[e];
                                    continue;
                                }
                                double ref = 0, mag = 0;
                                for (int64_t p = 0; p < k; ++p) {
                                    const double t =
                                        double(a[size_t(it * sa + i * k + p)]) * double(b[size_t(it * sb + p * n + j)]);
                                    ref += t, mag += std::fabs(t);
                                }
                                ref = 0.75 * ref + double(beta) * double(c0[e]);
                                mag = 0.75 * mag + std::fabs(double(beta) * double(c0[e]));
                                close =
                                    close && std::fabs(double(got) - ref) <=
                                                 2.0 * double(k + 2) * double(std::numeric_limits<T>::epsilon()) * mag;
                            }
                    report(same && close, std::string(ks.name) + " " + type_name<T>() + " half tails " +
                                              std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) +
                                              (beta == T(0) ? " beta 0" : " beta -0.5"));
                }
}

// small in k chunks (small_chunks_b): the bits of one pass over k, which the first n columns of
// a product with the same B past the chunks' row reach get (not on generic, whose a * b + c the
// compiler may fuse in one of the two kernel instances and not the other, as GCC does on
// aarch64), and within the K-scaled bound of a double reference; beta 0 over a NaN-filled C
// (never read), beta -0.5 otherwise. B one step past the bytes that chunk it (a last chunk of
// one step), or a last chunk one step short; n a masked vector, a panel, 20 and the widest row
// that chunks, whose rows also pass one block of carried sums (as many rows as a chunk has
// steps); 2 rows chunk where small_one_pass says so (panels of AVX2's 64 bytes).
template <typename T>
void small_chunks_check(const fastgemm::KernelSet& ks) {
    const fastgemm::KernelTable<T>& uk = table_of(ks, T(0));
    const int64_t es = sizeof(T), widest = fastgemm::kSmallChunkBytes / fastgemm::kSmallChunkMinK / es;
    const int64_t nw = widest + 3;  // rows past the reach: one pass
    const T nan = std::numeric_limits<T>::quiet_NaN();
    const bool fused = std::string(ks.name) != "generic";
    uint32_t seed = 7;
    auto rnd = [&] { return T(int64_t((seed = seed * 1664525u + 1013904223u) >> 8) % 2001 - 1000) / T(997); };
    for (int64_t n : {int64_t(uk.lanes) + 1, int64_t(uk.nr), int64_t(20), widest}) {
        const int64_t depth = fastgemm::kSmallChunkBytes / (n * es), past = fastgemm::kSmallChunkPastBytes / (n * es);
        for (int64_t k : {past + 1, past + depth - 1}) {
            report(fastgemm::small_chunks_b(n * es, k) && !fastgemm::small_chunks_b(nw * es, k),
                   "small_chunks_b for the chunk check");
            for (int64_t m : {int64_t(2), fastgemm::kSmallOneGroupRows + 1, int64_t(13), n == widest ? depth + 5 : 0})
                for (T beta : {T(0), T(-0.5)}) {
                    if (m == 0) continue;
                    std::vector<T> a(size_t(m * k)), b(size_t(k * nw)), c0(size_t(m * nw));
                    for (T& x : a) x = rnd();
                    for (T& x : b) x = rnd();
                    for (T& x : c0) x = rnd();
                    std::vector<T> c = c0, one = c0;
                    if (beta == T(0)) std::fill(c.begin(), c.end(), nan), std::fill(one.begin(), one.end(), nan);
                    uk.small(m, n, k, T(0.75), a.data(), k, 1, b.data(), nw, beta, c.data(), nw);
                    uk.small(m, nw, k, T(0.75), a.data(), k, 1, b.data(), nw, beta, one.data(), nw);
                    bool same = true, close = true;
                    for (int64_t i = 0; i < m; ++i)
                        for (int64_t j = 0; j < nw; ++j) {
                            const size_t e = size_t(i * nw + j);
                            if (j >= n) {
                                same = same && (beta == T(0) ? c[e] != c[e] : c[e] == c0[e]);
                                continue;
                            }
                            same = same && (c[e] == one[e] || !fused);
                            double ref = 0, mag = 0;
                            for (int64_t p = 0; p < k; ++p) {
                                const double t = double(a[size_t(i * k + p)]) * double(b[size_t(p * nw + j)]);
                                ref += t, mag += std::fabs(t);
                            }
                            ref = 0.75 * ref + double(beta) * double(c0[e]);
                            mag = 0.75 * mag + std::fabs(double(beta) * double(c0[e]));
                            close = close && std::fabs(double(c[e]) - ref) <=
                                                 2.0 * double(k + 2) * double(std::numeric_limits<T>::epsilon()) * mag;
                        }
                    report(same && close, std::string(ks.name) + " " + type_name<T>() + " small chunks " +
                                              std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) +
                                              (beta == T(0) ? " beta 0" : " beta -0.5"));
                }
        }
    }
}

// An Inf in A or B: the zero padding of tiles and masked lanes must not leave FE_INVALID set
// when the true product has no invalid operation; an inf - inf in it must still raise it.
template <typename T>
void padding_flags(const fastgemm::KernelSet& ks) {
    const T inf = std::numeric_limits<T>::infinity();
    const int64_t shapes[][3] = {{65, 65, 65}, {100, 100, 100}, {1, 300, 1000}, {64, 17, 300},
                                 {300, 1, 7},  {7, 9, 5},       {300, 300, 3},  {33, 1000, 1}};
    for (const auto& s : shapes) {
        const int64_t m = s[0], n = s[1], k = s[2];
        for (int where = 0; where < 3; ++where) {  // Inf in A, Inf in B, inf - inf in A
            std::vector<T> a(size_t(m * k)), b(size_t(k * n)), c(size_t(m * n));
            for (auto& v : a) v = T(0.5 + 0.25 * uniform());
            for (auto& v : b) v = T(0.5 + 0.25 * uniform());
            if (where == 0) a[0] = inf;
            if (where == 1) b[size_t(k * n - 1)] = inf;
            if (where == 2) {
                a[0] = inf;
                if (k > 1) a[1] = -inf;
            }
            const bool expect_nan = where == 2 && k > 1;
            std::feclearexcept(FE_ALL_EXCEPT);
            fastgemm::gemm<T>(T(1), {a.data(), m, k, k, 1}, {b.data(), k, n, n, 1}, T(0), {c.data(), m, n, n, 1});
            const bool raised = std::fetestexcept(FE_INVALID) != 0;
            bool nan = false;
            for (T v : c) nan |= v != v;
            std::feclearexcept(FE_ALL_EXCEPT);
            report(raised == expect_nan && nan == expect_nan, std::string(ks.name) + " " + type_name<T>() + " " +
                                                                  std::to_string(m) + "x" + std::to_string(n) + "x" +
                                                                  std::to_string(k) +
                                                                  (where == 0   ? " Inf in A"
                                                                   : where == 1 ? " Inf in B"
                                                                                : " inf-inf") +
                                                                  ": FE_INVALID " + (raised ? "set" : "clear"));
        }
    }
}

// small_shape's table on a set tuned as AVX-512 is: the work cap with B within two L1s (counted
// in float32-sized elements), past them only up to 48 rows whose B rows are not whole lines,
// or 2 to few_rows_max_m rows with k under 128; narrow C at any work.
void small_shape_table() {
    fastgemm::KernelSet ks = fastgemm::generic_kernels;
    ks.tuning = fastgemm::Tuning{256, 128, int64_t(512) * 512 * 512, 16, 6, 0, 256, 4, 2};
    const int64_t k2 = 2 * fastgemm::caches().l1d.size / (4 * 96);  // a 96-column B of at most two L1s
    auto small = [&](int64_t m, int64_t n, int64_t k, int64_t bytes) {
        return fastgemm::small_shape(ks, m, n, k, bytes);
    };
    report(small(256, 96, k2, 4) && !small(256, 96, k2 + 1, 4) && small(256, 96, k2, 8) && !small(256, 96, k2 + 1, 8),
           "small_shape: work cap with B within two L1s of float32-sized elements");
    report(small(48, 97, k2 + 1, 4) && !small(49, 97, k2 + 1, 4) && !small(48, 96, k2 + 1, 4),
           "small_shape: past two L1s up to 48 rows, B rows not whole lines");
    report(small(6, 400, 127, 4) && !small(6, 401, 128, 4) && small(7, 401, 128, 4),
           "small_shape: past two L1s 2-6 rows with k under 128");
    report(small(100000, 64, 100, 4) && !small(100000, 65, 100, 4) && small(100000, 32, 100, 8),
           "small_shape: narrow C (256 bytes) at any work");
    ks.tuning.small_max_b_l1s = 0;
    report(small(256, 64, k2 + 1, 4), "small_shape: small_max_b_l1s 0 leaves only L2 to bound B");
    ks.tuning = fastgemm::Tuning{256, 128, int64_t(512) * 512 * 512, 16, 6, 0, 0, 4, 2};
    const int64_t past = fastgemm::kSmallChunkPastBytes / 256;  // k of a 256-byte-row B that chunks
    report(!small(100000, 64, past + 1, 4), "small_shape: small_chunked_any 0 leaves chunked B to the other rules");
    ks.tuning.small_chunked_any = 1;
    report(small(100000, 64, past + 1, 4) && small(100000, 32, past + 1, 8) && !small(100000, 64, past, 4) &&
               !small(100000, 65, 100 * past, 4),
           "small_shape: B the small kernels chunk at any size, rows of C up to 256 bytes");
    report(
        small(32, 128, past, 4) && !small(33, 128, past, 4) && small(32, 64, past, 8) && !small(32, 129, 100 * past, 4),
        "small_shape: B the small kernels chunk, wider rows up to 32 of them");
}

bool narrow_dots_sane(const fastgemm::NarrowDots& d) {
    return d.fma > 0 && d.sum >= 0 && d.per_k > 0 && d.copy >= 0 && d.min_k >= 0;
}

// ShortDots: off (max_m 0) or a range of columns from kDotsShortMinN and a k from which it pays.
bool short_dots_sane(const fastgemm::ShortDots& d) {
    return d.max_m == 0 || (d.max_m > 0 && d.max_n >= fastgemm::kDotsShortMinN && d.min_k > 0);
}

void kernel_lookup_and_threads() {
    for (const fastgemm::KernelSet* ks : fastgemm::compiled_kernels()) {
        const fastgemm::Tuning& t = ks->tuning;
        report(&fastgemm::find_kernels(ks->name, false) == ks && t.direct_max_m >= 0 && t.skinny_max_m >= 0 &&
                   t.small_max_work > 0 && t.head_min_slivers > 0 && t.few_rows_max_m >= 0 &&
                   t.few_rows_max_m <= fastgemm::kFewRowsMaxM && t.int8_few_rows_max_m >= 0 &&
                   t.small_narrow_bytes >= 0 && t.a_in_place_slivers >= 0 && t.small_max_b_l1s >= 0 &&
                   t.small_columns_max_m >= 0 && t.f32_dots_max_side >= 0 && t.f64_dots_max_side >= 0 &&
                   (t.small_chunked_any == 0 || t.small_chunked_any == 1) && t.dots_rows_max_m >= 0 &&
                   t.f32_dots_l2_max_m >= 0 && t.f64_dots_l2_max_m >= 0 && t.f32_dots_idle_max_n >= 0 &&
                   narrow_dots_sane(t.f32_narrow_dots) && narrow_dots_sane(t.f64_narrow_dots) &&
                   short_dots_sane(t.f32_short_dots) && short_dots_sane(t.f64_short_dots),
               std::string("find_kernels and tuning of ") + ks->name);
    }
    expect_throw<std::invalid_argument>("find_kernels: unknown name", [] { fastgemm::find_kernels("nope", false); });
    report(&fastgemm::find_kernels("generic", true) == &fastgemm::generic_kernels, "generic runs anywhere");

    const int limit = fastgemm::max_thread_limit();
    report(limit >= 8, "max_thread_limit >= 8");
    expect_throw<std::invalid_argument>("set_max_threads above the limit",
                                        [&] { fastgemm::set_max_threads(limit + 1); });
    expect_throw<std::invalid_argument>("set_max_threads(0)", [] { fastgemm::set_max_threads(0); });
    report(fastgemm_set_num_threads(limit + 1) == -1 && fastgemm_set_num_threads(65536) == -1 &&
               fastgemm_set_num_threads(0) == -1 && fastgemm::max_threads() == 2,
           "C ABI refuses out-of-range thread counts and keeps the cap");
    report(fastgemm_set_num_threads(limit) == 0 && fastgemm::max_threads() == limit, "C ABI sets the limit itself");
    fastgemm::set_max_threads(2);

    // may_run_threaded is true wherever threads_for gives more than one thread, busy machine or not.
    bool bounded = true;
    for (int64_t s : {1, 8, 31, 64, 100, 256, 1024})
        bounded &= fastgemm::threads_for(s, s, s) == 1 || fastgemm::may_run_threaded(s, s, s);
    report(bounded && !fastgemm::may_run_threaded(8, 8, 8) && fastgemm::may_run_threaded(1024, 1024, 1024),
           "may_run_threaded bounds threads_for");
    fastgemm::set_max_threads(1);
    report(!fastgemm::may_run_threaded(1024, 1024, 1024), "may_run_threaded: false with one thread allowed");
    fastgemm::set_max_threads(2);

    // parallel_ranges covers [0, len) once in pieces cut at multiples of the grain, also from
    // several callers at once (one holds the pool, the others run alone) and from inside a team.
    auto cover = [](int threads, int64_t len, int64_t grain, int pieces = 1) {
        std::vector<std::atomic<int>> hits(static_cast<size_t>(len));
        std::atomic<bool> aligned{true};
        fastgemm::parallel_ranges(
            threads, len, grain,
            [&](int tid, int64_t lo, int64_t hi) {
                aligned = aligned && tid >= 0 && tid < threads && (lo % grain == 0) && (hi % grain == 0 || hi == len);
                for (int64_t i = lo; i < hi; ++i) ++hits[size_t(i)];
            },
            pieces);
        bool once = aligned;
        for (auto& h : hits) once &= h == 1;
        return once;
    };
    report(cover(2, 1000, 16) && cover(4, 1000, 16, 4) && cover(3, 7, 16) && cover(2, 33, 1, 4),
           "parallel_ranges covers every index once");
    std::atomic<bool> together{true};
    std::vector<std::thread> callers;
    for (int t = 0; t < 3; ++t)
        callers.emplace_back([&] {
            for (int r = 0; r < 50; ++r) together = together && cover(2, 4096, 64, 4);
        });
    for (auto& t : callers) t.join();
    report(together, "parallel_ranges from three threads at once");
    // runnable_threads (what idle workers check before they yield) sees threads of ours that
    // spin, and with one spinning on every CPU a team with barriers for under 2^26
    // multiply-adds takes no worker, a larger one still does. Systems without /proc/loadavg say
    // -1: idle workers never count there and teams keep their threads.
    if (fastgemm::runnable_threads() >= 0) {
        const int spinners = std::max(3, int(std::thread::hardware_concurrency()));
        std::atomic<bool> stop{false};
        std::vector<std::thread> spin;
        for (int t = 0; t < spinners; ++t)
            spin.emplace_back([&] {
                while (!stop.load(std::memory_order_relaxed)) {
                }
            });
        int most = 0;
        for (int poll = 0; poll < 500 && most < 3; ++poll) {
            most = std::max(most, fastgemm::runnable_threads());
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        auto team_of = [](double work) {
            int got = 0;
            fastgemm::run_team(
                2,
                [&](int tid, int team) {
                    if (tid == 0) got = team;
                },
                work);
            return got;
        };
        bool solo = false;
        for (int poll = 0; poll < 500 && !solo; ++poll) {
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
            solo = team_of(double(1 << 24)) == 1;
        }
        const int large = team_of(double(int64_t(1) << 30));
        stop = true;
        for (auto& t : spin) t.join();
        report(most >= 3, "runnable_threads counts three spinning threads");
        report(solo && large == 2, "run_team: no worker for 2^24 multiply-adds while every CPU has a spinning thread");
    }
    std::atomic<int> nested_teams{0};
    constexpr double kLarge = 1e18;  // work past every bound: the team as asked
    fastgemm::run_team(
        2, [&](int, int) { fastgemm::run_team(2, [&](int, int team) { nested_teams += team; }, kLarge); }, kLarge);
    report(nested_teams == 2, "a team started inside a team runs on its caller alone");
    // team_barrier: every thread sees every other's write from before the barrier.
    for (int threads : {2, 3, 4}) {
        std::vector<std::atomic<int>> seen(static_cast<size_t>(threads));
        std::atomic<bool> ordered{true};
        fastgemm::run_team(
            threads,
            [&](int tid, int team) {
                for (int round = 1; round <= 20; ++round) {
                    seen[size_t(tid)] = round;
                    fastgemm::team_barrier();
                    for (int j = 0; j < team; ++j) ordered = ordered && seen[size_t(j)] >= round;
                    fastgemm::team_barrier();
                }
            },
            kLarge);
        report(ordered, "team_barrier orders a team of " + std::to_string(threads));
    }
    expect_throw<std::runtime_error>("dynamic_chunks rethrows", [] {
        fastgemm::dynamic_chunks(2, 50, [](int64_t i) {
            if (i == 17) throw std::runtime_error("x");
        });
    });
    // A large scratch buffer is kept while smaller needs alternate with large ones, and given
    // back once 32 calls in a row needed under a quarter of it.
    const size_t big = size_t(64) << 20, small = size_t(1) << 20;
    bool kept = fastgemm::thread_scratch(big) != nullptr && fastgemm::thread_scratch_bytes() >= big;
    for (int i = 0; i < 100; ++i) {
        kept &= fastgemm::thread_scratch(i % 10 == 9 ? big : small) != nullptr;
        kept &= fastgemm::thread_scratch_bytes() >= big;
    }
    report(kept, "thread_scratch keeps a large buffer while large needs come back");
    for (int i = 0; i < 31; ++i) fastgemm::thread_scratch(small);
    const bool held = fastgemm::thread_scratch_bytes() >= big;
    fastgemm::thread_scratch(small);
    report(held && fastgemm::thread_scratch_bytes() >= small && fastgemm::thread_scratch_bytes() < big,
           "thread_scratch gives a large buffer back after 32 small needs in a row");
}

// Out-of-range blocking overrides are ignored and listed (they killed the process with SIGFPE).
void env_overrides() {
    const auto& rejected = fastgemm::rejected_env_settings();
    bool kc = false, mc = false, nc = false;
    for (const auto& r : rejected) {
        kc |= r.variable == "FASTGEMM_KC" && r.value == "99999999999999999999";
        mc |= r.variable == "FASTGEMM_MC" && r.value == "abc";
        nc |= r.variable == "FASTGEMM_NC" && r.value == "1000000000000";
    }
    report(kc && mc && nc && rejected.size() == 3, "FASTGEMM_KC/MC/NC out of range are rejected and listed");
    const fastgemm::Blocking b = fastgemm::blocking_for(6, 16, 4, 0);
    report(b.kc >= 1 && b.kc <= 4096 && b.mc >= 6 && b.mc <= 4096 && b.nc >= 16 && b.nc <= 16384,
           "blocking falls back to the model");
}

// A tile's KC cap (KernelTable::max_kc) bounds the blocking's KC, and MC follows the capped KC
// (the A block still within L2).
template <typename T>
bool kc_capped(const fastgemm::KernelTable<T>& uk) {
    const fastgemm::Blocking bs = fastgemm::blocking_for(uk),
                             model = fastgemm::blocking_for(uk.mr, uk.nr, int(sizeof(T)), 0);
    if (uk.max_kc == 0) return bs.kc == model.kc && bs.mc == model.mc;
    return bs.kc == std::min(model.kc, uk.max_kc) && bs.mc * bs.kc * int64_t(sizeof(T)) <= fastgemm::caches().l2.size &&
           bs.mc >= model.mc;
}
void tile_kc_caps() {
    for (const fastgemm::KernelSet* ks : fastgemm::compiled_kernels())
        report(kc_capped(ks->f32) && kc_capped(ks->f64) && kc_capped(ks->f32_skinny) && kc_capped(ks->f64_skinny),
               std::string("blocking_for caps KC at the tile's max_kc: ") + ks->name);
}

// Low-precision inputs (gemm_lowp): A and B bfloat16 or float16, float32 C. Reference: the
// exact widened inputs in long double; bound 2 (K + 2) u32 |alpha||A||B| + |beta C0| as for
// float32 (the inputs are exact, only the float32 accumulation rounds).
template <typename S>
S to_storage(float x);
template <>
fastgemm::bfloat16_t to_storage<fastgemm::bfloat16_t>(float x) {
    return fastgemm::to_bfloat16(x);
}
template <>
fastgemm::float16_t to_storage<fastgemm::float16_t>(float x) {
    return fastgemm::to_float16(x);
}
template <typename S>
const char* storage_name() {
    return std::is_same_v<S, fastgemm::bfloat16_t> ? "bfloat16" : "float16";
}

// few_rows of table `tab` (inputs stored as S, C as T) on every row count, around its chunk
// (partial sums of tl columns a row) and the rows of B a pass takes: exact small-integer sums,
// beta kept, A with a row stride and a column stride, and a chunk of signalling NaNs that must
// raise no FE_INVALID.
template <typename S, typename T, typename Tab>
void few_rows_check(const fastgemm::KernelSet& ks, const Tab& tab, const char* type, int64_t lanes) {
    auto stored = [](int v) {
        if constexpr (std::is_same_v<S, T>) return T(v);
        else return to_storage<S>(float(v));
    };
    const int64_t elems = fastgemm::kFewRowsChunkBytes / int64_t(sizeof(T));
    T* chunk = static_cast<T*>(std::aligned_alloc(64, size_t(fastgemm::kFewRowsBufferBytes)));
    for (int64_t m = 1; m <= fastgemm::kFewRowsMaxM; ++m) {
        const int64_t tl = elems / m / lanes * lanes;  // stream_rows' partial sums per row
        for (int64_t n : {int64_t(1), int64_t(9), tl - 1, tl + 5}) {
            for (int64_t k : {int64_t(1), int64_t(5), int64_t(13)}) {
                const int64_t rsa = 2 * k + 1, csa = 2;  // A strided both ways
                std::vector<S> a(size_t(m * rsa), stored(0)), b(size_t(k * n));
                std::vector<int> ai(size_t(m * rsa)), bi(size_t(k * n));
                std::vector<T> c(size_t(m * n), T(3));
                for (int64_t i = 0; i < m; ++i)
                    for (int64_t p = 0; p < k; ++p) ai[size_t(i * rsa + p * csa)] = int((i + 2 * p) % 7 - 3);
                for (int64_t e = 0; e < k * n; ++e) bi[size_t(e)] = int(e % 5 - 2);
                for (size_t e = 0; e < a.size(); ++e) a[e] = stored(ai[e]);
                for (size_t e = 0; e < b.size(); ++e) b[e] = stored(bi[e]);
                for (int64_t e = 0; e < elems; ++e) chunk[e] = std::numeric_limits<T>::signaling_NaN();
                std::feclearexcept(FE_ALL_EXCEPT);
                // k = 13 with the prefetching passes, which sum the same.
                tab.few_rows(m, n, k, T(2), a.data(), rsa, csa, b.data(), n, T(-1), c.data(), n, chunk, k == 13);
                bool ok = !std::fetestexcept(FE_INVALID);
                for (int64_t i = 0; i < m && ok; ++i)
                    for (int64_t j = 0; j < n && ok; ++j) {
                        int want = 0;
                        for (int64_t p = 0; p < k; ++p) want += ai[size_t(i * rsa + p * csa)] * bi[size_t(p * n + j)];
                        ok = c[size_t(i * n + j)] == T(2 * want - 3);
                    }
                report(ok, std::string(ks.name) + " " + type + " few_rows " + std::to_string(m) + "x" +
                               std::to_string(n) + "x" + std::to_string(k) + ": exact, no FE_INVALID from the chunk");
            }
        }
    }
    std::free(chunk);
}

template <typename S>
void run_lowp_case(const char* kernel, const Case& cs, float subnormal_scale) {
    const int64_t m = cs.m, n = cs.n, k = cs.k;
    Placed<S> a(m, k, cs.la, 0, S{0}), b(k, n, cs.lb, 0, S{0});
    const float nan = std::numeric_limits<float>::quiet_NaN();
    for (int64_t i = 0; i < m; ++i)
        for (int64_t p = 0; p < k; ++p)
            a.at(i, p) = to_storage<S>(cs.nan_in_ab ? nan : float(uniform()) * subnormal_scale);
    for (int64_t p = 0; p < k; ++p)
        for (int64_t j = 0; j < n; ++j) b.at(p, j) = to_storage<S>(cs.nan_in_ab ? nan : float(uniform()));
    std::vector<float> c0(size_t(m * n));
    for (float& x : c0) x = cs.nan_in_c ? nan : float(uniform());
    const float alpha = float(cs.alpha), beta = float(cs.beta);
    check_guarded<float>(
        m, n, k, cs.lc, c0, alpha, beta,
        [&](int64_t i, int64_t p, int64_t j) {
            return (long double)fastgemm::to_float(a.at(i, p)) * fastgemm::to_float(b.at(p, j));
        },
        [&](View<float> c) { fastgemm::gemm_lowp<S>(alpha, a.cview(), b.cview(), beta, c); },
        [&](char* what, size_t size, const char* guard) {
            std::snprintf(what, size, "%s lowp %s m=%lld n=%lld k=%lld A=%s B=%s C=%s%s alpha=%g beta=%g%s%s%s", kernel,
                          storage_name<S>(), (long long)m, (long long)n, (long long)k, kLayoutName[cs.la],
                          kLayoutName[cs.lb], kLayoutName[cs.lc], guard, cs.alpha, cs.beta,
                          cs.nan_in_c ? " NaN-in-C" : "", cs.nan_in_ab ? " NaN-in-AB" : "",
                          subnormal_scale != 1.0f ? " subnormal A" : "");
        });
}

template <typename S>
void run_lowp(const fastgemm::KernelSet& ks) {
    const int64_t mr = ks.f32.mr, nr = ks.f32.nr;
    const fastgemm::Blocking bs = fastgemm::blocking_for(ks.f32);
    std::vector<std::vector<int64_t>> shapes = {{0, 0, 0},     {5, 3, 0},    {1, 1, 1},    {1, 7, 1},    {7, 1, 1},
                                                {1, 1, 9},     {1, 37, 41},  {37, 1, 41},  {1, 300, 17}, {1, 4133, 11},
                                                {4133, 1, 11}, {13, 17, 19}, {31, 37, 41}, {2, 401, 3},  {3, 2, 509}};
    // Matrix-vector: 32-row groups +-1, blocks of 2W +-1, a chunk + 1 (gemv_rows_cvt's passes).
    for (const auto& s : std::vector<std::vector<int64_t>>{{1, 17, 97}, {1, 15, 63}, {33, 1, 65}, {1, 4097, 33}})
        shapes.push_back(s);
    for (int64_t d : {-1, 0, 1}) {
        shapes.push_back({mr + d, nr + 1, 7});
        shapes.push_back({mr + 1, nr + d, 5});
        shapes.push_back({mr - 1, 2 * nr + d, 4});
        shapes.push_back({mr + 1, nr - 1, bs.kc + d});
        shapes.push_back({bs.mc + d, 3, 4});
    }
    // Above 64^3: bfloat16 on pair kernels (vdpbf16ps) where the set has them; odd k, a k slice
    // boundary (pairs: twice the float32 KC) and edge tiles.
    shapes.push_back({65, 65, 65});
    shapes.push_back({2 * mr + 3, 3 * nr + 1, 2 * bs.kc + 1});
    const double scalars[][2] = {{1, 0}, {0.75, -0.5}, {-1, 1}, {0, 0.5}, {0, 0}};
    int idx = 0;
    for (const auto& s : shapes) {
        if (s[0] < 0 || s[1] < 0 || s[2] < 0) continue;
        for (int sc = 0; sc < 5; ++sc, ++idx)
            run_lowp_case<S>(ks.name,
                             {s[0], s[1], s[2], Layout(idx % kLayouts), Layout((idx / 4) % kLayouts),
                              Layout((idx / 2 + 1) % kLayouts), scalars[sc][0], scalars[sc][1], false, false},
                             1.0f);
    }
    for (const auto& s : std::vector<std::vector<int64_t>>{{1, 1, 1}, {1, 19, 23}, {19, 1, 23}, {mr + 1, nr - 1, 5}})
        for (int la = 0; la < kLayouts; ++la)
            for (int lb = 0; lb < kLayouts; ++lb)
                for (int lc = 0; lc < kLayouts; ++lc)
                    run_lowp_case<S>(
                        ks.name, {s[0], s[1], s[2], Layout(la), Layout(lb), Layout(lc), 1.5, -1.0, false, false}, 1.0f);
    for (const auto& s : std::vector<std::vector<int64_t>>{{1, 1, 1}, {mr + 1, nr + 1, 3}, {1, 40, 9}}) {
        run_lowp_case<S>(ks.name, {s[0], s[1], s[2], kRowMajor, kColMajor, kRowMajor, 1.0, 0.0, true, false}, 1.0f);
        run_lowp_case<S>(ks.name, {s[0], s[1], s[2], kColMajor, kRowMajor, kStepped, 0.0, 0.5, false, true}, 1.0f);
        run_lowp_case<S>(ks.name, {s[0], s[1], s[2], kRowMajor, kRowMajor, kRowMajor, 1.0, 0.0, false, true}, 1.0f);
    }
    // Subnormal inputs (float16 below 2^-14, bfloat16 below 2^-126) widen exactly and are not
    // flushed: scaled so A is subnormal in the storage type and the products stay normal-ish
    // float32 only for float16 (bfloat16 subnormals times B <= 1 are float32 subnormals,
    // still exact up to the bound's subnormal spacing).
    const float sub = std::is_same_v<S, fastgemm::float16_t> ? std::ldexp(1.0f, -16) : std::ldexp(1.0f, -128);
    for (const auto& s : std::vector<std::vector<int64_t>>{{1, 33, 17}, {33, 1, 17}, {mr + 1, nr + 3, 29}})
        run_lowp_case<S>(ks.name, {s[0], s[1], s[2], kRowMajor, kRowMajor, kRowMajor, 1.0, 0.0, false, false}, sub);
    // The smallest subnormal, exactly: k copies of 2^-24 (float16) times 1 sum exactly.
    if (std::is_same_v<S, fastgemm::float16_t>) {
        const int64_t k = 50;
        std::vector<S> a(size_t(k), S{1}), b(size_t(k * 3), to_storage<S>(1.0f));  // bits 1: 2^-24
        std::vector<float> c(3, 7.0f);
        fastgemm::gemm_lowp<S>(1.0f, {a.data(), 1, k, k, 1}, {b.data(), k, 3, 3, 1}, 0.0f, {c.data(), 1, 3, 3, 1});
        report(c[0] == std::ldexp(50.0f, -24) && c[2] == c[0],
               std::string(ks.name) + " float16 subnormal kept exactly");
    }
    // Same bits on 1 and 2 threads.
    {
        const int64_t m = 150, n = 140, k = 300;
        std::vector<S> a(size_t(m * k)), b(size_t(k * n));
        for (S& x : a) x = to_storage<S>(float(uniform()));
        for (S& x : b) x = to_storage<S>(float(uniform()));
        std::vector<float> c1(size_t(m * n)), c2(size_t(m * n)), v1(static_cast<size_t>(n)), v2(static_cast<size_t>(n));
        fastgemm::set_max_threads(1);
        fastgemm::gemm_lowp<S>(1.0f, {a.data(), m, k, k, 1}, {b.data(), k, n, n, 1}, 0.0f, {c1.data(), m, n, n, 1});
        fastgemm::gemm_lowp<S>(1.0f, {a.data(), 1, k, k, 1}, {b.data(), k, n, n, 1}, 0.0f, {v1.data(), 1, n, n, 1});
        fastgemm::set_max_threads(2);
        fastgemm::gemm_lowp<S>(1.0f, {a.data(), m, k, k, 1}, {b.data(), k, n, n, 1}, 0.0f, {c2.data(), m, n, n, 1});
        fastgemm::gemm_lowp<S>(1.0f, {a.data(), 1, k, k, 1}, {b.data(), k, n, n, 1}, 0.0f, {v2.data(), 1, n, n, 1});
        report(std::memcmp(c1.data(), c2.data(), c1.size() * 4) == 0 &&
                   std::memcmp(v1.data(), v2.data(), v1.size() * 4) == 0,
               std::string(ks.name) + " lowp " + storage_name<S>() + ": same bits on 1 and 2 threads");
    }
}

// gemm_lowp_batched: a broadcast A (zero batch stride) over a stack of B, spread over threads
// by batch, gives bitwise what gemm_lowp gives item by item; widened small stacks (grouped,
// the fixed 8^3 kernel, a column-major C) too.
template <typename S>
void lowp_batched(const fastgemm::KernelSet& ks) {
    struct Shape {
        int64_t m, n, k, items;
        bool col_major_c;
    };
    for (const Shape& sh : {Shape{40, 64, 100, 20, false}, Shape{8, 8, 8, 300, false}, Shape{7, 5, 9, 70, true}}) {
        const int64_t m = sh.m, n = sh.n, k = sh.k, items = sh.items;  // 40 x 64 x 100: 2 threads by batch
        std::vector<S> a(size_t(m * k)), b(size_t(items * k * n));
        for (S& x : a) x = to_storage<S>(float(uniform()));
        for (S& x : b) x = to_storage<S>(float(uniform()));
        std::vector<float> c(size_t(items * m * n), 5.0f), want(c);
        const int64_t rsc = sh.col_major_c ? 1 : n, csc = sh.col_major_c ? m : 1;
        for (int64_t i = 0; i < items; ++i)
            fastgemm::gemm_lowp<S>(0.5f, {a.data(), m, k, k, 1}, {b.data() + i * k * n, k, n, n, 1}, -1.0f,
                                   {want.data() + i * m * n, m, n, rsc, csc});
        fastgemm::gemm_lowp_batched<S>(0.5f, {a.data(), m, k, k, 1}, {b.data(), k, n, n, 1}, -1.0f,
                                       {c.data(), m, n, rsc, csc}, {{items, 0, k * n, m * n}});
        report(std::memcmp(c.data(), want.data(), c.size() * 4) == 0,
               std::string(ks.name) + " lowp " + storage_name<S>() + " batched = item by item, " + std::to_string(m) +
                   "x" + std::to_string(n) + "x" + std::to_string(k));
    }
    float x[16] = {};
    const View<const S> s{reinterpret_cast<const S*>(x), 2, 2, 2, 1};
    expect_throw<std::invalid_argument>("gemm_lowp_batched refuses a C that overlaps itself", [&] {
        fastgemm::gemm_lowp_batched<S>(1.f, s, s, 0.f, View<float>{x, 2, 2, 0, 1}, {{2, 4, 4, 4}});
    });
}

// The kernel set's float32 -> float16 rounding against the portable one, over special values
// and every rounding boundary class; contiguous and strided.
void lowp_narrow(const fastgemm::KernelSet& ks) {
    std::vector<float> src;
    const float specials[] = {0.0f,
                              -0.0f,
                              1.0f,
                              65504.0f,
                              65519.99f,
                              65520.0f,
                              1e9f,
                              std::numeric_limits<float>::infinity(),
                              -std::numeric_limits<float>::infinity(),
                              std::numeric_limits<float>::quiet_NaN(),
                              std::ldexp(1.0f, -24),
                              std::ldexp(1.0f, -25),
                              std::ldexp(3.0f, -26),
                              std::ldexp(1.0f, -14),
                              1.0f + std::ldexp(1.0f, -11)};
    for (float x : specials) src.push_back(x);
    uint32_t st = 12345;
    for (int i = 0; i < 4000; ++i) {
        st = st * 1664525u + 1013904223u;
        float f;
        const uint32_t bits = (st & 0x8fffffffu) | 0x30000000u;  // exponents around float16's range
        std::memcpy(&f, &bits, 4);
        src.push_back(f);
    }
    const int64_t n = int64_t(src.size());
    std::vector<fastgemm::float16_t> got(static_cast<size_t>(n)), strided(size_t(2 * n));
    fastgemm::narrow_to_f16({src.data(), 1, n, n, 1}, {got.data(), 1, n, n, 1});
    fastgemm::narrow_to_f16({src.data(), n, 1, 1, 1}, {strided.data(), n, 1, 2, 1});
    bool ok = true;
    for (int64_t i = 0; i < n && ok; ++i) {
        const uint16_t want = fastgemm::to_float16(src[size_t(i)]).bits;
        ok = got[size_t(i)].bits == want && strided[size_t(2 * i)].bits == want;
        if (!ok) std::printf("  narrow %a: %04x, expected %04x\n", double(src[size_t(i)]), got[size_t(i)].bits, want);
    }
    report(ok, std::string(ks.name) + " narrow_to_f16 matches the portable rounding");
}

long double activation_ref(fastgemm::Activation act, long double z) {
    using fastgemm::Activation;
    switch (act) {
        case Activation::none: return z;
        case Activation::relu: return z > 0 ? z : 0.0L;
        case Activation::gelu: return 0.5L * z * std::erfc(-z / std::sqrt(2.0L));
        case Activation::gelu_tanh: {
            const long double v =
                2 * std::sqrt(2 / 3.14159265358979323846264338327950288L) * (z + 0.044715L * z * z * z);
            return z / (1 + std::exp(-v));
        }
        case Activation::silu: return z / (1 + std::exp(-z));
        case Activation::sigmoid: return 1 / (1 + std::exp(-z));
        case Activation::tanh: return std::tanh(z);
    }
    return z;
}

// The fused epilogue on every path (gemv rows and dots, small, small on a column-major C,
// blocked with the bounce tile, alpha == 0) and layout, every activation, with and without a
// bias held in an allocation of exactly n elements, C exact or guarded: act(product + bias)
// within 1.2 x the product's bound plus 8 ulps (the activations' measured error, docs/DESIGN.md).
template <typename T>
void epilogue_cases(const fastgemm::KernelSet& ks, bool quick = false) {
    struct Shape {
        int64_t m, n, k;
        double alpha;
    };
    const Shape shapes[] = {{1, 37, 5, 1},    {37, 1, 5, 1},     {1, 1, 1, 1}, {7, 17, 31, 1},
                            {13, 47, 3, 0.5}, {20, 600, 230, 1}, {9, 11, 4, 0}};
    const long double u = sizeof(T) == 4 ? std::ldexp(1.0L, -24) : std::ldexp(1.0L, -53);
    const long double tiny = std::numeric_limits<T>::min();
    const T sentinel = T(-12345.0);
    for (const Shape& sh : shapes) {
        const int64_t m = sh.m, n = sh.n, k = sh.k;
        if (quick && m * n * k > 4096) continue;  // --quick: not the blocked path
        // One set of operands and references per shape for every layout and guard (made per
        // layout and guard, epilogue_cases took 60% of the driver's time under qemu-aarch64).
        std::vector<T> a0(static_cast<size_t>(m * k)), b0(static_cast<size_t>(k * n)), bias(static_cast<size_t>(n)),
            c0(static_cast<size_t>(m * n));
        for (T& x : a0) x = T(3 * uniform());
        for (T& x : b0) x = T(uniform());
        for (T& x : bias) x = T(2 * uniform());
        for (T& x : c0) x = T(uniform());
        const T alpha = T(sh.alpha), beta = T(0.5);
        std::vector<long double> z0(c0.size()), mag(c0.size());
        for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < n; ++j) {
                long double z = 0, g = 0;
                for (int64_t p = 0; p < k && alpha != T(0); ++p) {
                    const long double x = (long double)a0[size_t(i * k + p)] * (long double)b0[size_t(p * n + j)];
                    z += x;
                    g += std::fabs(x);
                }
                const size_t e = size_t(i * n + j);
                z0[e] = z * alpha + (long double)beta * c0[e];
                mag[e] = g * std::fabs((long double)alpha) + std::fabs(beta * c0[e]);
            }
        for (int act = 0; act < fastgemm::kActivationCount; ++act)
            for (bool with_bias : {true, false}) {
                if (act == 0 && !with_bias) continue;
                const fastgemm::Epilogue<T> ep{with_bias ? bias.data() : nullptr, fastgemm::Activation(act)};
                std::vector<long double> want(c0.size()), bound(c0.size());
                for (int64_t i = 0; i < m; ++i)
                    for (int64_t j = 0; j < n; ++j) {
                        const size_t e = size_t(i * n + j);
                        const long double z = z0[e] + (with_bias ? bias[size_t(j)] : 0);
                        const long double y = activation_ref(fastgemm::Activation(act), z);
                        const long double ulp = std::ldexp(u, std::ilogb(std::fmax(std::fabs(y), tiny)) + 1);
                        want[e] = y;
                        bound[e] = 1.2L * (2.0L * (k + 2) * (u * mag[e] + tiny) + 2 * u * std::fabs(z)) + 8 * ulp;
                    }
                for (Layout lc : {kRowMajor, kColMajor, kStepped, kNegative}) {
                    Placed<T> a(m, k, lc == kColMajor ? kColMajor : kRowMajor, 0, T(0)), b(k, n, kRowMajor, 0, T(0));
                    a.fill(a0);
                    b.fill(b0);
                    for (int64_t guard : {int64_t(16), int64_t(0)}) {
                        Placed<T> c(m, n, lc, guard, sentinel);
                        c.fill(c0);
                        char what[200];
                        std::snprintf(what, sizeof what, "%s %s epilogue act=%d bias=%d m=%lld n=%lld k=%lld C=%s%s",
                                      ks.name, type_name<T>(), act, int(with_bias), (long long)m, (long long)n,
                                      (long long)k, kLayoutName[lc], guard ? "+guards" : "");
                        fastgemm::gemm<T>(alpha, a.cview(), b.cview(), beta, c.view(), ep);
                        bool ok = true;
                        for (int64_t i = 0; i < m && ok; ++i)
                            for (int64_t j = 0; j < n && ok; ++j) {
                                const size_t e = size_t(i * n + j);
                                ok = std::fabs((long double)c.at(i, j) - want[e]) <= bound[e];
                                if (!ok)
                                    std::snprintf(what + std::strlen(what), sizeof what - std::strlen(what),
                                                  ": C[%lld,%lld] = %Lg, expected %Lg", (long long)i, (long long)j,
                                                  (long double)c.at(i, j), want[e]);
                            }
                        report(ok, what);
                        report(c.outside_untouched(sentinel), std::string(what) + ": wrote outside C");
                    }
                }
            }
    }
}

// A PackedB gives B back exactly from any layout, and its products are the same bits on 1 and
// 2 threads (the tile grid splits C's columns first, the one-row path groups of slivers).
template <typename T>
void packed_b(const fastgemm::KernelSet& ks) {
    const fastgemm::KernelTable<T>& uk = table_of(ks, T(0));
    const fastgemm::Blocking bs = fastgemm::blocking_for(uk);
    const std::vector<std::vector<int64_t>> shapes = {{1, 1, 1},      {3, bs.nc + 5, 4}, {1, bs.nc + 5, 9},
                                                      {5, 4099, 513}, {1, 8191, 300},    {300, 280, 250},
                                                      {45, 65, 900}};
    for (const auto& s : shapes) {
        const int64_t m = s[0], n = s[1], k = s[2];
        for (int lb = 0; lb < kLayouts; ++lb) {
            Placed<T> a(m, k, kRowMajor, 0, T(0)), b(k, n, Layout(lb), 0, T(0));
            for (int64_t i = 0; i < m; ++i)
                for (int64_t p = 0; p < k; ++p) a.at(i, p) = T(uniform());
            for (int64_t p = 0; p < k; ++p)
                for (int64_t j = 0; j < n; ++j) b.at(p, j) = T(uniform());
            const fastgemm::PackedB<T> pb(ks, b.cview());
            std::vector<T> back(size_t(k * n)), c1(size_t(m * n)), c2(size_t(m * n));
            pb.unpack({back.data(), k, n, n, 1});
            bool same = true;
            for (int64_t p = 0; p < k && same; ++p)
                for (int64_t j = 0; j < n && same; ++j) same = back[size_t(p * n + j)] == b.at(p, j);
            char what[160];
            std::snprintf(what, sizeof what, "%s %s packed m=%lld n=%lld k=%lld B=%s", ks.name, type_name<T>(),
                          (long long)m, (long long)n, (long long)k, kLayoutName[lb]);
            report(same, std::string(what) + ": unpack gives B back");
            fastgemm::set_max_threads(1);
            fastgemm::gemm<T>(T(1), a.cview(), pb, T(0), {c1.data(), m, n, n, 1});
            fastgemm::set_max_threads(2);
            fastgemm::gemm<T>(T(1), a.cview(), pb, T(0), {c2.data(), m, n, n, 1});
            report(std::memcmp(c1.data(), c2.data(), c1.size() * sizeof(T)) == 0,
                   std::string(what) + ": 1 and 2 threads give the same bits");
            // The first rows alone take gemv_packed: each row as the tile computed it.
            for (int64_t r = 1; r <= fastgemm::kPackedRowsMaxM && r < m; ++r) {
                std::vector<T> rows(size_t(r * n));
                const View<const T> av = a.cview();
                fastgemm::gemm<T>(T(1), View<const T>{av.data, r, k, av.rs, av.cs}, pb, T(0),
                                  {rows.data(), r, n, n, 1});
                report(std::memcmp(rows.data(), c1.data(), rows.size() * sizeof(T)) == 0,
                       std::string(what) + ": its first " + std::to_string(r) + " row(s) alone give the same bits");
            }
        }
    }
    expect_throw<std::invalid_argument>("packed B of the wrong shape", [&] {
        std::vector<T> x(12), y(12);
        const fastgemm::PackedB<T> pb(ks, View<const T>{x.data(), 3, 4, 4, 1});
        fastgemm::gemm<T>(T(1), View<const T>{x.data(), 4, 3, 3, 1}, pb, T(0), View<T>{y.data(), 4, 3, 3, 1});
    });
}

// int8 products (gemm_int8, gemm_int8_scaled): A uint8 or int8, B int8 (or a PackedInt8B made
// from it), against an int64 sum wrapped to int32, and its float32 rounding times the scale; C
// exact-sized and between guards.
template <typename A>
void run_int8_case(const char* kernel, int64_t m, int64_t n, int64_t k, Layout la, Layout lb, Layout lc,
                   bool accumulate, bool scaled, bool extremes, bool packed = false) {
    Placed<A> a(m, k, la, 0, A(0));
    Placed<int8_t> b(k, n, lb, 0, 0);
    for (int64_t i = 0; i < m; ++i)
        for (int64_t p = 0; p < k; ++p)
            a.at(i, p) = extremes ? std::numeric_limits<A>::min() == 0 ? A(255) : A(-128)
                                  : A(uniform() * 128.0 + (std::numeric_limits<A>::min() == 0 ? 128.0 : 0.0));
    for (int64_t p = 0; p < k; ++p)
        for (int64_t j = 0; j < n; ++j) b.at(p, j) = extremes ? int8_t(-128) : int8_t(uniform() * 128.0);
    std::vector<float> scale(size_t(n > 0 ? n : 1));
    for (float& x : scale) x = float(uniform());
    std::vector<int32_t> c0(size_t(m * n));
    for (int32_t& x : c0) x = int32_t(uniform() * 2e9);
    for (int64_t guard : {int64_t(64), int64_t(0)}) {
        char what[256];
        std::snprintf(what, sizeof what, "%s int8 %s m=%lld n=%lld k=%lld A=%s B=%s%s C=%s%s%s%s", kernel,
                      std::numeric_limits<A>::min() == 0 ? "u8" : "s8", (long long)m, (long long)n, (long long)k,
                      kLayoutName[la], kLayoutName[lb], packed ? " packed" : "", kLayoutName[lc],
                      guard ? "+guards" : "", accumulate ? " accumulate" : "", scaled ? " scaled" : "");
        Placed<int32_t> c(m, n, lc, guard, int32_t(0x5a5a5a5a));
        Placed<float> cf(m, n, lc, guard, -12345.0f);
        c.fill(c0);
        const bool done = ran(what, [&] {
            if (packed) {
                const fastgemm::PackedInt8B pb(fastgemm::active_kernels(), b.cview());
                if (scaled) fastgemm::gemm_int8_scaled<A>(a.cview(), pb, scale.data(), 1, cf.view());
                else fastgemm::gemm_int8<A>(a.cview(), pb, accumulate, c.view());
            } else if (scaled) {
                fastgemm::gemm_int8_scaled<A>(a.cview(), b.cview(), scale.data(), 1, cf.view());
            } else {
                fastgemm::gemm_int8<A>(a.cview(), b.cview(), accumulate, c.view());
            }
        });
        if (!done) continue;
        bool ok = true;
        for (int64_t i = 0; i < m && ok; ++i)
            for (int64_t j = 0; j < n && ok; ++j) {
                int64_t sum = accumulate ? c0[size_t(i * n + j)] : 0;
                for (int64_t p = 0; p < k; ++p) sum += int64_t(a.at(i, p)) * int64_t(b.at(p, j));
                const auto want = int32_t(uint32_t(uint64_t(sum)));  // modulo 2^32
                ok = scaled ? cf.at(i, j) == float(want) * scale[size_t(j)] : c.at(i, j) == want;
                if (!ok)
                    std::snprintf(what + std::strlen(what), sizeof what - std::strlen(what), ": C[%lld,%lld] wrong",
                                  (long long)i, (long long)j);
            }
        report(ok, what);
        report(scaled ? cf.outside_untouched(-12345.0f) : c.outside_untouched(int32_t(0x5a5a5a5a)),
               std::string(what) + ": wrote outside C");
    }
}

template <typename A>
void run_int8(const fastgemm::KernelSet& ks) {
    const fastgemm::Int8Kernels& ik = fastgemm::int8_kernels(ks);
    const fastgemm::Blocking bs = fastgemm::int8_blocking(ik);
    const int64_t mr = ik.u8.mr, nr = ik.u8.nr, kc = bs.kc;
    std::vector<std::vector<int64_t>> shapes = {{0, 0, 0}, {0, 5, 3}, {5, 0, 3}, {5, 3, 0},    {1, 1, 1},
                                                {1, 7, 1}, {7, 1, 1}, {1, 1, 9}, {13, 17, 19}, {3, 2, 509}};
    for (int64_t d : {-1, 0, 1}) {
        shapes.push_back({mr + d, nr + 1, 7});
        shapes.push_back({2 * mr + d, 2 * nr - 1, 3});
        shapes.push_back({mr + 1, nr + d, 5});
        shapes.push_back({mr - 1, nr + 1, kc + d});
    }
    shapes.push_back({bs.mc + 1, nr + 1, kc + 1});
    shapes.push_back({193, 9, 1025});  // CI's qemu-aarch64 failure (generic, GCC 12): docs/DESIGN.md, "int8 products"
    int idx = 0;
    for (const auto& s : shapes) {
        if (s[0] < 0 || s[1] < 0 || s[2] < 0) continue;
        for (int mode = 0; mode < 5; ++mode, ++idx)  // 3, 4: B pre-packed
            run_int8_case<A>(ks.name, s[0], s[1], s[2], Layout(idx % kLayouts), Layout((idx / 4) % kLayouts),
                             Layout((idx / 2 + 1) % kLayouts), mode == 1 || mode == 3, mode == 2 || mode == 4, false,
                             mode >= 3);
    }
    for (int lc = 0; lc < kLayouts; ++lc)
        for (int mode = 0; mode < 3; ++mode)
            run_int8_case<A>(ks.name, mr + 1, nr - 1, kc + 3, kRowMajor, kColMajor, Layout(lc), mode == 1, mode == 2,
                             false);
    // Every tile (each height, each width) over 1-9 k groups: each remainder of the k loop's
    // unrolling and vectorisation, a direct and a buffered C, plain, accumulated and scaled.
    const int64_t kg = ik.u8.kgroup;
    for (int64_t g = 1; g <= 9; ++g)
        for (int64_t m = 1; m <= mr; ++m)
            for (int64_t n = 1; n <= nr; ++n) {
                const int64_t k = g * kg - (g == 9 && kg > 1);  // and one partial group
                const int64_t mode = (m + n + g) % 3;
                run_int8_case<A>(ks.name, m, n, k, kRowMajor, kRowMajor, (m + n + g) % 2 ? kStepped : kRowMajor,
                                 mode == 1, mode == 2, false);
            }
    // Past the int32 range (u8: K > 65793, s8: K > 131071): wraps modulo 2^32, never saturates.
    const int64_t k_wrap = std::numeric_limits<A>::min() == 0 ? 65794 : 131072;
    run_int8_case<A>(ks.name, 2, 3, k_wrap, kRowMajor, kRowMajor, kRowMajor, false, false, true);
    run_int8_case<A>(ks.name, 2, 3, k_wrap, kRowMajor, kColMajor, kRowMajor, false, false, true, true);
}

// One row of C (a decode step) goes through the matrix-vector kernels: gemv_rows for B with
// contiguous rows, gemv_dots for B with contiguous columns (a Linear layer's n x k weights), the
// tile for the rest. Widths and depths around their steps (8 to 32 columns, 1 to 32 k values), the
// chunk (4096 outputs) and the split between threads (16); A, B's other layouts and C in every
// layout, plain, accumulated and scaled; the extremes past the int32 range.
template <typename A>
void int8_rows(const fastgemm::KernelSet& ks) {
    int idx = 0;
    for (int64_t n : {1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 65, 4095, 4097})
        for (int64_t k : {1, 2, 3, 4, 5, 15, 16, 17, 33, 97})
            for (Layout lb : {kRowMajor, kColMajor, Layout(idx % kLayouts)}) {
                ++idx;
                run_int8_case<A>(ks.name, 1, n, k, Layout(idx % kLayouts), lb, Layout((idx / 3) % kLayouts),
                                 idx % 3 == 1, idx % 3 == 2, false);
            }
    const int64_t k_wrap = std::numeric_limits<A>::min() == 0 ? 65794 : 131072;
    run_int8_case<A>(ks.name, 1, 19, k_wrap, kRowMajor, kRowMajor, kRowMajor, false, false, true);
    run_int8_case<A>(ks.name, 1, 19, k_wrap, kRowMajor, kColMajor, kStepped, false, false, true);
    // A few rows (streamed where the set streams them): around the partial-sum chunk of 3 and 6
    // rows (5456 and 2720 columns), plain, accumulated and scaled, and the extremes.
    for (int64_t m = 2; m <= 2 * fastgemm::kFewRowsMaxM + 1; ++m)
        for (int64_t n : {int64_t(17), m == 3 ? int64_t(5470) : m == 6 ? int64_t(2730) : int64_t(300)}) {
            ++idx;
            run_int8_case<A>(ks.name, m, n, 37, Layout(idx % kLayouts), kRowMajor, kRowMajor, idx % 3 == 1,
                             idx % 3 == 2, false);
        }
    run_int8_case<A>(ks.name, 3, 19, k_wrap, kRowMajor, kRowMajor, kRowMajor, false, false, true);
    // The kernel itself on every set (gemm_int8 streams few rows only where the set's tuning says).
    const fastgemm::Int8Table<A>& t =
        fastgemm::pick<fastgemm::Int8Table<A>>(fastgemm::int8_kernels(ks).u8, fastgemm::int8_kernels(ks).s8);
    void* chunk = std::aligned_alloc(64, size_t(fastgemm::kFewRowsBufferBytes));
    for (int64_t m = 1; m <= fastgemm::kFewRowsMaxM; ++m) {
        const int64_t n = fastgemm::kFewRowsChunkBytes / 4 / m + 3, k = 37;
        std::vector<A> a(size_t(m * k));
        std::vector<int8_t> b(size_t(k * n));
        std::vector<int32_t> c(size_t(m * n));
        for (auto& v : a) v = A(uniform() * 255.0 - (std::numeric_limits<A>::min() == 0 ? 0.0 : 128.0));
        for (auto& v : b) v = int8_t(uniform() * 255.0 - 128.0);
        t.few_rows(m, n, k, a.data(), k, 1, b.data(), n, c.data(), n, false, nullptr, 0, chunk);
        bool ok = true;
        for (int64_t i = 0; i < m && ok; ++i)
            for (int64_t j = 0; j < n && ok; ++j) {
                int64_t sum = 0;
                for (int64_t p = 0; p < k; ++p) sum += int64_t(a[size_t(i * k + p)]) * int64_t(b[size_t(p * n + j)]);
                ok = c[size_t(i * n + j)] == int32_t(sum);
            }
        report(ok,
               std::string(ks.name) + " int8 few_rows m=" + std::to_string(m) + " n=" + std::to_string(n) + ": exact");
    }
    std::free(chunk);
    // A PackedInt8B with elements wider than int8 keeps B's values for the streaming rows.
    std::vector<int8_t> b(7 * 40);
    for (size_t e = 0; e < b.size(); ++e) b[e] = int8_t(int(e * 37 % 255) - 127);
    const fastgemm::PackedInt8B pb(ks, View<const int8_t>{b.data(), 7, 20, 40, 2});  // every other column
    bool kept = (pb.values() != nullptr) == (t.b_size != 1);
    for (int64_t p = 0; p < 7 && kept && pb.values(); ++p)
        for (int64_t j = 0; j < 20 && kept; ++j) kept = pb.values()[p * 20 + j] == b[size_t(p * 40 + 2 * j)];
    report(kept && pb.bytes() >= (pb.values() ? size_t(140) : size_t(0)),
           std::string(ks.name) + " int8 PackedInt8B keeps B's values exactly when its elements are wider");
}

// --quick, for CPUs qemu emulates (what they add is dispatch; the full driver runs natively):
// each product family once on the kernel set, edge tiles and a partial k block included.
void quick_cases(const fastgemm::KernelSet& ks) {
    const fastgemm::Blocking bs = fastgemm::blocking_for(ks.f32);
    const int64_t mr = ks.f32.mr, nr = ks.f32.nr;
    for (const Case& c : {Case{1, 37, 5, kRowMajor, kRowMajor, kStepped, 0.75, -0.5, false, false},
                          Case{13, 17, 19, kColMajor, kRowMajor, kRowMajor, 1.0, 0.0, false, false},
                          Case{mr + 1, nr + 1, bs.kc + 1, kRowMajor, kColMajor, kStepped, 1.5, -1.0, false, false},
                          Case{65, 70, 80, kRowMajor, kRowMajor, kRowMajor, 1.0, 0.5, false, false}}) {
        run_case<float>(ks.name, c);
        run_case<double>(ks.name, c);
        run_case<float>(ks.name, c, true);
        run_lowp_case<fastgemm::bfloat16_t>(ks.name, c, 1.0f);
        run_lowp_case<fastgemm::float16_t>(ks.name, c, 1.0f);
    }
    epilogue_cases<float>(ks, true);
    epilogue_cases<double>(ks, true);
    for (bool scaled : {false, true}) {
        run_int8_case<uint8_t>(ks.name, mr + 1, nr + 1, 9, kRowMajor, kRowMajor, kStepped, !scaled, scaled, false);
        run_int8_case<int8_t>(ks.name, mr + 1, nr + 1, 9, kRowMajor, kRowMajor, kStepped, !scaled, scaled, false);
        run_int8_case<uint8_t>(ks.name, 1, 37, 35, kRowMajor, kRowMajor, kRowMajor, !scaled, scaled, false);
        run_int8_case<int8_t>(ks.name, 1, 37, 35, kRowMajor, kColMajor, kStepped, !scaled, scaled, false);
    }
}

// gemm sends a product with the views and beta == 0 (or not) of the last one its thread ran whole
// on the small kernels straight to small_stack (gemm.cpp, SmallRoute). Products that differ
// from each other in one shape, stride or beta, among them routes the replay must not take (a
// B by columns that dots_side gives the dot kernels, C by columns, one row), each run right after
// every one of them and itself: always the bits it gives after an unrelated product, and within
// the K-scaled bound of a double reference.
template <typename T>
void small_route_replay(const fastgemm::KernelSet& ks) {
    struct P {
        int64_t m, n, k;
        Layout la, lb, lc;
        T beta;
    };
    const P ps[] = {
        {4, 4, 4, kRowMajor, kRowMajor, kRowMajor, T(0)},       {4, 4, 4, kRowMajor, kRowMajor, kRowMajor, T(1)},
        {4, 4, 4, kColMajor, kRowMajor, kRowMajor, T(0)},       {4, 4, 4, kRowMajor, kColMajor, kRowMajor, T(0)},
        {4, 4, 4, kRowMajor, kRowMajor, kColMajor, T(0)},       {4, 4, 4, kStepped, kRowMajor, kRowMajor, T(0)},
        {4, 5, 4, kRowMajor, kRowMajor, kRowMajor, T(0)},       {5, 4, 4, kRowMajor, kRowMajor, kRowMajor, T(0)},
        {4, 4, 5, kRowMajor, kRowMajor, kRowMajor, T(0)},       {1, 4, 4, kRowMajor, kRowMajor, kRowMajor, T(0)},
        {2, 16, 256, kRowMajor, kRowMajor, kRowMajor, T(0)},    {2, 16, 256, kRowMajor, kColMajor, kRowMajor, T(0)},
        {2, 16, 256, kRowMajor, kRowMajor, kRowMajor, T(-0.5)}, {16, 2, 256, kRowMajor, kRowMajor, kRowMajor, T(0)},
        {16, 2, 256, kStepped, kRowMajor, kRowMajor, T(0)}};
    constexpr size_t kCount = sizeof(ps) / sizeof(ps[0]);
    struct Operands {
        Placed<T> a, b, c;
        std::vector<T> c0;
    };
    std::vector<Operands> ops;
    for (const P& p : ps) {
        ops.push_back({Placed<T>(p.m, p.k, p.la, 0, T(0)), Placed<T>(p.k, p.n, p.lb, 0, T(0)),
                       Placed<T>(p.m, p.n, p.lc, 0, T(0)), std::vector<T>(size_t(p.m * p.n))});
        Operands& o = ops.back();
        for (int64_t i = 0; i < p.m; ++i)
            for (int64_t q = 0; q < p.k; ++q) o.a.at(i, q) = T(uniform());
        for (int64_t q = 0; q < p.k; ++q)
            for (int64_t j = 0; j < p.n; ++j) o.b.at(q, j) = T(uniform());
        for (T& x : o.c0) x = T(uniform());
    }
    auto run = [&](size_t x) {
        Operands& o = ops[x];
        o.c.fill(o.c0);
        fastgemm::gemm<T>(T(0.75), o.a.cview(), o.b.cview(), ps[x].beta, o.c.view());
        return o.c.store;
    };
    std::vector<T> ua(7 * 11), ub(11 * 9), uc(7 * 9);
    auto unrelated = [&] {
        fastgemm::gemm<T>(T(1), {ua.data(), 7, 11, 11, 1}, {ub.data(), 11, 9, 9, 1}, T(0), {uc.data(), 7, 9, 9, 1});
    };
    for (size_t x = 0; x < kCount; ++x) {
        const P& p = ps[x];
        unrelated();
        const std::vector<T> fresh = run(x);
        bool close = true;
        for (int64_t i = 0; i < p.m; ++i)
            for (int64_t j = 0; j < p.n; ++j) {
                double ref = double(p.beta) * double(ops[x].c0[size_t(i * p.n + j)]), mag = std::fabs(ref);
                for (int64_t q = 0; q < p.k; ++q) {
                    const double t = 0.75 * double(ops[x].a.at(i, q)) * double(ops[x].b.at(q, j));
                    ref += t;
                    mag += std::fabs(t);
                }
                const double u = sizeof(T) == 4 ? std::ldexp(1.0, -24) : std::ldexp(1.0, -53);
                close = close && std::fabs(double(ops[x].c.at(i, j)) - ref) <= 2.0 * double(p.k + 2) * u * mag;
            }
        bool same = true;
        for (size_t y = 0; y < kCount; ++y) {
            run(y);
            same = same && run(x) == fresh;
        }
        char what[160];
        std::snprintf(what, sizeof what, "%s %s small route replay %lldx%lldx%lld (layouts %d %d %d, beta %g)", ks.name,
                      type_name<T>(), (long long)p.m, (long long)p.n, (long long)p.k, int(p.la), int(p.lb), int(p.lc),
                      double(p.beta));
        report(close, std::string(what) + ": against the reference");
        report(same, std::string(what) + ": the same bits after every other product");
    }
}

// Everything the driver checks on one kernel set.
void all_cases(const fastgemm::KernelSet& ks) {
    run_kernel<float>(ks);
    run_kernel<double>(ks);
    run_kernel<float>(ks, true);
    run_kernel<double>(ks, true);
    packed_b<float>(ks);
    packed_b<double>(ks);
    gemv_tail<float>(ks);
    gemv_tail<double>(ks);
    gemv_head_check<float>(ks);
    gemv_head_check<double>(ks);
    copy_columns<float>(ks);
    copy_columns<double>(ks);
    stack_column_tail<float>(ks);
    stack_column_tail<double>(ks);
    stack_cols<float>(ks);
    stack_cols<double>(ks);
    dots_check<float>(ks);
    dots_check<double>(ks);
    small_chunks_check<float>(ks);
    small_chunks_check<double>(ks);
    half_tails_check<float>(ks);
    half_tails_check<double>(ks);
    small_route_replay<float>(ks);
    small_route_replay<double>(ks);
    few_rows_check<float, float>(ks, ks.f32, "float32", ks.f32.lanes);
    few_rows_check<double, double>(ks, ks.f64, "float64", ks.f64.lanes);
    few_rows_check<fastgemm::bfloat16_t, float>(ks, ks.lowp.bf16, "bfloat16", ks.f32.lanes);
    few_rows_check<fastgemm::float16_t, float>(ks, ks.lowp.f16, "float16", ks.f32.lanes);
    epilogue_cases<float>(ks);
    epilogue_cases<double>(ks);
    fastgemm::set_max_threads(1);  // flags of worker threads never reach the caller
    padding_flags<float>(ks);
    padding_flags<double>(ks);
    fastgemm::set_max_threads(2);
    run_lowp<fastgemm::bfloat16_t>(ks);
    run_lowp<fastgemm::float16_t>(ks);
    lowp_narrow(ks);
    lowp_batched<fastgemm::bfloat16_t>(ks);
    lowp_batched<fastgemm::float16_t>(ks);
    run_int8<uint8_t>(ks);
    run_int8<int8_t>(ks);
    int8_rows<uint8_t>(ks);
    int8_rows<int8_t>(ks);
}

}  // namespace

// run_blocked_pairs (the five loops over bfloat16 pair slivers: ceil(kc / 2) slot steps, k
// slices rounded to even) on a scalar stand-in for the AVX512_BF16 kernels, so the driver's
// pair arithmetic is tested on every machine: the slot layout of kernel.hpp's PairKernels, and
// vdpbf16ps's arithmetic per lane as Intel's SDM gives it (the odd pair's product added first,
// then the even one's; bfloat16 subnormal inputs read as 0, subnormal sums flushed to 0). The
// AVX512_BF16 kernels themselves run in run_lowp where the CPU has them.
namespace emu {

uint32_t slot_bits(const float* p) {
    uint32_t u;
    std::memcpy(&u, p, 4);
    return u;
}
float bf16_daz(uint32_t h) { return (h & 0x7f80u) ? fastgemm::to_float(fastgemm::bfloat16_t{uint16_t(h)}) : 0.0f; }
float ftz(float x) { return std::fabs(x) < std::ldexp(1.0f, -126) ? 0.0f * x : x; }

constexpr int kMR = 3, kNV = 2, kW = 4;  // a 3 x 8 tile of 4-lane "vectors"

template <int M, int V>
void tile(int64_t ks, float alpha, const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
          int64_t ldc, int n) {
    float acc[M][V * kW] = {};
    for (int64_t q = 0; q < ks; ++q)
        for (int i = 0; i < M; ++i) {
            const uint32_t ai = slot_bits(a + q * lda + i);
            for (int j = 0; j < V * kW; ++j) {
                const uint32_t bj = slot_bits(b + q * ldb + j);
                acc[i][j] = ftz(acc[i][j] + bf16_daz(ai >> 16) * bf16_daz(bj >> 16));
                acc[i][j] = ftz(acc[i][j] + bf16_daz(ai & 0xffffu) * bf16_daz(bj & 0xffffu));
            }
        }
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < n; ++j)
            c[i * ldc + j] = beta == 0.0f ? alpha * acc[i][j] : alpha * acc[i][j] + beta * c[i * ldc + j];
}

void put(float* dst, uint16_t lo, uint16_t hi) {
    const uint32_t u = uint32_t(lo) | uint32_t(hi) << 16;
    std::memcpy(dst, &u, 4);
}

void pack_a(int64_t mc, int64_t kc, const fastgemm::bfloat16_t* a, int64_t rsa, int64_t csa, float* ap) {
    const int64_t kp = (kc + 1) / 2;
    for (int64_t i0 = 0; i0 < mc; i0 += kMR, ap += kMR * kp)
        for (int64_t q = 0; q < kp; ++q)
            for (int i = 0; i < kMR; ++i) {
                const bool row = i0 + i < mc;
                put(ap + q * kMR + i, row ? a[(i0 + i) * rsa + 2 * q * csa].bits : 0,
                    row && 2 * q + 1 < kc ? a[(i0 + i) * rsa + (2 * q + 1) * csa].bits : 0);
            }
}

void pack_b(int64_t kc, int64_t nc, const fastgemm::bfloat16_t* b, int64_t rsb, int64_t csb, float* bp, int64_t s0,
            int64_t s1) {
    constexpr int NR = kNV * kW;
    const int64_t kp = (kc + 1) / 2;
    for (int64_t s = s0; s < s1; ++s)
        for (int64_t q = 0; q < kp; ++q)
            for (int j = 0; j < NR; ++j) {
                const bool col = s * NR + j < nc;
                put(bp + s * NR * kp + q * NR + j, col ? b[2 * q * rsb + (s * NR + j) * csb].bits : 0,
                    col && 2 * q + 1 < kc ? b[(2 * q + 1) * rsb + (s * NR + j) * csb].bits : 0);
            }
}

template <int M, int... V>
fastgemm::TileRow<float> row(std::integer_sequence<int, V...>) {
    return {{nullptr, &tile<M, V + 1>...}};
}

// The tiles' epilogue, bias and relu only (what the driver test below asks for).
void epilogue(int64_t m, int64_t n, float* c, int64_t rsc, const float* bias, fastgemm::Activation act) {
    for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
            float& x = c[i * rsc + j];
            if (bias) x += bias[j];
            if (act == fastgemm::Activation::relu) x = x > 0.0f ? x : 0.0f;
        }
}

fastgemm::PairKernels kernels() {
    fastgemm::PairKernels pk{kMR, kNV * kW, kW, {}, &pack_a, &pack_b, &epilogue, nullptr};  // no peak loop
    pk.tiles[1] = row<1>(std::make_integer_sequence<int, kNV>{});
    pk.tiles[2] = row<2>(std::make_integer_sequence<int, kNV>{});
    pk.tiles[3] = row<3>(std::make_integer_sequence<int, kNV>{});
    return pk;
}

}  // namespace emu

void pair_driver_emulated() {
    using fastgemm::bfloat16_t;
    const fastgemm::PairKernels pk = emu::kernels();
    struct Shape {
        int64_t m, n, k;
    };
    // Odd and even k, k slices of 8 (kc 7 rounds up to 8) with an odd last one, edge tiles.
    const fastgemm::Blocking bs{6, 7, 16};
    for (const Shape& sh : {Shape{1, 1, 1}, Shape{3, 8, 2}, Shape{4, 9, 3}, Shape{7, 17, 23}, Shape{10, 33, 16}}) {
        const int64_t m = sh.m, n = sh.n, k = sh.k;
        for (int layout = 0; layout < 3; ++layout) {  // A row-major, A column-major + stepped C, C column-major
            std::vector<bfloat16_t> a(size_t(m * k)), b(size_t(k * n));
            std::vector<double> a64(a.size()), b64(b.size());
            for (size_t i = 0; i < a.size(); ++i)
                a64[i] = fastgemm::to_float(a[i] = fastgemm::to_bfloat16(float(uniform())));
            for (size_t i = 0; i < b.size(); ++i)
                b64[i] = fastgemm::to_float(b[i] = fastgemm::to_bfloat16(float(uniform())));
            const bool acol = layout == 1;
            const View<const bfloat16_t> va{a.data(), m, k, acol ? 1 : k, acol ? m : 1};
            const View<const bfloat16_t> vb{b.data(), k, n, n, 1};
            std::vector<float> c(size_t(m * n * 2), 0.5f), c1, c2, bias(static_cast<size_t>(n));
            for (float& x : bias) x = float(uniform());
            const View<float> vc = layout == 0   ? View<float>{c.data(), m, n, n, 1}
                                   : layout == 1 ? View<float>{c.data(), m, n, 2 * n, 2}
                                                 : View<float>{c.data(), m, n, 1, m};
            // C^T layouts (2) are the caller's job: gemm_lowp runs a bias after the tiles there.
            const bool fused = layout != 2 && sh.n > 1;
            const fastgemm::Epilogue<float> ep{fused ? bias.data() : nullptr,
                                               fused ? fastgemm::Activation::relu : fastgemm::Activation::none};
            bool ok = true;
            for (int threads : {1, 2}) {
                std::fill(c.begin(), c.end(), 0.5f);
                fastgemm::run_blocked_pairs(pk, bs, threads, 1.5f, va, vb, -1.0f, vc, ep);
                (threads == 1 ? c1 : c2) = c;
            }
            for (int64_t i = 0; i < m; ++i)
                for (int64_t j = 0; j < n; ++j) {
                    double ref = 0, mag = 0;
                    for (int64_t p = 0; p < k; ++p) {
                        const double x = a64[size_t(acol ? p * m + i : i * k + p)] * b64[size_t(p * n + j)];
                        ref += x;
                        mag += std::fabs(x);
                    }
                    const double got = vc.data[i * vc.rs + j * vc.cs];
                    const double want = fused ? std::max(1.5 * ref - 0.5 + bias[size_t(j)], 0.0) : 1.5 * ref - 0.5;
                    const double slack =
                        fused ? std::ldexp(1.0, -24) * (1.5 * mag + 0.5 + std::fabs(bias[size_t(j)])) : 0;
                    ok = ok && std::fabs(got - want) <=
                                   2 * double(k + 2) * std::ldexp(1.0, -24) * (1.5 * mag + 0.5) + 2 * slack;
                }
            report(ok && c1 == c2, "pair driver (emulated vdpbf16ps) " + std::to_string(m) + "x" + std::to_string(n) +
                                       "x" + std::to_string(k) + " layout " + std::to_string(layout) +
                                       (fused ? " + bias, relu" : ""));
        }
    }
    // vdpbf16ps's subnormal rules through the driver: subnormal inputs and sums give 0.
    const int64_t k = 5;
    std::vector<bfloat16_t> tiny(size_t(2 * k), bfloat16_t{1}),
        small(size_t(2 * k), fastgemm::to_bfloat16(std::ldexp(1.0f, -70)));
    std::vector<float> c(4, 9.0f);
    fastgemm::run_blocked_pairs(pk, bs, 1, 1.0f, {tiny.data(), 2, k, k, 1}, {small.data(), k, 2, 2, 1}, 0.0f,
                                {c.data(), 2, 2, 2, 1});
    report(c[0] == 0.0f && c[3] == 0.0f, "pair driver (emulated): subnormal inputs read as 0");
    fastgemm::run_blocked_pairs(pk, bs, 1, 1.0f, {small.data(), 2, k, k, 1}, {small.data(), k, 2, 2, 1}, 0.0f,
                                {c.data(), 2, 2, 2, 1});
    report(c[0] == 0.0f && c[3] == 0.0f, "pair driver (emulated): subnormal sums flushed to 0");
}

int main(int argc, char** argv) {
    const bool quick = argc > 1 && std::string(argv[1]) == "--quick";
    // `--shard I/N`: the kernel sets at positions I, I + N, ... of runnable_kernels(), and the
    // cases after them, which take no kernel set, only in shard 0 (CI runs the sanitized
    // driver's shards side by side on its cores). Every shard checks the environment overrides
    // first: they must be read before anything computes.
    int shard = 0, shards = 1;
    if (argc > 2 && std::string(argv[1]) == "--shard" &&
        (std::sscanf(argv[2], "%d/%d", &shard, &shards) != 2 || shards < 1 || shard < 0 || shard >= shards)) {
        std::fprintf(stderr, "--shard I/N with 0 <= I < N, not %s\n", argv[2]);
        return 2;
    }
    // Read once, at the first blocking_for: set before anything computes.
    setenv("FASTGEMM_KC", "99999999999999999999", 1);
    setenv("FASTGEMM_MC", "abc", 1);
    setenv("FASTGEMM_NC", "1000000000000", 1);
    env_overrides();
    tile_kc_caps();
    // Enough threads that the larger shapes take the parallel path too.
    fastgemm::set_max_threads(2);
    const std::string before = fastgemm::active_kernels().name;
    const std::vector<const fastgemm::KernelSet*> sets = fastgemm::runnable_kernels();
    for (size_t i = size_t(shard); i < sets.size(); i += size_t(shards)) {
        const fastgemm::KernelSet* ks = sets[i];
        fastgemm::set_kernels(ks->name);
        report(std::string(fastgemm::active_kernels().name) == ks->name, std::string("set_kernels ") + ks->name);
        const int f0 = failed;
        if (quick) quick_cases(*ks);
        else all_cases(*ks);
        std::printf("kernel %-8s %s\n", ks->name, failed == f0 ? "ok" : "FAILED");
    }
    fastgemm::set_kernels(before);
    if (shard == 0) {
        if (!quick) pair_driver_emulated();
        tile_heights();
        bad_input();
        overlap_rule();
        kernel_lookup_and_threads();
        small_shape_table();
    }
    std::printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
