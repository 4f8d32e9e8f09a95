#include "caches.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "cpu.hpp"

namespace fastgemm {
namespace {

bool read_line(const std::string& path, char* buf, size_t n) {
    FILE* f = std::fopen(path.c_str(), "r");
    if (!f) return false;
    const bool ok = std::fgets(buf, int(n), f) != nullptr;
    std::fclose(f);
    return ok;
}

int64_t read_int(const std::string& path) {
    char buf[64];
    if (!read_line(path, buf, sizeof buf)) return 0;
    char* end = nullptr;
    int64_t v = std::strtoll(buf, &end, 10);
    if (end && (*end == 'K' || *end == 'k')) v *= 1024;
    else if (end && (*end == 'M' || *end == 'm')) v *= 1024 * 1024;
    return v;
}

// Linux describes every cache of cpu0 under sysfs, on x86 and Arm alike; elsewhere (or in a
// container that hides it) fall back to sizes small enough to be safe on any recent core.
Caches detect() {
    Caches c;
    c.l3_fast = !cpu_features().intel;
    c.l1d = {32 * 1024, 8, 64, false};
    c.l2 = {256 * 1024, 8, 64, false};
    c.l3 = {4 * 1024 * 1024, 16, 64, false};
    for (int i = 0; i < 8; ++i) {
        const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
        char type[32];
        if (!read_line(dir + "type", type, sizeof type)) break;
        if (std::strncmp(type, "Instruction", 11) == 0) continue;
        CacheLevel lv{read_int(dir + "size"), read_int(dir + "ways_of_associativity"),
                      read_int(dir + "coherency_line_size"), true};
        if (lv.size <= 0) continue;
        if (lv.ways <= 0) lv.ways = 8;
        if (lv.line <= 0) lv.line = 64;
        switch (read_int(dir + "level")) {
            case 1: c.l1d = lv; break;
            case 2: c.l2 = lv; break;
            case 3: c.l3 = lv; break;
            default: break;
        }
    }
    return c;
}

}  // namespace

int64_t rows_line_offset(const void* row, int64_t row_bytes) {
    if (row_bytes % 64 != 0 || !cpu_features().intel) return 0;
    return int64_t(reinterpret_cast<uintptr_t>(row) % 64);
}

const Caches& caches() {
    static const Caches c = detect();
    return c;
}

}  // namespace fastgemm
