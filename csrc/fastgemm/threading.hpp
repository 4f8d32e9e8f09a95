// Threads: how many a call may use, and the only code that starts them (threading.cpp's pool).
#pragma once

#include <cstdint>
#include <memory>
#include <type_traits>
#include <utility>

namespace fastgemm {

// A non-owning reference to a callable: a function pointer and an object pointer, no
// allocation (std::function allocated for the driver's lambdas). The callable must outlive it.
template <typename Sig>
class FunctionRef;

template <typename R, typename... Args>
class FunctionRef<R(Args...)> {
   public:
    template <typename F, typename = std::enable_if_t<!std::is_same_v<std::decay_t<F>, FunctionRef>>>
    FunctionRef(F&& f)  // NOLINT: implicit, like std::function
        : obj_(const_cast<void*>(static_cast<const void*>(std::addressof(f)))), call_([](void* o, Args... args) -> R {
              return (*static_cast<std::remove_reference_t<F>*>(o))(std::forward<Args>(args)...);
          }) {}
    R operator()(Args... args) const { return call_(obj_, std::forward<Args>(args)...); }

   private:
    void* obj_;
    R (*call_)(void*, Args...);
};

// The cap a call may use (>= 1). Defaults to 1 until set; the Python layer sets the default.
// Always 1 in a process forked after fastgemm ran threaded.
int max_threads();
// Largest cap set_max_threads accepts: 4x the CPUs in this process's affinity mask, at
// least 8. More only oversubscribes the machine, and each thread costs packing memory.
int max_thread_limit();
// Throws std::invalid_argument for n < 1 or n > max_thread_limit().
void set_max_threads(int n);
// Per-thread work (multiply-adds) below which another thread costs more than it saves, and the
// lower bound of the small kernels, whose teams have no barriers and skip a late worker; see
// docs/DESIGN.md, "Thread thresholds".
constexpr int64_t kMinWorkPerThread = int64_t(1) << 20;
constexpr int64_t kSmallMinWorkPerThread = int64_t(1) << 18;
// Products of at most this many multiply-adds run on one thread for a while after a team's
// threads were seen to start late (a busy machine, another library's spinning pool): below it,
// two threads next to a spinning pool ran at a third of one thread's speed (a stalled teammate
// costs a time slice); larger ones still gain from their threads there. See docs/DESIGN.md,
// "Threads on a busy machine".
constexpr double kContendedMaxWork = double(int64_t(1) << 28);
// Threads for an m x n x k product: 1 inside a team (nested calls) or for small work,
// never more than the work can use, never more than max_threads().
int threads_for(int64_t m, int64_t n, int64_t k, int64_t min_work_per_thread = kMinWorkPerThread);
// False when an m x n x k product cannot have run on more than one thread (a stack of `count`
// of them: m * count rows). threads_for's rules at the lowest bound without the busy-machine
// one, which only lowers the count and changes with time, so the answer holds for a call that
// already ran.
bool may_run_threaded(int64_t m, int64_t n, int64_t k);
// Whether threads_for(m, n, k, min_work_per_thread) is 1 by the work alone, whatever the thread
// settings and the machine's load.
bool one_thread_by_work(int64_t m, int64_t n, int64_t k, int64_t min_work_per_thread);

// fn(tid, team) on a team of `threads` (fn(0, 1) on the caller, no team, when threads == 1).
// The team may be smaller than asked (the pool busy with another caller's team, the system out
// of threads, or for `work` of at most 2^26 multiply-adds no CPU free for a worker: other
// threads runnable on all but the caller's): `team` is what it got. fn must not throw.
void run_team(int threads, FunctionRef<void(int, int)> fn, double work);
// Waits for every thread of the team run_team started; call only from its fn.
void team_barrier();
// body(tid, lo, hi) over [0, len) cut into `pieces_per_thread` x threads contiguous ranges whose
// inner bounds are multiples of `grain`, taken by the threads of a team (tid < threads: the
// thread running it) as they come free; one call body(0, 0, len) on one thread. More pieces let
// the others take a late or preempted thread's share; streaming kernels run best on one long
// range each (4 pieces a thread took 2-thread matrix-vector products back to 1-thread speed).
// body must not throw.
void parallel_ranges(int threads, int64_t len, int64_t grain, FunctionRef<void(int, int64_t, int64_t)> body,
                     int pieces_per_thread = 1);
// body(i) for i in [0, count), handed out one at a time to `threads` threads as they come
// free. The first exception thrown stops the remaining calls and is rethrown here.
void dynamic_chunks(int threads, int64_t count, FunctionRef<void(int64_t)> body);

// Threads runnable on the whole machine now, this one included (Linux: /proc/loadavg), or -1
// where the system does not say. Idle workers sleep while it exceeds the CPUs.
int runnable_threads();

// How the threads wait, for `fastgemm info`: docs/DESIGN.md, "Waiting".
const char* thread_pool_policy();

}  // namespace fastgemm
