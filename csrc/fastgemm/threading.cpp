#include "threading.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <limits>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace fastgemm {
namespace {

std::atomic<int> g_max_threads{1};
// Set in a child process by fork: the pool's workers were not copied into it.
std::atomic<bool> g_forked{false};

// The driver's threads meet at two barriers per KC step: each must own this much of C.
constexpr int64_t kMinAreaPerThread = 32 * 32;

// A busy machine (other processes on every core): a thread of ours that is not running when
// its team starts, or that is preempted, holds every other one at the next barrier for a
// scheduler time slice, which is worth thousands of small products. When a team's threads
// start late, for a while a product of at most kContendedMaxWork multiply-adds runs on one
// thread if the delay seen is more than half its one-thread time (two threads would then take
// longer than one); the while doubles (up to kSoloMaxNs) while late starts go on; see
// docs/DESIGN.md, "Threads on a busy machine".
constexpr int64_t kLateStartNs = 200'000;
constexpr double kNsPerMultiplyAdd = 1.0 / 50.0;  // a conservative 50 G multiply-adds/s per core
constexpr int64_t kSoloMinNs = 5'000'000, kSoloMaxNs = 1'280'000'000;
std::atomic<int64_t> g_solo_until{0};  // steady-clock ns until which delayed teams are avoided
std::atomic<int64_t> g_solo_ns{kSoloMinNs};
std::atomic<int64_t> g_late_ns{0};  // how late the last delayed team started
// A neighbour's spinning thread pool (OpenBLAS spins ~0.1 s after each call) delays teams only
// for a while: the windows grow only once late starts have gone on for longer than that.
constexpr int64_t kStreakBeforeGrowthNs = 250'000'000;
std::atomic<int64_t> g_streak_start{0};  // when the current run of delayed teams began, 0: none

int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

// A team with barriers whose last thread started `late` ns after the team was asked for.
void note_team_start(int64_t late) {
    if (late > kLateStartNs) {
        const int64_t now = now_ns();
        int64_t streak = g_streak_start.load(std::memory_order_relaxed);
        if (streak == 0) g_streak_start.store(streak = now, std::memory_order_relaxed);
        g_late_ns.store(late, std::memory_order_relaxed);
        const int64_t solo = g_solo_ns.load(std::memory_order_relaxed);
        g_solo_until.store(now + solo, std::memory_order_relaxed);
        if (now - streak > kStreakBeforeGrowthNs)
            g_solo_ns.store(std::min(2 * solo, kSoloMaxNs), std::memory_order_relaxed);
    } else {
        g_streak_start.store(0, std::memory_order_relaxed);
        g_solo_ns.store(kSoloMinNs, std::memory_order_relaxed);
    }
}

// How a thread of ours waits; see docs/DESIGN.md, "Waiting". A spin with the CPU's pause, then
// sched_yield, which hands the core to any other runnable thread (another process, another
// library's pool) at no cost to it, where a pause loop would take half of its core. An idle
// worker, or a thread waiting for a teammate that has not started (which may be queued behind
// it on its own core), yields at once. A thread waiting for a running teammate keeps its core
// for a while: that wait is usually microseconds, and a core yielded to another process comes
// back only a time slice later.
constexpr int64_t kYieldAfterNs = 4'000, kRunningTeammateNs = 5'000'000;
// An idle worker yields for this long after a team before it sleeps: a product called again
// within it (Python code between calls, another library's call) finds the worker awake instead
// of paying a wake-up.
constexpr int64_t kIdleYieldNs = 20'000'000;
// When the workers last had work (or were woken for it), and how long they took to start the
// last time they had gone to sleep (an idle virtual CPU can take milliseconds to wake): a
// product shorter than that runs on its caller and wakes them for the next one; see
// docs/DESIGN.md, "Waiting".
std::atomic<int64_t> g_workers_active{0};
std::atomic<int64_t> g_sleeper_start_ns{0};

// Idle workers awake (yielding, so counted by runnable_threads).
std::atomic<int> g_idle_awake{0};
// Workers woken from sleep that have not run yet: runnable (counted by runnable_threads), and
// up to ~1 ms from running on an idle virtual CPU. And the CPU of the thread that last started
// a team or woke the workers, which a sleeping worker keeps off (Pool::work).
std::atomic<int> g_waking{0};
std::atomic<int> g_caller_cpu{-1};

bool workers_asleep(int64_t now) { return now - g_workers_active.load(std::memory_order_relaxed) > kIdleYieldNs; }

// A forked child starts on one thread (a process pool's children would otherwise oversubscribe
// the machine) and with a new pool at its first team, whose start neither the parent's workers'
// wake-up time nor their late starts may predict (each sent the child's first threaded product to
// one thread: the first woke workers the child does not have). Async-signal-safe: atomic stores.
void after_fork_in_child() {
    g_max_threads.store(1, std::memory_order_relaxed);
    g_forked.store(true, std::memory_order_relaxed);
    g_sleeper_start_ns.store(0, std::memory_order_relaxed);
    g_idle_awake.store(0, std::memory_order_relaxed);
    g_waking.store(0, std::memory_order_relaxed);
    g_solo_until.store(0, std::memory_order_relaxed);
    g_late_ns.store(0, std::memory_order_relaxed);
    g_streak_start.store(0, std::memory_order_relaxed);
    g_solo_ns.store(kSoloMinNs, std::memory_order_relaxed);
}

// threading.o is always linked (gemm needs threads_for), so every binary that can start a
// team registers the handler.
const bool g_fork_handler_installed = (pthread_atfork(nullptr, nullptr, after_fork_in_child), true);

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

// Returns once done() holds (never sleeps), or false at `deadline_ns` (0: none) or when
// give_up(now) holds before a yield; pauses for pause_ns() nanoseconds, then yields.
template <typename Done, typename PauseNs, typename GiveUp>
bool wait_until(Done done, PauseNs pause_ns, int64_t deadline_ns, GiveUp give_up) {
    const int64_t start = now_ns();
    for (;;) {
        for (int i = 0; i < 64; ++i) {
            if (done()) return true;
            cpu_relax();
        }
        const int64_t now = now_ns();
        if (deadline_ns != 0 && now >= deadline_ns) return false;
        if (now - start >= pause_ns()) {
            if (give_up(now)) return false;
            std::this_thread::yield();
        }
    }
}

template <typename Done, typename PauseNs>
bool wait_until(Done done, PauseNs pause_ns) {
    return wait_until(done, pause_ns, 0, [](int64_t) { return false; });
}

// The machine's CPUs less its runnable threads, this one included (negative: threads wait for
// a CPU); plenty where the system does not say.
constexpr int kPlentyOfCpus = std::numeric_limits<int>::max() / 2;
int unclaimed_cpus() {
    static const int cpus = int(sysconf(_SC_NPROCESSORS_ONLN));
    const int running = runnable_threads();
    return running < 0 || cpus <= 0 ? kPlentyOfCpus : cpus - running;
}

// Whether more threads are runnable than the machine has CPUs. Then a thread of ours that
// idles by yielding takes time from one that has work: sched_yield does not hand the core to a
// runnable thread the scheduler deems to have had more than its share, such as OpenBLAS's
// worker spinning beside us after a NumPy call; see docs/DESIGN.md, "Waiting".
bool machine_crowded() { return unclaimed_cpus() < 0; }

// The idle workers' watch on machine_crowded, shared: one check every kCrowdCheckNs by
// whichever worker comes first (a check sums every CPU's run queue; each of a large machine's
// idle workers checking would cost its kernel more than they save), and crowded once
// kCrowdChecks checks in a row said so (a kernel thread's microseconds are not a neighbour). A
// run of checks more than two periods apart starts afresh.
constexpr int64_t kCrowdCheckNs = 20'000;
constexpr int kCrowdChecks = 3;
std::atomic<int64_t> g_crowd_checked{0};
std::atomic<int> g_crowd_seen{0};
bool idle_worker_should_sleep(int64_t now) {
    int64_t last = g_crowd_checked.load(std::memory_order_relaxed);
    if (now - last >= kCrowdCheckNs && g_crowd_checked.compare_exchange_strong(last, now, std::memory_order_relaxed)) {
        const int run = now - last <= 2 * kCrowdCheckNs ? g_crowd_seen.load(std::memory_order_relaxed) : 0;
        g_crowd_seen.store(machine_crowded() ? run + 1 : 0, std::memory_order_relaxed);
        last = now;
    }
    return now - last <= 2 * kCrowdCheckNs && g_crowd_seen.load(std::memory_order_relaxed) >= kCrowdChecks;
}

// One team at a time: the caller is thread 0, workers 1..size-1.
struct Team {
    const FunctionRef<void(int, int)>* fn = nullptr;
    int size = 0;
    std::atomic<int> started{0};         // threads inside fn so far
    std::atomic<int64_t> last_start{0};  // steady-clock ns when the latest of them started
    std::atomic<int> arrived{0};         // at the current barrier
    std::atomic<unsigned> phase{0};
    std::unique_ptr<std::atomic<int>[]> cpus;  // cpus[tid]: where thread tid was last seen, -1: unknown
    int capacity = 0;
};

// The team the calling thread is running in, or null, and its number in it.
thread_local Team* t_team = nullptr;
thread_local int t_tid = 0;

int current_cpu() {
#if defined(__linux__)
    return sched_getcpu();
#else
    return -1;
#endif
}

// The calling thread's affinity without `cpu`, where it has that CPU and another. Keeps off it
// until restored with back_to(); a no-op where the system has no affinity.
struct CpuAvoided {
#if defined(__linux__)
    cpu_set_t mask{}, others{};  // the affinity before, and the one set
#endif
    bool active = false;
};
CpuAvoided avoid_cpu(int cpu) {
    CpuAvoided a;
#if defined(__linux__)
    if (cpu < 0 || sched_getaffinity(0, sizeof a.mask, &a.mask) != 0 || !CPU_ISSET(cpu, &a.mask) ||
        CPU_COUNT(&a.mask) < 2)
        return a;
    a.others = a.mask;
    CPU_CLR(cpu, &a.others);
    a.active = sched_setaffinity(0, sizeof a.others, &a.others) == 0;
#else
    (void)cpu;
#endif
    return a;
}
// The affinity as it was before avoid_cpu, unless it was changed since (by the program: then
// that choice stands).
void back_to(const CpuAvoided& a) {
#if defined(__linux__)
    cpu_set_t now;
    if (a.active && sched_getaffinity(0, sizeof now, &now) == 0 && CPU_EQUAL(&now, &a.others))
        sched_setaffinity(0, sizeof a.mask, &a.mask);
#else
    (void)a;
#endif
}

// A worker woken onto its waker's CPU (the scheduler's choice for a woken thread) would stay
// there for milliseconds, the two threads taking turns on one core. It moves itself off: its
// affinity without that CPU, then as it was.
void leave_cpu(int cpu) { back_to(avoid_cpu(cpu)); }

// Notes where thread `tid` runs; true when a teammate for which `waited(j)` holds was last seen
// on the same CPU. A woken worker may be queued on its waker's CPU: spinning there would keep
// it from running.
template <typename Waited>
bool shares_cpu(Team& team, int tid, Waited waited) {
    const int cpu = current_cpu();
    team.cpus[tid].store(cpu, std::memory_order_relaxed);
    if (cpu < 0) return false;
    for (int j = 0; j < team.size; ++j)
        if (j != tid && waited(j) && team.cpus[j].load(std::memory_order_relaxed) == cpu) return true;
    return false;
}

// Worker threads started on demand and kept; see docs/DESIGN.md, "Waiting".
class Pool {
   public:
    // fn(tid, threads) on the caller and threads - 1 workers. False, nothing run, when another
    // thread's team holds the pool. `elastic`: fn takes its work as it comes free and has no
    // barriers, so a worker that has not started by the time the caller's fn returns is
    // skipped (its share was taken by the others) instead of waited for; only a team with
    // barriers waits for a late thread, so only its start (workers awake) feeds the busy rule.
    bool run(int threads, const FunctionRef<void(int, int)>& fn, bool elastic) {
        std::unique_lock<std::mutex> busy(busy_, std::try_to_lock);
        if (!busy.owns_lock()) return false;
        try {
            while (int(slots_.size()) < threads - 1) start_worker();
        } catch (const std::system_error&) {
            threads = int(slots_.size()) + 1;  // as many as the system gave
            if (threads < 2) return false;
        }
        if (team_.capacity < threads) {
            team_.cpus = std::make_unique<std::atomic<int>[]>(size_t(threads));
            team_.capacity = threads;
        }
        const int caller_cpu = current_cpu();
        team_.cpus[0].store(caller_cpu, std::memory_order_relaxed);
        for (int t = 1; t < threads; ++t) team_.cpus[t].store(-1, std::memory_order_relaxed);
        team_.fn = &fn;
        team_.size = threads;
        team_.started.store(1, std::memory_order_relaxed);
        const int64_t asked = now_ns();
        // Workers still waking from the last wake-up start as late as sleeping ones.
        const bool asleep = workers_asleep(asked) || g_waking.load(std::memory_order_relaxed) > 0;
        team_.last_start.store(asked, std::memory_order_relaxed);
        const uint64_t job = ++job_;
        for (int w = 0; w < threads - 1; ++w) slots_[w]->state.store(job << 2 | kInvited, std::memory_order_release);
        // The workers check their state under sleep_mu_ before they sleep: taking it here
        // orders this notification after any such check.
        {
            std::lock_guard<std::mutex> lock(sleep_mu_);
            note_waking(caller_cpu);
        }
        wake_.notify_all();
        Team* outer = t_team;
        t_team = &team_;
        t_tid = 0;
        fn(0, threads);
        for (int w = 0; w < threads - 1; ++w) {
            std::atomic<uint64_t>& state = slots_[w]->state;
            uint64_t invited = job << 2 | kInvited;
            if (elastic && state.compare_exchange_strong(invited, job << 2 | kSkipped, std::memory_order_acq_rel))
                continue;
            const bool running = (state.load(std::memory_order_relaxed) & 3) == kRunning;
            auto waited = [&](int j) { return j == w + 1; };
            wait_until([&] { return state.load(std::memory_order_acquire) == (job << 2 | kDone); },
                       [&] { return running && !shares_cpu(team_, 0, waited) ? kRunningTeammateNs : kYieldAfterNs; });
        }
        const int64_t ended = now_ns();
        // How late the last thread started (a skipped worker: no sooner than now).
        const int64_t late = (team_.started.load(std::memory_order_relaxed) < threads
                                  ? ended
                                  : team_.last_start.load(std::memory_order_relaxed)) -
                             asked;
        // A sleeping worker's wake-up (up to ~1 ms for an idle virtual CPU) is the sleeper
        // rule's to weigh, not a sign of a busy machine: it fed the busy rule, whose windows,
        // growing while every product after a pause woke sleeping workers, kept 2 threads to 1.
        if (asleep) g_sleeper_start_ns.store(late, std::memory_order_relaxed);
        else if (!elastic) note_team_start(late);
        g_workers_active.store(ended, std::memory_order_relaxed);
        t_team = outer;
        return true;
    }

