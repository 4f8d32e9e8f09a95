// Streaming kernels: one row, a few rows or one column of C with the matrix (B, or A for a
// column) streamed once, and a few rows against a pre-packed B's slivers.
// Included only from kernels/*.cpp (through table.hpp). Every template takes a vector-traits
// type V, and each kernel file's V is a distinct type in an anonymous namespace, so
// instantiations compiled with different ISA flags never share a symbol (the linker could
// otherwise keep an AVX-512 copy and hand it to baseline code).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "../caches.hpp"
#include "../kernel.hpp"
#include "lanes.hpp"

namespace fastgemm {
namespace kernels {

// How the streaming kernels read their inputs (L::S the stored type): load(p) W elements as a
// V::reg, one(x) one element as V::T; an L made for the last `rest` < W elements of a row reads
// them by part(p), the other lanes 0, when any(full, k). Each reader keeps its own tail test:
// the code generated for both stayed as it was (objdump, avx2). DirectLoad: stored as V::T;
// lowp.hpp has the widening one.
template <typename V>
struct DirectLoad {
    using S = typename V::T;
    typename V::mask tail;
    explicit DirectLoad(int64_t rest) : tail(V::lanes(int(rest))) {}
    static bool any(int64_t full, int64_t k) { return full < k; }
    static typename V::reg load(const S* p) { return V::loadu(p); }
    static S one(S x) { return x; }
    typename V::reg part(const S* p) const { return V::maskz_loadu(tail, p); }
};

// DirectLoad with each vector from two half-width loads (V::loadu_halves): the same elements in
// the same lanes, so the same sums. gemv_dots reads a matrix whose rows all start 32 bytes past
// a 64-byte line so where rows_line_offset says straddling costs (Intel): each 512-bit load
// there straddles two lines and its halves none. Intel Xeon, A @ v, A 32 bytes past a line,
// float32 256^2 31.5 -> 35.9 GFLOP/s, 512^2 32.9 -> 37.5, float64 256^2 16.3 -> 19.1 (on a line
// 48-63 / 29; NumPy 33-43 / 21, whose 256-bit loads stay within lines there). At 16 or 48 bytes
// past, half the halves straddle: not taken.
template <typename V>
struct HalvesLoad : DirectLoad<V> {
    using DirectLoad<V>::DirectLoad;
    static typename V::reg load(const typename V::T* p) { return V::loadu_halves(p); }
};

template <typename V, typename = void>
constexpr bool has_halves = false;
template <typename V>
constexpr bool has_halves<V, std::void_t<decltype(&V::loadu_halves)>> = true;

// The vector registers V's ISA has: V::kVectorRegs where its traits say (AVX-512: 32), else 16
// (the fewest of any ISA here).
template <typename V, typename = void>
constexpr int vector_regs = 16;
template <typename V>
constexpr int vector_regs<V, std::void_t<decltype(V::kVectorRegs)>> = V::kVectorRegs;

// Rows of B per pass for M rows of C: M x P broadcasts, P row vectors and an accumulator within
// the register file. With 32 registers, 4 for up to 6 rows: each pass loads and stores the
// partial sums once, so 4 rows of B halve that traffic against 2 (x.T @ w with 4 columns, 3000 x
// 4 x 64 on Zen 4: 0.74x -> 1.06x NumPy); 6 or 8 rows spilled (0.4-0.6x). See docs/DESIGN.md,
// "Few rows".
template <int M, int Regs>
constexpr int stream_rows_step = Regs >= 32 && M <= 6 ? 4
                                 : M <= 2             ? 4
                                 : M == 3             ? 3
                                 : M <= 6             ? 2
                                                      : 1;

// One row of C where the ISA has 32 registers: 8 rows of B a pass (17 registers), twice the
// streams in flight and half the partial-sum traffic of 4, for a matrix of kStreamDeepBytes or
// more (float32 1 x 11008 x 4096 on Zen 4: 0.89x -> 1.01x NumPy), or one of
// kStreamDeepCachedBytes or more with k from kStreamDeepMinK (two passes of 8) whose rows are
// not within kStreamDeepAliasBytes of a multiple of 4 KiB apart: 8 such rows share L1's sets
// with each other and the partial sums (float32 1 x 2048 x 1024 1.07x -> 0.97x NumPy, 1 x 1040
// x 1000 0.95x -> 0.92x), where other strides gained 5-20% (1 x 300 x 300 0.97x -> 1.07x). See
// docs/DESIGN.md, "Matrix-vector chunk".
constexpr int64_t kStreamDeepBytes = int64_t(16) << 20;
constexpr int64_t kStreamDeepCachedBytes = 128 * 1024;
constexpr int64_t kStreamDeepMinK = 16;
constexpr int64_t kStreamDeepAliasBytes = 256;
template <int M, int Regs>
constexpr int stream_rows_deep_step = M == 1 && Regs >= 32 ? 8 : stream_rows_step<M, Regs>;
inline bool stream_deep(int64_t k, int64_t row_bytes, int64_t stride_bytes) {
    const int64_t bytes = k * row_bytes, off = stride_bytes % 4096;
    return bytes >= kStreamDeepBytes || (k >= kStreamDeepMinK && bytes >= kStreamDeepCachedBytes &&
                                         off >= kStreamDeepAliasBytes && off <= 4096 - kStreamDeepAliasBytes);
}

// How far ahead stream_rows prefetches B's rows when told B comes from memory: 8 KiB (float32
// 100 x 4 x 64 x.T @ W.T stacks: 20 rows of 400 bytes ahead 0.77x -> 0.85x NumPy, 16 the same).
constexpr int64_t kStreamAheadBytes = 8192;

// The elements that prefetch runs ahead of the rows read, rows ld elements of elem_bytes apart:
// kStreamAheadBytes of rows, at least min_rows (a pass); none for rows not apart.
inline int64_t stream_far(int64_t ld, int64_t elem_bytes, int64_t min_rows) {
    const int64_t row_bytes = ld * elem_bytes;
    return row_bytes > 0 ? ld * std::max<int64_t>(min_rows, kStreamAheadBytes / row_bytes) : 0;
}

// t[i * ld + j] += sum_q A[i, q] B[q, j] for i < M, q < P, j < len: each vector of t loaded and
// stored once per P rows of B. a: A's element (0, 0) of these P columns; r0: B's row 0 of them;
// `tail` reads the last len - full elements of a row; far > 0: each vector of B read is also
// prefetched far elements further on (stream_rows' ahead).
template <typename V, int M, int P, typename L>
void stream_rows_pass(int64_t full, int64_t len, const L& tail, const typename L::S* a, int64_t rsa, int64_t csa,
                      const typename L::S* r0, int64_t rsb, typename V::T* t, int64_t ld, int64_t far) {
    using R = typename V::reg;
    constexpr int W = V::W;
    R x[M][P];
#pragma GCC unroll 8
    for (int i = 0; i < M; ++i)
#pragma GCC unroll 8
        for (int q = 0; q < P; ++q) x[i][q] = V::set1(L::one(a[i * rsa + q * csa]));
    auto step = [&](int64_t j, const R(&bv)[P]) {
#pragma GCC unroll 8
        for (int i = 0; i < M; ++i) {
            R acc = V::loadu(t + i * ld + j);
#pragma GCC unroll 8
            for (int q = 0; q < P; ++q) acc = V::fmadd(x[i][q], bv[q], acc);
            V::storeu(t + i * ld + j, acc);
        }
    };
    for (int64_t j = 0; j < full; j += W) {
        R bv[P];
#pragma GCC unroll 8
        for (int q = 0; q < P; ++q) bv[q] = L::load(r0 + q * rsb + j);
        if (far)
#pragma GCC unroll 8
            for (int q = 0; q < P; ++q) __builtin_prefetch(r0 + q * rsb + far + j, 0, 2);
        step(j, bv);
    }
    if (tail.any(full, len)) {
        R bv[P];
#pragma GCC unroll 8
        for (int q = 0; q < P; ++q) bv[q] = tail.part(r0 + q * rsb + full);
        step(full, bv);
    }
}

// The vectors of a row of C that stream_rows keeps in registers instead of the chunk: M x NV
// sums, NV row vectors and a broadcast within the register file, at most kGemvNarrowVectors.
template <typename V, int M>
constexpr int stream_narrow_nv =
    (vector_regs<V> - 3) / (M + 1) < kGemvNarrowVectors ? (vector_regs<V> - 3) / (M + 1) : kGemvNarrowVectors;

// A row's NV vectors, the last through `last` (the narrow kernels' rows of B or M).
template <typename V, int NV>
[[gnu::always_inline]] inline void load_narrow(const typename V::T* r, typename V::mask last,
                                               typename V::reg (&v)[NV]) {
#pragma GCC unroll 4
    for (int j = 0; j + 1 < NV; ++j) v[j] = V::loadu(r + j * V::W);
    v[NV - 1] = V::maskz_loadu(last, r + (NV - 1) * V::W);
}

// Narrow rows of n elements in registers (the narrow kernels below): f(Tag<X>, nv) with X the
// traits and nv (a std::integral_constant) the vectors of a row, n <= MaxNV vectors of V; a row
// within half a vector in HalfOf<V>'s registers (masked 512-bit loads of 3-8 elements took ~3
// cycles a row on Zen 4).
template <typename X>
struct Tag {
    using type = X;
};
template <typename V, int MaxNV, typename F>
void with_narrow(int64_t n, F f) {
    if constexpr (has_half<V>)
        if (n <= HalfOf<V>::type::W) return f(Tag<typename HalfOf<V>::type>{}, std::integral_constant<int, 1>{});
    with_rows<MaxNV>((n + V::W - 1) / V::W, [&](auto nv) { f(Tag<V>{}, nv); });
}

// NV vectors of a row of C from their sums: alpha * sum, then fma with beta * C (not read for
// beta 0), the last vector through `last`; as stream_rows finishes its rows.
template <typename V, int NV>
[[gnu::always_inline]] inline void finish_narrow(const typename V::reg (&sums)[NV], typename V::T alpha,
                                                 typename V::T beta, typename V::T* c, typename V::mask last) {
    using R = typename V::reg;
    const R va = V::set1(alpha), vb = V::set1(beta);
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) {
        const typename V::mask mk = j + 1 < NV ? V::lanes(V::W) : last;
        R out = V::mul(sums[j], va);
        if (beta != typename V::T(0)) out = V::fmadd(vb, V::maskz_loadu(mk, c + j * V::W), out);
        if (j + 1 < NV) V::storeu(c + j * V::W, out);
        else V::mask_storeu(c + j * V::W, mk, out);
    }
}

// stream_rows for n <= NV vectors: the M x NV sums in registers over all of k, each summed over
// p in order from zero and finished as stream_rows finishes, so the same bits; without the
// chunk's store and load every pass (2-6 columns of x.T @ w over 4-32 rows: C^T's rows
// streamed, every pass a round trip for one or two vectors).
template <typename V, int M, int NV>
void stream_rows_narrow(int64_t n, int64_t k, typename V::T alpha, const typename V::T* a, int64_t rsa, int64_t csa,
                        const typename V::T* b, int64_t rsb, typename V::T beta, typename V::T* c, int64_t rsc) {
    using R = typename V::reg;
    constexpr int W = V::W;
    const typename V::mask last = V::lanes(int(n - (NV - 1) * W));
    R acc[M][NV];
#pragma GCC unroll 8
    for (int i = 0; i < M; ++i)
#pragma GCC unroll 4
        for (int j = 0; j < NV; ++j) acc[i][j] = V::zero();
    for (int64_t p = 0; p < k; ++p) {
        R bv[NV];
        load_narrow<V, NV>(b + p * rsb, last, bv);
        // Held in registers: GCC folded each into every row's FMA, 13 loads a k step for 12
        // FMAs at 3 rows of float64, most across two lines on NumPy's rows (Intel Xeon: 3 x 700
        // x 130 0.88x -> 1.06x NumPy; docs/DESIGN.md, "Few rows").
        if constexpr (M > 1)
#pragma GCC unroll 4
            for (int j = 0; j < NV; ++j) bv[j] = V::held(bv[j]);
#pragma GCC unroll 8
        for (int i = 0; i < M; ++i) {
            const R av = V::set1(a[i * rsa + p * csa]);
#pragma GCC unroll 4
            for (int j = 0; j < NV; ++j) acc[i][j] = V::fmadd(av, bv[j], acc[i][j]);
        }
    }
#pragma GCC unroll 8
    for (int i = 0; i < M; ++i) finish_narrow<V, NV>(acc[i], alpha, beta, c + i * rsc, last);
}

// Whether stream_rows takes rows longer than stream_narrow_nv vectors in registers too, a block
// of columns at a time over all of k (each block rereads A's M x k elements, B is still read
// once): with 32 registers, 2 or more rows and B within the cache (not `ahead`), up to
// kStreamBlocksMaxBytes of B, kStreamBlocksPairMaxBytes for 2 rows (fewer FMAs a broadcast and a
// vector of B). Zen 4, 1 thread, chunk -> blocks in one process, fastgemm / NumPy: 200-item
// stacks float64 50 x 4 x 45 TN 0.92x -> 1.10x, 64 x 2 x 40 0.83x -> 1.02x, float32 100 x 4 x
// 64 TT 0.80x -> 0.95x; float64 3000 x 4 x 64 TN 0.96x -> 1.12x, float32 4000 x 3 x 64 1.48x ->
// 1.76x. 2 rows lost past the bound (float32 2 x 1000 x 200 11%, 2 x 1000 x 300 12%, float64 2 x
// 1000 x 1000 46%), more rows were level at 4-8 MB; with AVX2's 16 registers 4-6 rows (blocks of
// 1-2 vectors) lost 14-35%. See docs/DESIGN.md, "Few rows".
constexpr int64_t kStreamBlocksMaxBytes = int64_t(4) << 20;
constexpr int64_t kStreamBlocksPairMaxBytes = int64_t(512) << 10;
template <typename V, int M>
bool stream_in_blocks(int64_t n, int64_t k, int64_t elem_bytes, bool ahead) {
    const int64_t bound = M == 2 ? kStreamBlocksPairMaxBytes : kStreamBlocksMaxBytes;
    return vector_regs<V> >= 32 && M >= 2 && !ahead && n * k * elem_bytes <= bound;
}

// C[i, j] = alpha * sum_p A[i, p] B[p, j] + beta * C[i, j] for M rows of C, j < n, with B's
// rows contiguous and streamed once, never packed: partial sums of M rows x as much of B's row
// as fits chunk_bytes, in `chunk` (the calling thread's, with room for chunk_row_stride's
// padding), are updated stream_rows_step rows of B at a time. A and B are read through L
// (stored as L::S). Per element the sum runs over p in order, from zero, and finishes as the
// small kernels' (alpha * sum, then fma with beta * C): the same bits as theirs. ahead: B comes
// from memory (the caller's rule), so each pass prefetches its vectors kStreamAheadBytes of rows
// further on, at least a pass: the hardware's prefetch alone left half the bandwidth unused.
template <typename V, int M, typename L = DirectLoad<V>>
void stream_rows(int64_t n, int64_t k, typename V::T alpha, const typename L::S* a, int64_t rsa, int64_t csa,
                 const typename L::S* b, int64_t rsb, typename V::T beta, typename V::T* c, int64_t rsc,
                 typename V::T* chunk, int64_t chunk_bytes, bool ahead) {
    using T = typename V::T;
    constexpr int W = V::W, P = stream_rows_step<M, vector_regs<V>>, PD = stream_rows_deep_step<M, vector_regs<V>>;
    if constexpr (std::is_same_v<L, DirectLoad<V>>) {
        // Rows within NV vectors are one block.
        constexpr int NV = stream_narrow_nv<V, M>;
        if (n <= NV * W || stream_in_blocks<V, M>(n, k, sizeof(T), ahead)) {
            const int64_t vectors = (n + W - 1) / W, blocks = std::max<int64_t>(1, (vectors + NV - 1) / NV);
            const int64_t per = (vectors + blocks - 1) / blocks * W;
            for (int64_t j0 = 0; j0 < n; j0 += per) {
                const int64_t len = n - j0 < per ? n - j0 : per;
                with_narrow<V, NV>(len, [&](auto tag, auto nv) {
                    stream_rows_narrow<typename decltype(tag)::type, M, nv()>(len, k, alpha, a, rsa, csa, b + j0, rsb,
                                                                              beta, c + j0, rsc);
                });
            }
            return;
        }
    }
    constexpr int64_t eb = sizeof(typename L::S);  // bytes of an element of B
    const bool deep = PD != P && stream_deep(k, n * eb, rsb * eb);
    const int64_t far = ahead ? stream_far(rsb, eb, deep ? PD : P) : 0;
    const int64_t tl = chunk_bytes / int64_t(sizeof(T)) / M / W * W;  // partial sums per row of C
    const int64_t ld = chunk_row_stride<M>(tl * int64_t(sizeof(T))) / int64_t(sizeof(T));
    for (int64_t j0 = 0; j0 < n; j0 += tl) {
        const int64_t len = n - j0 < tl ? n - j0 : tl;
        const int64_t full = len / W * W;
        const L tail(len - full);
        // The tail vector's lanes past len are summed too (0 * zeros read for them): start them at 0.
        for (int i = 0; i < M; ++i)
            for (int64_t j = 0, padded = full < len ? full + W : full; j < padded; ++j) chunk[i * ld + j] = T(0);
        const typename L::S* b0 = b + j0;
        int64_t p = 0;
        if constexpr (PD != P)
            if (deep)
                for (; p + PD <= k; p += PD)
                    stream_rows_pass<V, M, PD>(full, len, tail, a + p * csa, rsa, csa, b0 + p * rsb, rsb, chunk, ld,
                                               far);
        for (; p + P <= k; p += P)
            stream_rows_pass<V, M, P>(full, len, tail, a + p * csa, rsa, csa, b0 + p * rsb, rsb, chunk, ld, far);
        for (; p < k; ++p)
            stream_rows_pass<V, M, 1>(full, len, tail, a + p * csa, rsa, csa, b0 + p * rsb, rsb, chunk, ld, far);
        for (int i = 0; i < M; ++i) {
            T* ci = c + i * rsc + j0;
            const T* ti = chunk + i * ld;
            for (int64_t j = 0; j < len; ++j)
                ci[j] = beta == T(0) ? alpha * ti[j] : std::fma(beta, ci[j], alpha * ti[j]);
        }
    }
}

// One row p of M into chain u of gemv_rows_narrow's sums.
template <typename V, int NV, int U>
[[gnu::always_inline]] inline void gemv_narrow_step(typename V::reg (&acc)[U][NV], int u, const typename V::T* x,
                                                    const typename V::T* r, typename V::mask last) {
    const typename V::reg xv = V::set1(*x);
    typename V::reg mv[NV];
    load_narrow<V, NV>(r, last, mv);
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) acc[u][j] = V::fmadd(xv, mv[j], acc[u][j]);
}

