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
// The set called `name`. Throws std::invalid_argument for a name this build does not have
// and, when must_run, std::runtime_error for a set this CPU or OS cannot run.
const KernelSet& find_kernels(const std::string& name, bool must_run);
// The set in use; chosen at first use as the best runnable one.
const KernelSet& active_kernels();
// Force a set by name; throws as find_kernels(name, true), leaving the active set unchanged.
void set_kernels(const std::string& name);

}  // namespace fastgemm