    // Wakes sleeping workers without work: they wait awake (yielding) again.
    void wake_idle() {
        g_workers_active.store(now_ns(), std::memory_order_relaxed);
        pokes_.fetch_add(1, std::memory_order_relaxed);
        {
            std::lock_guard<std::mutex> lock(sleep_mu_);
            note_waking(current_cpu());
        }
        wake_.notify_all();
    }

   private:
    // Under sleep_mu_, before a notification, which makes every sleeping worker runnable; `cpu`:
    // the notifying caller's.
    void note_waking(int cpu) {
        g_waking.store(sleeping_, std::memory_order_relaxed);
        g_caller_cpu.store(cpu, std::memory_order_relaxed);
    }

    // A slot's state: the job number << 2 | where the worker is with it.
    static constexpr uint64_t kInvited = 0, kRunning = 1, kSkipped = 2, kDone = 3;
    struct alignas(64) Slot {
        std::atomic<uint64_t> state{0};
    };

    // Throws std::system_error when the system refuses a thread; nothing changes then.
    void start_worker() {
        slots_.reserve(slots_.size() + 1);
        auto slot = std::make_unique<Slot>();
        const int tid = int(slots_.size()) + 1;
        std::thread([this, s = slot.get(), tid] { work(*s, tid); }).detach();
        slots_.push_back(std::move(slot));
    }