// y = alpha * sum_p x[p] M[p, :] + beta * y for n <= NV vectors (NV <= kGemvNarrowVectors):
// the sums stay in registers over all of k, in U chains over p (p mod U) added pairwise at the
// end. stream_rows' chunk would cost a store-to-load round trip a pass and one chain an element
// waits on the FMA's latency every k step (X.T @ y with X 50000 x 3, float64: 0.25x NumPy).
template <typename V, int NV>
void gemv_rows_narrow(int64_t n, int64_t k, typename V::T alpha, const typename V::T* x, int64_t incx,
                      const typename V::T* mat, int64_t ldm, typename V::T beta, typename V::T* y) {
    using R = typename V::reg;
    constexpr int W = V::W, U = NV == 1 ? 8 : NV == 2 ? 4 : 2;
    const typename V::mask last = V::lanes(int(n - (NV - 1) * W));
    R acc[U][NV];
#pragma GCC unroll 8
    for (int u = 0; u < U; ++u)
#pragma GCC unroll 4
        for (int j = 0; j < NV; ++j) acc[u][j] = V::zero();
    int64_t p = 0;
    for (; p + U <= k; p += U)
#pragma GCC unroll 8
        for (int u = 0; u < U; ++u) gemv_narrow_step<V, NV, U>(acc, u, x + (p + u) * incx, mat + (p + u) * ldm, last);
    // The last k % U steps into chain 0.
    for (; p < k; ++p) gemv_narrow_step<V, NV, U>(acc, 0, x + p * incx, mat + p * ldm, last);
    // Chains added pairwise: (0 + 1) + (2 + 3), ... (written out: in a lambda, GCC kept every
    // chain in memory, a store each step).
#pragma GCC unroll 8
    for (int u = 0; u < U; u += 2)
#pragma GCC unroll 4
        for (int j = 0; j < NV; ++j) acc[u][j] = V::add(acc[u][j], acc[u + 1][j]);
    if constexpr (U > 2)
#pragma GCC unroll 8
        for (int u = 0; u < U; u += 4)
#pragma GCC unroll 4
            for (int j = 0; j < NV; ++j) acc[u][j] = V::add(acc[u][j], acc[u + 2][j]);
    if constexpr (U > 4)
#pragma GCC unroll 4
        for (int j = 0; j < NV; ++j) acc[0][j] = V::add(acc[0][j], acc[4][j]);
    finish_narrow<V, NV>(acc[0], alpha, beta, y, last);
}

