// C++ test driver for the core: fastgemm::gemm<float/double> with every runnable kernel, over
// edge shapes, strides (transposed, stepped, negative) and alpha/beta cases, against a long
// double reference. Built with ASan/UBSan (FASTGEMM_SANITIZE) it shows that no kernel reads
// or writes outside its arrays: A and B live in allocations of exactly their extent, C once in
// an exact allocation (the sanitizer catches any stray access) and once between sentinel-filled
// guards (a stray write changes a sentinel). Portable: no ISA-specific code, kernels come from
// runnable_kernels(), so it also runs on aarch64 under qemu. The 2-byte and int8 entries too.
#include <cfenv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "../fastgemm/batched.hpp"
#include "../fastgemm/blocking.hpp"
#include "../fastgemm/dispatch.hpp"
#include "../fastgemm/gemm.hpp"
#include "../fastgemm/gemm_int8.hpp"
#include "../fastgemm/gemm_lowp.hpp"
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

template <typename T>
void run_case(const char* kernel, const Case& cs) {
    const T sentinel = T(-12345.0);
    const int64_t m = cs.m, n = cs.n, k = cs.k;
    Placed<T> a(m, k, cs.la, 0, T(0)), b(k, n, cs.lb, 0, T(0));
    auto logical_c = std::vector<std::vector<T>>(size_t(m), std::vector<T>(size_t(n)));
    const T nan = std::numeric_limits<T>::quiet_NaN();
    for (int64_t i = 0; i < m; ++i)
        for (int64_t p = 0; p < k; ++p) a.at(i, p) = cs.nan_in_ab ? nan : T(uniform());
    for (int64_t p = 0; p < k; ++p)
        for (int64_t j = 0; j < n; ++j) b.at(p, j) = cs.nan_in_ab ? nan : T(uniform());
    for (auto& row : logical_c)
        for (T& x : row) x = cs.nan_in_c ? nan : T(uniform());

    const T alpha = T(cs.alpha), beta = T(cs.beta);
    const long double u = sizeof(T) == 4 ? std::ldexp(1.0L, -24) : std::ldexp(1.0L, -53);
    const long double tiny = std::numeric_limits<T>::denorm_min();

    // Guarded C catches stray writes by sentinel; exact C lets the sanitizer catch any access.
    for (int64_t guard : {int64_t(64), int64_t(0)}) {
        Placed<T> c(m, n, cs.lc, guard, sentinel);
        for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < n; ++j) c.at(i, j) = logical_c[size_t(i)][size_t(j)];
        char what[256];
        std::snprintf(what, sizeof what, "%s %s m=%lld n=%lld k=%lld A=%s B=%s C=%s%s alpha=%g beta=%g%s%s", kernel,
                      type_name<T>(), (long long)m, (long long)n, (long long)k, kLayoutName[cs.la], kLayoutName[cs.lb],
                      kLayoutName[cs.lc], guard ? "+guards" : "", cs.alpha, cs.beta, cs.nan_in_c ? " NaN-in-C" : "",
                      cs.nan_in_ab ? " NaN-in-AB" : "");
        try {
            fastgemm::gemm<T>(alpha, a.cview(), b.cview(), beta, c.view());
        } catch (const std::exception& e) {
            report(false, std::string(what) + ": threw " + e.what());
            continue;
        }
        bool ok = true;
        for (int64_t i = 0; i < m && ok; ++i)
            for (int64_t j = 0; j < n && ok; ++j) {
                long double ref = 0, mag = 0;
                if (alpha != T(0)) {
                    for (int64_t p = 0; p < k; ++p) {
                        const long double x = (long double)a.at(i, p) * (long double)b.at(p, j);
                        ref += x;
                        mag += std::fabs(x);
                    }
                    ref *= (long double)alpha;
                    mag *= std::fabs((long double)alpha);
                }
                if (beta != T(0)) {
                    const long double c0 = logical_c[size_t(i)][size_t(j)];
                    ref += (long double)beta * c0;
                    mag += std::fabs((long double)beta * c0);
                }
                const long double got = c.at(i, j);
                if (std::isnan(ref)) {
                    ok = std::isnan(got);
                } else {
                    // K roundings in the dot product plus alpha and beta scaling (DESIGN.md).
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

const fastgemm::KernelTable<float>& table_of(const fastgemm::KernelSet& ks, float) { return ks.f32; }
const fastgemm::KernelTable<double>& table_of(const fastgemm::KernelSet& ks, double) { return ks.f64; }

template <typename T>
void run_kernel(const fastgemm::KernelSet& ks) {
    const fastgemm::KernelTable<T>& uk = table_of(ks, T(0));
    const int64_t mr = uk.mr, nr = uk.nr;
    const fastgemm::Blocking bs = fastgemm::blocking_for(uk.mr, uk.nr, int(sizeof(T)));
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
            run_case<T>(ks.name, c);
        }
    }
    for (const auto& s : std::vector<std::vector<int64_t>>{{1, 1, 1}, {mr + 1, nr - 1, 5}})
        for (int la = 0; la < kLayouts; ++la)
            for (int lb = 0; lb < kLayouts; ++lb)
                for (int lc = 0; lc < kLayouts; ++lc)
                    run_case<T>(ks.name,
                                {s[0], s[1], s[2], Layout(la), Layout(lb), Layout(lc), 1.5, -1.0, false, false});
    for (const auto& s : std::vector<std::vector<int64_t>>{{1, 1, 1}, {mr + 1, nr + 1, 3}, {mr - 1, nr - 1, 0}}) {
        for (int lc = 0; lc < kLayouts; ++lc) {
            run_case<T>(ks.name, {s[0], s[1], s[2], kRowMajor, kColMajor, Layout(lc), 1.0, 0.0, true, false});
            run_case<T>(ks.name, {s[0], s[1], s[2], kColMajor, kRowMajor, Layout(lc), 0.0, 0.5, false, true});
            run_case<T>(ks.name, {s[0], s[1], s[2], kStepped, kNegative, Layout(lc), 0.0, 0.0, true, true});
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

// gemv_rows must not compute on chunk lanes past the row length: a chunk full of signalling
// NaNs (what a reused stack could hold) must raise no FE_INVALID and leave the result exact.
template <typename T>
void gemv_tail(const fastgemm::KernelSet& ks) {
    const fastgemm::KernelTable<T>& uk = table_of(ks, T(0));
    const int64_t elems = fastgemm::kGemvChunkBytes / int64_t(sizeof(T));
    T* chunk = static_cast<T*>(std::aligned_alloc(64, size_t(fastgemm::kGemvChunkBytes)));
    for (int64_t n : {int64_t(1), int64_t(3), int64_t(257), elems - 1, elems + 5}) {
        const int64_t k = 9;
        std::vector<T> x(static_cast<size_t>(k)), mat(static_cast<size_t>(k * n)), y(static_cast<size_t>(n), T(7));
        for (int64_t p = 0; p < k; ++p) x[size_t(p)] = T(p + 1);
        for (int64_t e = 0; e < k * n; ++e) mat[size_t(e)] = T(e % 5);
        for (int64_t e = 0; e < elems; ++e) chunk[e] = std::numeric_limits<T>::signaling_NaN();
        std::feclearexcept(FE_ALL_EXCEPT);
        uk.gemv_rows(n, k, T(1), x.data(), 1, mat.data(), n, T(0), y.data(), chunk);
        bool ok = !std::fetestexcept(FE_INVALID);
        for (int64_t j = 0; j < n && ok; ++j) {
            T want = 0;
            for (int64_t p = 0; p < k; ++p) want += x[size_t(p)] * mat[size_t(p * n + j)];
            ok = y[size_t(j)] == want;
        }
        report(ok, std::string(ks.name) + " " + type_name<T>() + " gemv_rows n=" + std::to_string(n) +
                       ": no FE_INVALID from the chunk's tail, exact result");
    }
    std::free(chunk);
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

void kernel_lookup_and_threads() {
    for (const fastgemm::KernelSet* ks : fastgemm::compiled_kernels()) {
        const fastgemm::Tuning& t = ks->tuning;
        report(&fastgemm::find_kernels(ks->name, false) == ks && t.direct_max_m > 0 && t.skinny_max_m > 0 &&
                   t.small_max_work > 0 && t.head_min_slivers > 0,
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

    // parallel_ranges covers [0, len) once; dynamic_chunks rethrows the first exception.
    std::vector<int> hits(1000, 0);
    fastgemm::parallel_ranges(2, 1000, 16, [&](int, int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i) ++hits[size_t(i)];
    });
    bool once = true;
    for (int h : hits) once &= h == 1;
    report(once, "parallel_ranges covers every index once");
    expect_throw<std::runtime_error>("dynamic_chunks rethrows", [] {
        fastgemm::dynamic_chunks(2, 50, [](int64_t i) {
            if (i == 17) throw std::runtime_error("x");
        });
    });
    // A large scratch buffer is given back for a much smaller need.
    void* big = fastgemm::thread_scratch(size_t(64) << 20);
    void* small = fastgemm::thread_scratch(size_t(1) << 20);
    report(big != nullptr && small != nullptr, "thread_scratch grows and shrinks");
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
    const fastgemm::Blocking b = fastgemm::blocking_for(6, 16, 4);
    report(b.kc >= 1 && b.kc <= 4096 && b.mc >= 6 && b.mc <= 4096 && b.nc >= 16 && b.nc <= 16384,
           "blocking falls back to the model");
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

template <typename S>
void run_lowp_case(const char* kernel, const Case& cs, float subnormal_scale) {
    const int64_t m = cs.m, n = cs.n, k = cs.k;
    const float sentinel = -12345.0f;
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
    const long double u = std::ldexp(1.0L, -24), tiny = std::numeric_limits<float>::denorm_min();
    for (int64_t guard : {int64_t(64), int64_t(0)}) {
        Placed<float> c(m, n, cs.lc, guard, sentinel);
        for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < n; ++j) c.at(i, j) = c0[size_t(i * n + j)];
        char what[256];
        std::snprintf(what, sizeof what, "%s lowp %s m=%lld n=%lld k=%lld A=%s B=%s C=%s%s alpha=%g beta=%g%s%s%s",
                      kernel, storage_name<S>(), (long long)m, (long long)n, (long long)k, kLayoutName[cs.la],
                      kLayoutName[cs.lb], kLayoutName[cs.lc], guard ? "+guards" : "", cs.alpha, cs.beta,
                      cs.nan_in_c ? " NaN-in-C" : "", cs.nan_in_ab ? " NaN-in-AB" : "",
                      subnormal_scale != 1.0f ? " subnormal A" : "");
        try {
            fastgemm::gemm_lowp<S>(alpha, a.cview(), b.cview(), beta, c.view());
        } catch (const std::exception& e) {
            report(false, std::string(what) + ": threw " + e.what());
            continue;
        }
        bool ok = true;
        for (int64_t i = 0; i < m && ok; ++i)
            for (int64_t j = 0; j < n && ok; ++j) {
                long double ref = 0, mag = 0;
                if (alpha != 0.0f) {
                    for (int64_t p = 0; p < k; ++p) {
                        const long double x =
                            (long double)fastgemm::to_float(a.at(i, p)) * fastgemm::to_float(b.at(p, j));
                        ref += x;
                        mag += std::fabs(x);
                    }
                    ref *= alpha;
                    mag *= std::fabs((long double)alpha);
                }
                if (beta != 0.0f) {
                    ref += (long double)beta * c0[size_t(i * n + j)];
                    mag += std::fabs((long double)beta * c0[size_t(i * n + j)]);
                }
                const long double got = c.at(i, j);
                ok = std::isnan(ref) ? std::isnan(got)
                                     : std::isfinite(got) && std::fabs(got - ref) <= 2.0L * (k + 2) * (u * mag + tiny);
                if (!ok)
                    std::snprintf(what + std::strlen(what), sizeof what - std::strlen(what),
                                  ": C[%lld,%lld] = %Lg, expected %Lg", (long long)i, (long long)j, got, ref);
            }
        report(ok, what);
        report(c.outside_untouched(sentinel), std::string(what) + ": wrote outside C");
    }
}

template <typename S>
void run_lowp(const fastgemm::KernelSet& ks) {
    const int64_t mr = ks.f32.mr, nr = ks.f32.nr;
    const fastgemm::Blocking bs = fastgemm::blocking_for(ks.f32.mr, ks.f32.nr, 4);
    std::vector<std::vector<int64_t>> shapes = {{0, 0, 0},     {5, 3, 0},    {1, 1, 1},    {1, 7, 1},    {7, 1, 1},
                                                {1, 1, 9},     {1, 37, 41},  {37, 1, 41},  {1, 300, 17}, {1, 4133, 11},
                                                {4133, 1, 11}, {13, 17, 19}, {31, 37, 41}, {2, 401, 3},  {3, 2, 509}};
    for (int64_t d : {-1, 0, 1}) {
        shapes.push_back({mr + d, nr + 1, 7});
        shapes.push_back({mr + 1, nr + d, 5});
        shapes.push_back({mr - 1, 2 * nr + d, 4});
        shapes.push_back({mr + 1, nr - 1, bs.kc + d});
        shapes.push_back({bs.mc + d, 3, 4});
    }
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
// by batch, gives bitwise what gemm_lowp gives item by item.
template <typename S>
void lowp_batched(const fastgemm::KernelSet& ks) {
    const int64_t m = 40, n = 64, k = 100, items = 20;  // 2 threads by batch, 1 per item
    std::vector<S> a(size_t(m * k)), b(size_t(items * k * n));
    for (S& x : a) x = to_storage<S>(float(uniform()));
    for (S& x : b) x = to_storage<S>(float(uniform()));
    std::vector<float> c(size_t(items * m * n), 5.0f), want(c);
    for (int64_t i = 0; i < items; ++i)
        fastgemm::gemm_lowp<S>(0.5f, {a.data(), m, k, k, 1}, {b.data() + i * k * n, k, n, n, 1}, -1.0f,
                               {want.data() + i * m * n, m, n, n, 1});
    fastgemm::gemm_lowp_batched<S>(0.5f, {a.data(), m, k, k, 1}, {b.data(), k, n, n, 1}, -1.0f, {c.data(), m, n, n, 1},
                                   {{items, 0, k * n, m * n}});
    report(std::memcmp(c.data(), want.data(), c.size() * 4) == 0,
           std::string(ks.name) + " lowp " + storage_name<S>() + " batched = item by item");
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

// int8 products (gemm_int8, gemm_int8_scaled): A uint8 or int8, B int8, against an int64 sum
// wrapped to int32, and its float32 rounding times the scale; C exact-sized and between guards.
template <typename A>
void run_int8_case(const char* kernel, int64_t m, int64_t n, int64_t k, Layout la, Layout lb, Layout lc,
                   bool accumulate, bool scaled, bool extremes) {
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
        std::snprintf(what, sizeof what, "%s int8 %s m=%lld n=%lld k=%lld A=%s B=%s C=%s%s%s%s", kernel,
                      std::numeric_limits<A>::min() == 0 ? "u8" : "s8", (long long)m, (long long)n, (long long)k,
                      kLayoutName[la], kLayoutName[lb], kLayoutName[lc], guard ? "+guards" : "",
                      accumulate ? " accumulate" : "", scaled ? " scaled" : "");
        Placed<int32_t> c(m, n, lc, guard, int32_t(0x5a5a5a5a));
        Placed<float> cf(m, n, lc, guard, -12345.0f);
        for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < n; ++j) c.at(i, j) = c0[size_t(i * n + j)];
        try {
            if (scaled) fastgemm::gemm_int8_scaled<A>(a.cview(), b.cview(), scale.data(), 1, cf.view());
            else fastgemm::gemm_int8<A>(a.cview(), b.cview(), accumulate, c.view());
        } catch (const std::exception& e) {
            report(false, std::string(what) + ": threw " + e.what());
            continue;
        }
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
    int idx = 0;
    for (const auto& s : shapes) {
        if (s[0] < 0 || s[1] < 0 || s[2] < 0) continue;
        for (int mode = 0; mode < 3; ++mode, ++idx)
            run_int8_case<A>(ks.name, s[0], s[1], s[2], Layout(idx % kLayouts), Layout((idx / 4) % kLayouts),
                             Layout((idx / 2 + 1) % kLayouts), mode == 1, mode == 2, false);
    }
    for (int lc = 0; lc < kLayouts; ++lc)
        for (int mode = 0; mode < 3; ++mode)
            run_int8_case<A>(ks.name, mr + 1, nr - 1, kc + 3, kRowMajor, kColMajor, Layout(lc), mode == 1, mode == 2,
                             false);
    // Past the int32 range (u8: K > 65793, s8: K > 131071): wraps modulo 2^32, never saturates.
    const int64_t k_wrap = std::numeric_limits<A>::min() == 0 ? 65794 : 131072;
    run_int8_case<A>(ks.name, 2, 3, k_wrap, kRowMajor, kRowMajor, kRowMajor, false, false, true);
}

}  // namespace

int main() {
    // Read once, at the first blocking_for: set before anything computes.
    setenv("FASTGEMM_KC", "99999999999999999999", 1);
    setenv("FASTGEMM_MC", "abc", 1);
    setenv("FASTGEMM_NC", "1000000000000", 1);
    env_overrides();
    // Enough threads that the larger shapes take the parallel path too.
    fastgemm::set_max_threads(2);
    const std::string before = fastgemm::active_kernels().name;
    for (const fastgemm::KernelSet* ks : fastgemm::runnable_kernels()) {
        fastgemm::set_kernels(ks->name);
        report(std::string(fastgemm::active_kernels().name) == ks->name, std::string("set_kernels ") + ks->name);
        const int f0 = failed;
        run_kernel<float>(*ks);
        run_kernel<double>(*ks);
        gemv_tail<float>(*ks);
        gemv_tail<double>(*ks);
        fastgemm::set_max_threads(1);  // flags of worker threads never reach the caller
        padding_flags<float>(*ks);
        padding_flags<double>(*ks);
        fastgemm::set_max_threads(2);
        run_lowp<fastgemm::bfloat16_t>(*ks);
        run_lowp<fastgemm::float16_t>(*ks);
        lowp_narrow(*ks);
        lowp_batched<fastgemm::bfloat16_t>(*ks);
        lowp_batched<fastgemm::float16_t>(*ks);
        run_int8<uint8_t>(*ks);
        run_int8<int8_t>(*ks);
        std::printf("kernel %-8s %s\n", ks->name, failed == f0 ? "ok" : "FAILED");
    }
    fastgemm::set_kernels(before);
    bad_input();
    overlap_rule();
    kernel_lookup_and_threads();
    std::printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
