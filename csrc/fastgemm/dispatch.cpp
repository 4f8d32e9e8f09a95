#include "dispatch.hpp"

#include <atomic>
#include <stdexcept>

#include "cpu.hpp"

namespace fastgemm {
namespace {

bool can_run(const KernelSet& ks) {
    const CpuFeatures& f = cpu_features();
#if defined(__x86_64__) || defined(_M_X64)
    if (&ks == &avx512_kernels) return f.avx512;
    if (&ks == &avx2_kernels) return f.avx2;
#elif defined(__aarch64__)
    if (&ks == &neon_kernels) return f.neon;
#endif
    (void)f;
    return &ks == &generic_kernels;
}

std::atomic<const KernelSet*>& active_slot() {
    static std::atomic<const KernelSet*> slot{runnable_kernels().front()};
    return slot;
}

}  // namespace

const std::vector<const KernelSet*>& compiled_kernels() {
    static const std::vector<const KernelSet*> all{
#if defined(__x86_64__) || defined(_M_X64)
        &avx512_kernels, &avx2_kernels,
#elif defined(__aarch64__)
        &neon_kernels,
#endif
        &generic_kernels};
    return all;
}

std::vector<const KernelSet*> runnable_kernels() {
    std::vector<const KernelSet*> out;
    for (const KernelSet* ks : compiled_kernels())
        if (can_run(*ks)) out.push_back(ks);
    return out;
}

const KernelSet& active_kernels() { return *active_slot().load(std::memory_order_acquire); }

void set_kernels(const std::string& name) {
    for (const KernelSet* ks : compiled_kernels()) {
        if (name != ks->name) continue;
        if (!can_run(*ks))
            throw std::runtime_error("kernel '" + name + "' (" + ks->isa +
                                     ") cannot run on this CPU/OS");
        active_slot().store(ks, std::memory_order_release);
        return;
    }
    std::string known;
    for (const KernelSet* ks : compiled_kernels()) known += std::string(known.empty() ? "" : ", ") + ks->name;
    throw std::invalid_argument("unknown kernel '" + name + "'; this build has: " + known);
}

}  // namespace fastgemm