// y += sum_p x[p] M[p, :]: stream_rows for one row, in the matrix-vector chunk; without a chunk
// (n within kGemvNarrowVectors vectors) in registers.
template <typename V>
void gemv_rows(int64_t n, int64_t k, typename V::T alpha, const typename V::T* x, int64_t incx,
               const typename V::T* mat, int64_t ldm, typename V::T beta, typename V::T* y, typename V::T* chunk,
               bool ahead) {
    if (!chunk)
        return with_narrow<V, kGemvNarrowVectors>(n, [&](auto tag, auto nv) {
            gemv_rows_narrow<typename decltype(tag)::type, nv()>(n, k, alpha, x, incx, mat, ldm, beta, y);
        });
    stream_rows<V, 1>(n, k, alpha, x, 0, incx, mat, ldm, beta, y, 0, chunk, kGemvChunkBytes, ahead);
}

// stream_rows for 1 <= m <= kFewRowsMaxM rows of C, kFewRowsChunkBytes of partial sums in a
// buffer of kFewRowsBufferBytes.
template <typename V, typename L = DirectLoad<V>>
void few_rows(int64_t m, int64_t n, int64_t k, typename V::T alpha, const typename L::S* a, int64_t rsa, int64_t csa,
              const typename L::S* b, int64_t rsb, typename V::T beta, typename V::T* c, int64_t rsc,
              typename V::T* chunk, bool ahead) {
    with_rows<kFewRowsMaxM>(m, [&](auto rows) {
        stream_rows<V, rows(), L>(n, k, alpha, a, rsa, csa, b, rsb, beta, c, rsc, chunk, kFewRowsChunkBytes, ahead);
    });
}