    void work(Slot& slot, int tid) {
        uint64_t last = 0;  // the last job seen
        for (;;) {
            auto ready = [&] { return slot.state.load(std::memory_order_acquire) >> 2 != last; };
            g_idle_awake.fetch_add(1, std::memory_order_relaxed);
            const bool woken =
                wait_until(ready, [] { return kYieldAfterNs; }, now_ns() + kIdleYieldNs, idle_worker_should_sleep);
            g_idle_awake.fetch_sub(1, std::memory_order_relaxed);
            if (!woken) {
                // Woken, a worker would be queued on its waker's CPU behind the caller, which
                // then ran products alone or waited for it for up to a scheduler tick while the
                // other CPU idled; asleep it keeps off the CPU its caller last ran on.
                const CpuAvoided away = avoid_cpu(g_caller_cpu.load(std::memory_order_relaxed));
                std::unique_lock<std::mutex> lock(sleep_mu_);
                const uint64_t pokes = pokes_.load(std::memory_order_relaxed);
                ++sleeping_;
                wake_.wait(lock, [&] { return ready() || pokes_.load(std::memory_order_relaxed) != pokes; });
                --sleeping_;
                if (g_waking.load(std::memory_order_relaxed) > 0) g_waking.fetch_sub(1, std::memory_order_relaxed);
                lock.unlock();
                back_to(away);
                if (!ready()) continue;
            }
            last = slot.state.load(std::memory_order_acquire) >> 2;
            uint64_t invited = last << 2 | kInvited;
            if (!slot.state.compare_exchange_strong(invited, last << 2 | kRunning, std::memory_order_acq_rel))
                continue;  // skipped: the caller finished without this thread
            t_team = &team_;
            t_tid = tid;
            int cpu = current_cpu();
            if (cpu >= 0 && cpu == team_.cpus[0].load(std::memory_order_relaxed)) {
                leave_cpu(cpu);
                cpu = current_cpu();
            }
            team_.cpus[tid].store(cpu, std::memory_order_relaxed);
            team_.started.fetch_add(1, std::memory_order_relaxed);
            int64_t seen = team_.last_start.load(std::memory_order_relaxed);
            for (const int64_t now = now_ns(); now > seen && !team_.last_start.compare_exchange_weak(seen, now);) {
            }
            (*team_.fn)(tid, team_.size);
            t_team = nullptr;
            slot.state.store(last << 2 | kDone, std::memory_order_release);
        }
    }

