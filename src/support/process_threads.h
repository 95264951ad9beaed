// support/process_threads.h — how many threads this process has, from /proc/self/task:
// what the OpenMP pool tests and bench_inductor_dynamic read to see whether a smaller
// OpenMP team ended pool threads (Note [full OpenMP teams] in kernels/cpu/loops.h).
#pragma once

#include <dirent.h>

namespace ember::support {

/// The threads of this process (/proc/self/task), or -1 where it cannot be read.
inline int process_threads() {
  DIR* dir = opendir("/proc/self/task");
  if (!dir) return -1;
  int n = 0;
  while (const dirent* e = readdir(dir))
    if (e->d_name[0] != '.') ++n;
  closedir(dir);
  return n;
}

}  // namespace ember::support