// Dots of k <= lane_picks_max_k over rows stored back to back (ldm == k): W outputs a step
// from the k vectors their rows fill, each output summing x[p] * M[j, p] over p in order in its
// lane (LanePicks, lanes.hpp). The four-row form spends most of a short dot adding up its lanes
// (float32 3000 x 1 x 3 on Zen 4: 0.31x NumPy). Below W, and k = W / 2 goes to tree_dots
// (gemv_dots asks it first). Returns false where it does not apply.
template <typename V>
constexpr int short_dots_picks_k = lane_picks_max_k<V> < V::W ? lane_picks_max_k<V> : V::W - 1;
template <typename V>
constexpr int short_dots_max_k =
    short_dots_picks_k<V> - (short_dots_picks_k<V> > 0 && short_dots_picks_k<V> == V::W / 2);

// y[l * incy] = out[l] + beta * y[l * incy] (vb: beta in every lane) for the first `rows` lanes.
template <typename V>
void put_outputs(int64_t rows, typename V::reg out, typename V::T beta, typename V::reg vb, typename V::T* y,
                 int64_t incy) {
    using T = typename V::T;
    constexpr int W = V::W;
    if (incy == 1) {
        const typename V::mask mk = V::lanes(int(rows));
        if (beta != T(0)) out = V::fmadd(vb, V::maskz_loadu(mk, y), out);
        V::mask_storeu(y, mk, out);
    } else {
        T lanes[W], old[W] = {};
        if (beta != T(0))
            for (int64_t l = 0; l < rows; ++l) old[l] = y[l * incy];
        V::storeu(lanes, beta != T(0) ? V::fmadd(vb, V::loadu(old), out) : out);
        for (int64_t l = 0; l < rows; ++l) y[l * incy] = lanes[l];
    }
}