    std::mutex busy_;  // held by the thread whose team runs
    std::vector<std::unique_ptr<Slot>> slots_;
    uint64_t job_ = 0;
    std::atomic<uint64_t> pokes_{0};
    Team team_;
    std::mutex sleep_mu_;
    int sleeping_ = 0;  // workers waiting on wake_, under sleep_mu_
    std::condition_variable wake_;
};

// Never destroyed: detached workers wait on its members until the process ends.
Pool* g_pool = new Pool;
std::mutex g_pool_swap;

Pool& pool() {
    if (g_forked.load(std::memory_order_relaxed)) {
        // The parent's workers do not exist here and its locks may be held: start afresh.
        std::lock_guard<std::mutex> lock(g_pool_swap);
        if (g_forked.exchange(false)) g_pool = new Pool;
    }
    return *g_pool;
}

}  // namespace

int max_threads() { return g_max_threads.load(std::memory_order_relaxed); }

int max_thread_limit() {
    int cpus = 0;
#if defined(__linux__)
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) cpus = CPU_COUNT(&set);
#endif
    if (cpus <= 0) cpus = int(std::thread::hardware_concurrency());
    return std::max(8, 4 * std::max(cpus, 1));
}

void set_max_threads(int n) {
    if (n < 1) throw std::invalid_argument("set_num_threads: number of threads must be >= 1");
    const int limit = max_thread_limit();
    if (n > limit)
        throw std::invalid_argument("set_num_threads: " + std::to_string(n) + " threads is more than " +
                                    std::to_string(limit) + " (4x the CPUs this process may use)");
    g_max_threads.store(n, std::memory_order_relaxed);
}

