#include "fork.hpp"

#include <pthread.h>

#include <mutex>

#include "threading.hpp"

namespace fastgemm {
namespace {

// GNU OpenMP keeps its worker pool across parallel regions. fork() copies only the calling
// thread, but libgomp in the child still believes the pool exists, so the next parallel
// region with more than one thread waits forever for workers that were never copied
// (multiprocessing's default start method on Linux does exactly this). In the child,
// fastgemm therefore runs single-threaded: `num_threads(1)` / `if(false)` regions never touch
// the pool. Only async-signal-safe work is allowed here: two atomic stores.
void child_handler() { after_fork_in_child(); }

}  // namespace

void install_fork_handler() {
    static std::once_flag once;
    std::call_once(once, [] { pthread_atfork(nullptr, nullptr, child_handler); });
}

}  // namespace fastgemm