// f(v, rows, j) for each W rows j, j + 1, ... (the last n - j of them fewer) of K elements stored
// back to back from mat: v the K vectors they fill, read through L, and a zero one.
template <typename V, typename L, int K, typename F>
void row_groups(int64_t n, const typename L::S* mat, F f) {
    constexpr int W = V::W;
    for (int64_t j = 0; j < n; j += W) {
        const int64_t rows = n - j < W ? n - j : W;
        const typename L::S* r = mat + j * K;
        typename V::reg v[K + 1];
        load_groups<V, K>(
            rows, v, [&](int q) { return L::load(r + q * W); },
            [&](int q, int64_t count) { return L(count).part(r + q * W); });
        f(v, rows, j);
    }
}

// short_dots for k = K fixed at compile time (the registers and lane picks indexed by constants).
template <typename V, typename L, int K>
void short_dots_k(int64_t n, typename V::T alpha, const typename L::S* x, const typename L::S* mat, typename V::T beta,
                  typename V::T* y, int64_t incy) {
    using R = typename V::reg;
    R xs[K];
#pragma GCC unroll 8
    for (int p = 0; p < K; ++p) xs[p] = V::set1(L::one(x[p]));
    const R va = V::set1(alpha), vb = V::set1(beta);
    with_lane_picks<V, K>([&](const LanePicks<V, K>& picks) {
        row_groups<V, L, K>(n, mat, [&](R* v, int64_t rows, int64_t j) {
            R acc = V::zero();
#pragma GCC unroll 8
            for (int p = 0; p < K; ++p)
                acc = p == 0 ? V::mul(xs[0], picks.pick(v, 0)) : V::fmadd(xs[p], picks.pick(v, p), acc);
            put_outputs<V>(rows, V::mul(acc, va), beta, vb, y + j * incy, incy);
        });
    });
}

template <typename V, typename L>
bool short_dots(int64_t n, int64_t k, typename V::T alpha, const typename L::S* x, const typename L::S* mat,
                int64_t ldm, typename V::T beta, typename V::T* y, int64_t incy) {
    if constexpr (short_dots_max_k<V> == 0) {
        return false;
    } else {
        if (k > short_dots_max_k<V> || ldm != k) return false;
        with_rows<short_dots_max_k<V>>(k, [&](auto kc) { short_dots_k<V, L, kc()>(n, alpha, x, mat, beta, y, incy); });
        return true;
    }
}

// Dots of k = W / 2 or W, at most kTreeDotsMaxK, over rows stored back to back (float32 k = 8,
// float64 k = 4 or 8): W outputs a step, the products of W rows added up across registers in
// V::reduce's own tree (HalvingPicks, lanes.hpp), so each output sums as in the four-row form,
// which spends ~8 shuffles and adds a dot on V::reduce, where short_dots' lane picks take k / 2
// permutes and blends a product. On Zen 4, against those: float32 3000 x 1 x 8 2.0x (0.72x ->
// 1.45x NumPy), float64 3000 x 1 x 8 1.23x, x 4 1.1x; float32 k = 16 (15 pairs of permutes for
// 16 dots) 0.89-1.05x, so it stays with the four-row form. Returns false where it does not apply.
constexpr int kTreeDotsMaxK = 8;
template <typename V, typename L, int K>
void tree_dots_k(int64_t n, typename V::T alpha, const typename L::S* x, const typename L::S* mat, typename V::T beta,
                 typename V::T* y, int64_t incy) {
    using R = typename V::reg;
    constexpr int W = V::W;
    const HalvingPicks<V, K> picks;
    R xs;  // x's K elements in every group of K lanes
    if constexpr (K == W) xs = L::load(x);
    else xs = picks.repeat(L(K).part(x));
    const R va = V::set1(alpha), vb = V::set1(beta);
    row_groups<V, L, K>(n, mat, [&](R* v, int64_t rows, int64_t j) {
#pragma GCC unroll 16
        for (int q = 0; q < K; ++q) v[q] = V::fmadd(v[q], xs, V::zero());
        R out = picks.sum(v);
        // The four-row form's first level adds K < W products to the zero lanes past them,
        // which turns a -0 product into +0: the same once at the end.
        if constexpr (K < W) out = V::add(V::zero(), out);
        put_outputs<V>(rows, V::mul(out, va), beta, vb, y + j * incy, incy);
    });
}

template <typename V, typename L>
bool tree_dots(int64_t n, int64_t k, typename V::T alpha, const typename L::S* x, const typename L::S* mat, int64_t ldm,
               typename V::T beta, typename V::T* y, int64_t incy) {
    constexpr int W = V::W;
    if constexpr (lane_picks_max_k<V> == 0) {
        return false;
    } else {
        if (ldm != k || (k != W && 2 * k != W) || k > kTreeDotsMaxK) return false;
        if constexpr (W <= kTreeDotsMaxK) {
            if (k == W) {
                tree_dots_k<V, L, W>(n, alpha, x, mat, beta, y, incy);
                return true;
            }
        }
        tree_dots_k<V, L, W / 2>(n, alpha, x, mat, beta, y, incy);
        return true;
    }
}

