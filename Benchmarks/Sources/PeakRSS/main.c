// Workload 8's peak-memory probe: runs PROGRAM with ARGS as a child and writes the child's peak
// resident set size (ru_maxrss from wait4, KiB) to OUTFILE; exits with the child's status.
//
//   PeakRSS OUTFILE PROGRAM [ARGS…]
//
// Why a C program in between: Linux records the old address space's high-water mark in the
// process's ru_maxrss at exec, and posix_spawn from the benchmark (vfork) shares the benchmark's
// address space until the exec, so a child spawned by the benchmark itself reports at least the
// benchmark's own size. This probe is a few hundred KiB; the program it forks inherits only that.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: PeakRSS OUTFILE PROGRAM [ARGS...]\n");
        return 2;
    }
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return 3;
    }
    if (pid == 0) {
        execv(argv[2], argv + 2);
        perror("execv");
        _exit(127);
    }
    int status = 0;
    struct rusage usage;
    while (wait4(pid, &status, 0, &usage) < 0) {
        if (errno != EINTR) {
            perror("wait4");
            return 3;
        }
    }
    FILE *out = fopen(argv[1], "w");
    if (out == NULL) {
        perror("fopen");
        return 3;
    }
    fprintf(out, "%ld\n", usage.ru_maxrss);
    fclose(out);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