namespace {
// Threads an m x n x k product's work can keep busy, before the cap and the busy-machine rule.
double threads_by_work(int64_t m, int64_t n, int64_t k, int64_t min_work_per_thread) {
    // m*n*k may overflow int64.
    const double work = double(m) * double(n) * double(k);
    return std::min(work / double(min_work_per_thread), double(m) * double(n) / double(kMinAreaPerThread));
}
}  // namespace

int runnable_threads() {
#if defined(__linux__)
    static const int fd = ::open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    char text[128];
    const ssize_t got = pread(fd, text, sizeof text - 1, 0);
    if (got <= 0) return -1;
    text[got] = '\0';
    // "0.52 0.58 0.59 3/120 4567": the fourth field's first number.
    const char* p = text;
    for (int field = 0; field < 3 && *p; ++field) {
        while (*p && *p != ' ') ++p;
        while (*p == ' ') ++p;
    }
    char* end = nullptr;
    const long n = std::strtol(p, &end, 10);
    return end != p && *end == '/' ? int(n) : -1;
#else
    return -1;
#endif
}

namespace {
// A team with barriers for at most kCrowdedMaxWork multiply-adds (1.3 ms at kNsPerMultiplyAdd)
// takes no more workers than there are CPUs with nothing else to run: a worker that shares a
// CPU with another runnable thread (another library's spinning pool, another process) is now
// and then preempted for a scheduler slice, which the others then wait for at the barrier,
// several times such a product's time. Larger ones gain from the share of a CPU they get, and
// elastic teams skip a worker that has not started (128^3 float32 on the small kernels ran at
// 2-thread speed beside OpenBLAS's spinning worker); see docs/DESIGN.md, "Waiting".
constexpr double kCrowdedMaxWork = double(int64_t(1) << 26);
// CPUs with no runnable thread but our idle or waking workers, the caller's not counted
// (plenty when the system does not say): read at most every kFreeCpusCheckNs, and the more of
// the last two reads, so that a thread runnable for a moment (a kernel thread: 0.5% of reads on
// an idle 2-vCPU machine, some for milliseconds) does not keep a product to one thread, while a
// neighbour's pool spinning for 0.1 s does.
constexpr int64_t kFreeCpusCheckNs = 200'000;
std::atomic<int64_t> g_free_cpus_checked{0};
std::atomic<int> g_free_cpus{kPlentyOfCpus}, g_free_cpus_read{kPlentyOfCpus};
int free_cpus(int64_t now) {
    if (now - g_free_cpus_checked.load(std::memory_order_relaxed) < kFreeCpusCheckNs)
        return g_free_cpus.load(std::memory_order_relaxed);
    const int read =
        unclaimed_cpus() + g_idle_awake.load(std::memory_order_relaxed) + g_waking.load(std::memory_order_relaxed);
    const int free = std::max(read, g_free_cpus_read.exchange(read, std::memory_order_relaxed));
    g_free_cpus.store(free, std::memory_order_relaxed);
    g_free_cpus_checked.store(now, std::memory_order_relaxed);
    return free;
}
}  // namespace