// y[j] = dot(x, M[j, :]) for four rows of M at a time (x loaded once per four dots); each dot
// keeps W partial sums and adds them up at the end in V::reduce's tree, as dots_block does (in
// lane order, W - 1 dependent adds, a dot of k <= W took 16 cycles on Zen 4).
template <typename V, typename L = DirectLoad<V>>
void gemv_dots(int64_t n, int64_t k, typename V::T alpha, const typename L::S* x, const typename L::S* mat, int64_t ldm,
               typename V::T beta, typename V::T* y, int64_t incy) {
    using T = typename V::T;
    using R = typename V::reg;
    using S = typename L::S;
    constexpr int W = V::W;
    if constexpr (std::is_same_v<L, DirectLoad<V>> && has_halves<V>)
        if (rows_line_offset(mat, ldm * int64_t(sizeof(S))) == 32)
            return gemv_dots<V, HalvesLoad<V>>(n, k, alpha, x, mat, ldm, beta, y, incy);
    if (tree_dots<V, L>(n, k, alpha, x, mat, ldm, beta, y, incy) ||
        short_dots<V, L>(n, k, alpha, x, mat, ldm, beta, y, incy))
        return;
    const int64_t full = k / W * W;
    const L tail(k - full);
    auto finish = [&](R acc, int64_t j) {
        const T sum = V::reduce(acc);
        T& yj = y[j * incy];
        yj = beta == T(0) ? alpha * sum : std::fma(beta, yj, alpha * sum);  // as put_outputs, V::fmadd's order
    };
    int64_t j = 0;
    for (; j + 4 <= n; j += 4) {
        const S *r0 = mat + j * ldm, *r1 = r0 + ldm, *r2 = r1 + ldm, *r3 = r2 + ldm;
        R a0 = V::zero(), a1 = V::zero(), a2 = V::zero(), a3 = V::zero();
        for (int64_t p = 0; p < full; p += W) {
            const R xv = L::load(x + p);
            a0 = V::fmadd(L::load(r0 + p), xv, a0);
            a1 = V::fmadd(L::load(r1 + p), xv, a1);
            a2 = V::fmadd(L::load(r2 + p), xv, a2);
            a3 = V::fmadd(L::load(r3 + p), xv, a3);
        }
        if (tail.any(full, k)) {
            const R xv = tail.part(x + full);
            a0 = V::fmadd(tail.part(r0 + full), xv, a0);
            a1 = V::fmadd(tail.part(r1 + full), xv, a1);
            a2 = V::fmadd(tail.part(r2 + full), xv, a2);
            a3 = V::fmadd(tail.part(r3 + full), xv, a3);
        }
        finish(a0, j);
        finish(a1, j + 1);
        finish(a2, j + 2);
        finish(a3, j + 3);
    }
    for (; j < n; ++j) {
        const S* r = mat + j * ldm;
        R acc = V::zero();
        for (int64_t p = 0; p < full; p += W) acc = V::fmadd(L::load(r + p), L::load(x + p), acc);
        if (tail.any(full, k)) acc = V::fmadd(tail.part(r + full), tail.part(x + full), acc);
        finish(acc, j);
    }
}

// Whether V sums W registers at once in V::reduce's tree (V::reduce_w: lane l the sum of
// v[V::kTreeOrder[l]]).
template <typename V, typename = void>
constexpr bool has_reduce_w = false;
template <typename V>
constexpr bool has_reduce_w<V, std::void_t<decltype(V::reduce_w)>> = true;

// MR x NR dot products C[i, j] = alpha * dot(A[i, :], B[j, :]) + beta * C[i, j], A's and B's
// rows contiguous along k: MR + NR loads, each held in a register (V::held), feed MR x NR FMAs;
// each dot keeps W partial sums and adds them up at the end in V::reduce's tree, the same order
// for every output: W dots at once (V::reduce_w) where the ISA has it and the block has at least
// W / 2 dots, else one at a time. Reduced W at a time, the block's rows (C's columns where rsc
// is 1) go in order into the lanes, so each row of C leaves in one store where csc is 1 and a
// row fits a register whole (16 scalar stores took a quarter of float32 12 x 12 x 64 q @ k.T):
// with beta 0 a plain store of the register's 128- or 256-bit part where the row is one
// (V::store_part), else a masked one.
template <typename V, int MR, int NR>
void dots_block(int64_t k, typename V::T alpha, const typename V::T* a, int64_t lda, const typename V::T* b,
                int64_t ldb, typename V::T beta, typename V::T* c, int64_t rsc, int64_t csc) {
    using T = typename V::T;
    using R = typename V::reg;
    constexpr int W = V::W, N = MR * NR;
    const int64_t full = k / W * W;
    const DirectLoad<V> tail(k - full);
    R acc[N];
#pragma GCC unroll 16
    for (int q = 0; q < N; ++q) acc[q] = V::zero();
    auto step = [&](auto load, int64_t p) {
        R av[MR];
#pragma GCC unroll 4
        for (int i = 0; i < MR; ++i) av[i] = V::held(load(a + i * lda + p));
#pragma GCC unroll 8
        for (int j = 0; j < NR; ++j) {
            const R bv = V::held(load(b + j * ldb + p));
#pragma GCC unroll 4
            for (int i = 0; i < MR; ++i) acc[i * NR + j] = V::fmadd(av[i], bv, acc[i * NR + j]);
        }
    };
    for (int64_t p = 0; p < full; p += W) step([](const T* q) { return V::loadu(q); }, p);
    if (tail.any(full, k)) step([&](const T* q) { return tail.part(q); }, full);
    auto put = [&](int q, T scaled) {  // scaled: alpha * the dot of acc[q]
        T& cij = c[q / NR * rsc + q % NR * csc];
        cij = beta == T(0) ? scaled : std::fma(beta, cij, scaled);
    };
    if constexpr (has_reduce_w<V> && 2 * N >= W) {
        constexpr int G = (N + W - 1) / W;
        R sums[G];  // lane l of sums[g]: alpha * the dot of acc[at(g W + l)] (zero past N)
        auto reduce_all = [&](auto at) {
#pragma GCC unroll 2
            for (int g = 0; g < G; ++g) {
                R v[W];  // placed where the tree leaves each input's sum in its lane
#pragma GCC unroll 16
                for (int l = 0; l < W; ++l) v[V::kTreeOrder[l]] = g * W + l < N ? acc[at(g * W + l)] : V::zero();
                sums[g] = V::mul(V::reduce_w(v), V::set1(alpha));
            }
        };
        // L lines of E outputs contiguous in C, ld apart from `first`, output x of line e at
        // acc[at(e E + x)]: each line one store (E divides W: no line spans two registers).
        auto lines = [&](auto len, auto count, auto at, T* first, int64_t ld) {
            constexpr int E = decltype(len)::value, L = decltype(count)::value;
            reduce_all(at);
            const R vb = V::set1(beta);
#pragma GCC unroll 16
            for (int e = 0; e < L; ++e) {
                const int s = e * E % W;  // the line's first lane; lanes out of the mask are never touched
                R r = sums[e * E / W];
                if constexpr (E * sizeof(T) == 16 || E * sizeof(T) == 32)
                    if (beta == T(0)) {
                        V::template store_part<E>(first + e * ld, r, s);
                        continue;
                    }
                const typename V::mask mk = typename V::mask(V::lanes(s + E) ^ V::lanes(s));
                T* p = first + e * ld - s;
                if (beta != T(0)) r = V::fmadd(vb, V::maskz_loadu(mk, p), r);
                V::mask_storeu(p, mk, r);
            }
        };
        if constexpr (W % NR == 0)
            if (csc == 1)
                return lines(
                    std::integral_constant<int, NR>{}, std::integral_constant<int, MR>{}, [](int q) { return q; }, c,
                    rsc);
        if constexpr (W % MR == 0)
            if (rsc == 1)
                return lines(
                    std::integral_constant<int, MR>{}, std::integral_constant<int, NR>{},
                    [](int l) { return l % MR * NR + l / MR; }, c, csc);
        reduce_all([](int q) { return q; });
        alignas(64) T out[G * W];
#pragma GCC unroll 2
        for (int g = 0; g < G; ++g) V::storeu(out + g * W, sums[g]);
#pragma GCC unroll 32
        for (int q = 0; q < N; ++q) put(q, out[q]);
    } else {
#pragma GCC unroll 16
        for (int q = 0; q < N; ++q) put(q, alpha * V::reduce(acc[q]));
    }
}

