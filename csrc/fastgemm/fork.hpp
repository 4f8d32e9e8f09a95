// Keeps fastgemm usable in a child created by fork() after the parent ran threaded.
#pragma once

namespace fastgemm {

// Registers the pthread_atfork child handler once; safe to call any number of times.
void install_fork_handler();

}  // namespace fastgemm