int threads_for(int64_t m, int64_t n, int64_t k, int64_t min_work_per_thread) {
    if (t_team != nullptr) return 1;
    const int cap = max_threads();
    if (cap <= 1) return 1;
    const double by_work = threads_by_work(m, n, k, min_work_per_thread);
    if (by_work < 2) return 1;
    const double work = double(m) * double(n) * double(k);
    const int64_t now = now_ns();
    if (workers_asleep(now) &&
        work * kNsPerMultiplyAdd < 2.0 * double(g_sleeper_start_ns.load(std::memory_order_relaxed))) {
        pool().wake_idle();
        return 1;
    }
    if (work <= kContendedMaxWork &&
        work * kNsPerMultiplyAdd < 2.0 * double(g_late_ns.load(std::memory_order_relaxed)) &&
        now < g_solo_until.load(std::memory_order_relaxed))
        return 1;
    return by_work >= cap ? cap : int(by_work);
}

bool one_thread_by_work(int64_t m, int64_t n, int64_t k, int64_t min_work_per_thread) {
    return threads_by_work(m, n, k, min_work_per_thread) < 2;
}

bool may_run_threaded(int64_t m, int64_t n, int64_t k) {
    return t_team == nullptr && max_threads() > 1 && threads_by_work(m, n, k, kSmallMinWorkPerThread) >= 2;
}