// Whether dots calls each block out of line: V::kDotsBlockApart where the ISA file measured it
// (inlined into dots, GCC kept an accumulator of AVX-512's float64 4 x 4 block on the stack, a
// load and a store every k step), else false (float32's blocks lost 3-7% to the calls).
template <typename V, typename = void>
constexpr bool dots_block_apart = false;
template <typename V>
constexpr bool dots_block_apart<V, std::void_t<decltype(V::kDotsBlockApart)>> = V::kDotsBlockApart;

template <typename V, int MR, int NR>
[[gnu::noinline]] void dots_block_call(int64_t k, typename V::T alpha, const typename V::T* a, int64_t lda,
                                       const typename V::T* b, int64_t ldb, typename V::T beta, typename V::T* c,
                                       int64_t rsc, int64_t csc) {
    dots_block<V, MR, NR>(k, alpha, a, lda, b, ldb, beta, c, rsc, csc);
}

// Rows of B a dots block takes for MR rows of A: 4, but 5 for 3 rows with 32 registers (15
// accumulators) and 3 for 4 rows with 16 (12). One or two rows of A stream B from L2 at about a
// line a multiply-add whatever the block: 2 x 8 ran 0.85x 2 x 4 (float32 2 x 1000 x 100 NT).
template <typename V, int MR>
constexpr int dots_nr = MR == 3 && vector_regs<V> >= 32  ? 5
                        : MR == 4 && vector_regs<V> < 32 ? 3
                                                         : 4;

// Rows of A the next dots block takes when `left` are left: 4 (3 with 16 registers), but never a
// last block of one row where two blocks can share them (5: 3 + 2; 4 with 16 registers: one
// block of 4 by 3, one pass over B instead of a 3-row and a 1-row one).
template <typename V>
int64_t dots_rows(int64_t left) {
    if (vector_regs<V> >= 32) return left == 5 ? 3 : std::min<int64_t>(4, left);
    return left == 4 ? 4 : std::min<int64_t>(3, left);
}

// Whether dots of 4 short rows run in HalfOf<V>'s registers over V::kDotsHalfMinK to
// V::kDotsHalfMaxK k steps: where the ISA file measured it.
template <typename V, typename = void>
constexpr bool dots_in_half = false;
template <typename V>
constexpr bool dots_in_half<V, std::void_t<decltype(V::kDotsHalfMaxK)>> = true;

// Where A's m rows (the short side) fit in kDotsStripMaxBytes and B's rows (the long side) pass
// kDotsStripMinLongBytes, dots takes B 4 rows at a time outer and A's row groups inner: A stays
// in L1 and each row of B is read from L2 or memory once, not once per row group (Zen 4, x @ W.T
// stacks on the dots: float32 100 x (8 x 1000 x 64) 0.92 of the time, float64 100 x (6 x 400 x
// 80) 0.89; forced to them, float32 50 x (16 x 500 x 128) 0.67, float64 100 x (16 x 200 x 64) 0.80;
// with B within L1 nothing past the noise either way). Only with 32 registers: a strip's 4 x 4
// blocks would spill 16.
constexpr int64_t kDotsStripMaxBytes = 8 * 1024, kDotsStripMinLongBytes = 32 * 1024;

