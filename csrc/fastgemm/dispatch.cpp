#include "dispatch.hpp"

#include <atomic>
#include <stdexcept>

#include "cpu.hpp"

namespace fastgemm {
namespace {

std::atomic<const KernelSet*>& active_slot() {
    static std::atomic<const KernelSet*> slot{runnable_kernels().front()};
    return slot;
}

}  // namespace

const std::vector<const KernelSet*>& compiled_kernels() {
    static const std::vector<const KernelSet*> all{
#if defined(__x86_64__) || defined(_M_X64)
        &avx512bf16_kernels, &avx512_kernels, &avx2_kernels,
#elif defined(__aarch64__)
        &neon_kernels,
#endif
        &generic_kernels};
    return all;
}

std::vector<const KernelSet*> runnable_kernels() {
    std::vector<const KernelSet*> out;
    for (const KernelSet* ks : compiled_kernels())
        if (ks->can_run(cpu_features())) out.push_back(ks);
    return out;
}

const KernelSet& find_kernels(const std::string& name, bool must_run) {
    for (const KernelSet* ks : compiled_kernels()) {
        if (name != ks->name) continue;
        if (must_run && !ks->can_run(cpu_features()))
            throw std::runtime_error("kernel '" + name + "' (" + ks->isa + ") cannot run on this CPU/OS");
        return *ks;
    }
    std::string known;
    for (const KernelSet* ks : compiled_kernels()) known += std::string(known.empty() ? "" : ", ") + ks->name;
    throw std::invalid_argument("unknown kernel '" + name + "'; this build has: " + known);
}

const KernelSet& active_kernels() { return *active_slot().load(std::memory_order_acquire); }

void set_kernels(const std::string& name) { active_slot().store(&find_kernels(name, true), std::memory_order_release); }

}  // namespace fastgemm
