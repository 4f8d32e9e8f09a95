// The contract between the driver (baseline ISA) and one kernel file (its own ISA flags).
#pragma once

#include <cstdint>

namespace fastgemm {

template <typename T>
struct Microkernel {
    int mr;
    int nr;
    // C[0:m, 0:n] = alpha * Ap @ Bp + beta * C, with Ap an MR-row sliver and Bp an NR-column
    // sliver of depth k, C row-major with row stride ldc. m <= MR, n <= NR: the rest of the
    // tile is masked, never read or written. beta == 0: C is not read.
    void (*ukernel)(int64_t k, T alpha, const T* ap, const T* bp, T beta, T* c, int64_t ldc,
                    int m, int n);
    // Copy an mc x kc block of A into ceil(mc/MR) slivers of MR x kc (column of the sliver
    // contiguous), zero-padding the last one.
    void (*pack_a)(int64_t mc, int64_t kc, const T* a, int64_t rsa, int64_t csa, T* ap);
    // Copy a kc x nc block of B into ceil(nc/NR) slivers of kc x NR (row contiguous),
    // zero-padding the last one. Slivers [s0, s1) only, so threads can share the work.
    void (*pack_b)(int64_t kc, int64_t nc, const T* b, int64_t rsb, int64_t csb, T* bp,
                   int64_t s0, int64_t s1);
    // `reps` rounds of independent vector FMAs; returns the flops done. Timed by the caller
    // to measure one core's FMA ceiling for this ISA and type.
    double (*fma_loop)(int64_t reps);
};

struct KernelSet {
    const char* name;  // what FASTGEMM_KERNEL / set_kernel accept
    const char* isa;   // human-readable instruction set
    Microkernel<float> f32;
    Microkernel<double> f64;
};

// One per kernel file; which ones exist depends on the target architecture. Constant-initialised
// data, so nothing in a kernel file runs before dispatch has checked the CPU can execute it.
extern const KernelSet generic_kernels;
#if defined(__x86_64__) || defined(_M_X64)
extern const KernelSet avx2_kernels;
extern const KernelSet avx512_kernels;
#elif defined(__aarch64__)
extern const KernelSet neon_kernels;
#endif

}  // namespace fastgemm