namespace {
// One thread: no team at all. A call from inside a team, or while another thread's team holds
// the pool, runs on its caller alone.
void run_on(int threads, FunctionRef<void(int, int)> fn, bool elastic) {
    if (threads > 1 && t_team == nullptr && pool().run(threads, fn, elastic)) return;
    fn(0, 1);
}
}  // namespace

void run_team(int threads, FunctionRef<void(int, int)> fn, double work) {
    if (threads > 1 && work <= kCrowdedMaxWork) threads = std::max(1, std::min(threads, 1 + free_cpus(now_ns())));
    run_on(threads, fn, false);
}

void team_barrier() {
    Team* team = t_team;
    if (team == nullptr) return;  // a team of one
    const unsigned phase = team->phase.load(std::memory_order_acquire);
    if (team->arrived.fetch_add(1, std::memory_order_acq_rel) + 1 == team->size) {
        team->arrived.store(0, std::memory_order_relaxed);
        team->phase.fetch_add(1, std::memory_order_release);
        return;
    }
    auto all = [](int) { return true; };
    wait_until([&] { return team->phase.load(std::memory_order_acquire) != phase; },
               [&] {
                   return team->started.load(std::memory_order_relaxed) == team->size && !shares_cpu(*team, t_tid, all)
                              ? kRunningTeammateNs
                              : kYieldAfterNs;
               });
}

void parallel_ranges(int threads, int64_t len, int64_t grain, FunctionRef<void(int, int64_t, int64_t)> body,
                     int pieces_per_thread) {
    if (len <= 0) return;
    const int64_t grains = (len + grain - 1) / grain;
    const int64_t pieces = std::min(grains, int64_t(std::max(threads, 1)) * std::max(pieces_per_thread, 1));
    if (threads <= 1 || pieces <= 1) {
        body(0, 0, len);
        return;
    }
    std::atomic<int64_t> next{0};
    run_on(
        threads,
        [&](int t, int) {
            for (int64_t p; (p = next.fetch_add(1, std::memory_order_relaxed)) < pieces;) {
                const int64_t lo = std::min(len, grains * p / pieces * grain);
                const int64_t hi = std::min(len, grains * (p + 1) / pieces * grain);
                if (lo < hi) body(t, lo, hi);
            }
        },
        true);
}

void dynamic_chunks(int threads, int64_t count, FunctionRef<void(int64_t)> body) {
    // The first exception stops the remaining calls and is rethrown; no exception leaves a team.
    std::exception_ptr error;
    std::mutex error_mu;
    std::atomic<bool> failed{false};
    std::atomic<int64_t> next{0};
    run_on(
        threads,
        [&](int, int) {
            for (int64_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < count;) {
                if (failed.load(std::memory_order_relaxed)) break;
                try {
                    body(i);
                } catch (...) {
                    std::lock_guard<std::mutex> lock(error_mu);
                    if (!error) error = std::current_exception();
                    failed.store(true, std::memory_order_relaxed);
                }
            }
        },
        true);
    if (error) std::rethrow_exception(error);
}

const char* thread_pool_policy() {
    static const std::string policy =
        "fastgemm's own pool: a thread waiting for a running teammate on another CPU spins up to " +
        std::to_string(kRunningTeammateNs / 1'000'000) + " ms, else yields after " +
        std::to_string(kYieldAfterNs / 1'000) + " us; idle workers yield, then sleep after " +
        std::to_string(kIdleYieldNs / 1'000'000) +
        " ms, or sooner while more threads are runnable than CPUs, off the CPU their caller last ran on";
    return policy.c_str();
}

}  // namespace fastgemm

// A C ABI so tools that find libraries by their exported symbols (threadpoolctl's controller
// in python/fastgemm/_threadpool.py) can read and set the cap without going through Python.
extern "C" {
__attribute__((visibility("default"))) int fastgemm_get_num_threads(void) { return fastgemm::max_threads(); }
// Returns 0 on success, -1 for n < 1 or n > the limit (fastgemm::max_thread_limit()).
__attribute__((visibility("default"))) int fastgemm_set_num_threads(int n) {
    if (n < 1 || n > fastgemm::max_thread_limit()) return -1;
    fastgemm::set_max_threads(n);
    return 0;
}
}
