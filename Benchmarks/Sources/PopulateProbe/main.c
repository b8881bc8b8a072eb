// What it costs to make a 2 MiB chunk of new memory ready, as ValueSlabs' preparing thread does:
// map it (aligned to 2 MiB), advise it, fill it in with MADV_POPULATE_WRITE, and keep it.
//
//   PopulateProbe huge|small CHUNKS
//                        huge:  MADV_HUGEPAGE (one transparent huge page a chunk, where the system
//                               allows them: /sys/kernel/mm/transparent_hugepage/enabled)
//                        small: MADV_NOHUGEPAGE (512 pages of 4 KiB)
//
// Prints the mean and the largest time per chunk in µs. Run the two kinds alternately, and once
// after a pause of a few seconds: on a VM whose balloon driver reports free memory to the host,
// a huge page freed seconds ago has gone back to the host and must be supplied again, while one
// freed a moment ago has not (Benchmarks/Notes/2026-11-27-warm-reads-without-a-hop.md,
// "Small pages for the slabs").
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

static double microseconds(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return now.tv_sec * 1e6 + now.tv_nsec / 1e3;
}

int main(int argc, char **argv) {
    if (argc != 3 || (strcmp(argv[1], "huge") != 0 && strcmp(argv[1], "small") != 0) || atoi(argv[2]) <= 0) {
        fprintf(stderr, "usage: PopulateProbe huge|small CHUNKS\n");
        return 2;
    }
    const int huge = strcmp(argv[1], "huge") == 0;
    const int chunks = atoi(argv[2]);
    const size_t size = 2 << 20;
    double total = 0, largest = 0;
    for (int index = 0; index < chunks; index++) {
        char *mapped = mmap(NULL, 2 * size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (mapped == MAP_FAILED) { perror("mmap"); return 1; }
        char *chunk = (char *)(((uintptr_t)mapped + size - 1) & ~(uintptr_t)(size - 1));
        madvise(chunk, size, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
        const double start = microseconds();
        if (madvise(chunk, size, MADV_POPULATE_WRITE) != 0) { perror("madvise(MADV_POPULATE_WRITE)"); return 1; }
        const double elapsed = microseconds() - start;
        total += elapsed;
        if (elapsed > largest) largest = elapsed;
        // Kept (never unmapped), as a memory layer keeps the values it holds.
    }
    printf("%s: %d chunks, mean %.0f µs a chunk, largest %.0f µs\n", argv[1], chunks, total / chunks, largest);
    return 0;
}