// C = alpha * A B^T + beta * C for m x n outputs (any strides of C), A's rows and B's rows
// contiguous along k (x @ W.T), in dots_rows x dots_nr blocks (in the half-width registers
// where dots_in_half says so), by A's row groups or by strips of B (above). Each output is its
// block's dot whatever the block, so either order gives the same bits.
template <typename V>
void dots(int64_t m, int64_t n, int64_t k, typename V::T alpha, const typename V::T* a, int64_t lda,
          const typename V::T* b, int64_t ldb, typename V::T beta, typename V::T* c, int64_t rsc, int64_t csc) {
    if constexpr (dots_in_half<V>)
        if (m == 4 && k >= V::kDotsHalfMinK && k <= V::kDotsHalfMaxK)
            return dots<typename HalfOf<V>::type>(m, n, k, alpha, a, lda, b, ldb, beta, c, rsc, csc);
    auto block = [&](auto mr, auto nr, int64_t i, int64_t j) {
        constexpr auto f = dots_block_apart<V> ? &dots_block_call<V, mr(), nr()> : &dots_block<V, mr(), nr()>;
        f(k, alpha, a + i * lda, lda, b + j * ldb, ldb, beta, c + i * rsc + j * csc, rsc, csc);
    };
    auto row_groups = [&](auto f) {  // f(mr, i) for each group of A's rows
        for (int64_t i = 0; i < m;) {
            const int64_t rows = dots_rows<V>(m - i);
            with_rows<4>(rows, [&](auto mr) { f(mr, i); });
            i += rows;
        }
    };
    const int64_t es = sizeof(typename V::T);
    if constexpr (vector_regs<V> >= 32)
        if (m > 4 && m * k * es <= kDotsStripMaxBytes && n * k * es >= kDotsStripMinLongBytes) {
            for (int64_t j = 0; j < n; j += 4)
                with_rows<4>(std::min<int64_t>(4, n - j),
                             [&](auto nr) { row_groups([&](auto mr, int64_t i) { block(mr, nr, i, j); }); });
            return;
        }
    row_groups([&](auto mr, int64_t i) {
        constexpr int NR = dots_nr<V, mr()>;
        for (int64_t j = 0; j < n; j += NR) with_rows<NR>(n - j, [&](auto nr) { block(mr, nr, i, j); });
    });
}

// Slivers packed_rows takes at a time for M rows: M x G x NV accumulators (at most 12 on
// every tile here), G streams of B.
template <int M>
constexpr int packed_rows_group = M == 1   ? 4
                                  : M == 2 ? 3
                                           : 2;

// C[i, 0:n] = alpha * sum_p A[i, p] B[p, 0:n] + beta * C[i, 0:n] for M rows over B packed as
// pack_b writes it (ceil(n / NR) slivers of k x NR, NR = NV vectors, the last zero-padded),
// G slivers at a time: G streams and M x G x NV independent sums (one sliver alone is NV
// dependent chains). Per element the sum runs over p in order and is finished as the tile
// finishes it (alpha * sum, then + beta * C), so a row computed here equals the same row
// computed by the tile.
template <typename V, int NV, int M>
void packed_rows(int64_t n, int64_t k, typename V::T alpha, const typename V::T* a, int64_t rsa, int64_t csa,
                 const typename V::T* bp, typename V::T beta, typename V::T* c, int64_t rsc) {
    using T = typename V::T;
    using R = typename V::reg;
    constexpr int W = V::W, NR = NV * W, G = packed_rows_group<M>;
    const R va = V::set1(alpha), vb = V::set1(beta);
    const bool read_c = beta != T(0);
    auto finish = [&](R acc, T* cj, int64_t cols) {
        R r = V::mul(acc, va);
        if (cols >= W) {
            if (read_c) r = V::fmadd(vb, V::loadu(cj), r);
            V::storeu(cj, r);
        } else {
            const typename V::mask mk = V::lanes(int(cols));
            if (read_c) r = V::fmadd(vb, V::maskz_loadu(mk, cj), r);
            V::mask_storeu(cj, mk, r);
        }
    };
    int64_t j0 = 0;
    for (; j0 + G * NR <= n; j0 += G * NR, bp += G * NR * k) {
        R acc[M][G][NV];
#pragma GCC unroll 4
        for (int i = 0; i < M; ++i)
#pragma GCC unroll 8
            for (int g = 0; g < G; ++g)
#pragma GCC unroll 8
                for (int v = 0; v < NV; ++v) acc[i][g][v] = V::zero();
        for (int64_t p = 0; p < k; ++p) {
            R x[M];
#pragma GCC unroll 4
            for (int i = 0; i < M; ++i) x[i] = V::set1(a[i * rsa + p * csa]);
#pragma GCC unroll 8
            for (int g = 0; g < G; ++g)
#pragma GCC unroll 8
                for (int v = 0; v < NV; ++v) {
                    const R bv = V::loadu(bp + (g * k + p) * NR + v * W);
#pragma GCC unroll 4
                    for (int i = 0; i < M; ++i) acc[i][g][v] = V::fmadd(x[i], bv, acc[i][g][v]);
                }
        }
#pragma GCC unroll 4
        for (int i = 0; i < M; ++i)
#pragma GCC unroll 8
            for (int g = 0; g < G; ++g)
#pragma GCC unroll 8
                for (int v = 0; v < NV; ++v) finish(acc[i][g][v], c + i * rsc + j0 + g * NR + v * W, W);
    }
    for (; j0 < n; j0 += NR, bp += NR * k) {
        R acc[M][NV];
#pragma GCC unroll 4
        for (int i = 0; i < M; ++i)
#pragma GCC unroll 8
            for (int v = 0; v < NV; ++v) acc[i][v] = V::zero();
        for (int64_t p = 0; p < k; ++p)
#pragma GCC unroll 8
            for (int v = 0; v < NV; ++v) {
                const R bv = V::loadu(bp + p * NR + v * W);
#pragma GCC unroll 4
                for (int i = 0; i < M; ++i) acc[i][v] = V::fmadd(V::set1(a[i * rsa + p * csa]), bv, acc[i][v]);
            }
#pragma GCC unroll 4
        for (int i = 0; i < M; ++i)
            for (int v = 0; v < NV && j0 + v * W < n; ++v) finish(acc[i][v], c + i * rsc + j0 + v * W, n - j0 - v * W);
    }
}

// packed_rows for 1 <= m <= kPackedRowsMaxM rows.
template <typename V, int NV>
void gemv_packed(int64_t m, int64_t n, int64_t k, typename V::T alpha, const typename V::T* a, int64_t rsa, int64_t csa,
                 const typename V::T* bp, typename V::T beta, typename V::T* c, int64_t rsc) {
    with_rows<kPackedRowsMaxM>(
        m, [&](auto rows) { packed_rows<V, NV, rows()>(n, k, alpha, a, rsa, csa, bp, beta, c, rsc); });
}

}  // namespace kernels
}  // namespace fastgemm
