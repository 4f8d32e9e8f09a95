// Which kernel set runs: the best one the CPU and OS support, unless one is forced by name.
#pragma once

#include <string>
#include <vector>

#include "kernel.hpp"

namespace fastgemm {

// Every kernel set built into this module, best first.
const std::vector<const KernelSet*>& compiled_kernels();
// Those this CPU and OS can execute, best first (generic is always among them).
std::vector<const KernelSet*> runnable_kernels();
// The set in use; chosen at first use as the best runnable one.
const KernelSet& active_kernels();
// Force a set by name. Throws std::invalid_argument for an unknown name and
// std::runtime_error for one this CPU or OS cannot run; the active set is then unchanged.
void set_kernels(const std::string& name);

}  // namespace fastgemm
