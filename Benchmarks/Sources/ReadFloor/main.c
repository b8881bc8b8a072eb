// The least a get can cost when each value is a standard LZ4 frame in a file of its own, in C with
// plain system calls: what workload 9's file-backed get paths are compared against besides
// python-diskcache. 10,000 values, read in a scrambled order, each read timed alone, three rounds.
//
//   ReadFloor DIR SIZE json|random [thread]
//                                      DIR must not exist; it is left filled for a look afterwards.
//                                      With `thread`, the passes run on a thread of their own, as a
//                                      Swift task does: glibc then serves its blocks from a thread
//                                      arena, which grows by an `mprotect` of each block kept.
//
// Three passes a round, p50 and p99 of each in µs:
//   read     `openat2` of <shard>/<name> below DIR's descriptor (no links, kernel caches only, no
//            access time: as FileStore's read without a hop), one `preadv2` with RWF_NOWAIT, `close`
//   decoded  read, then the frame's one block decoded (LZ4_decompress_safe) into a reused buffer
//            and its content checksum checked (libxxhash's XXH32), as CompressedStore does
//   kept     decoded into a new block that is kept until the end of the pass, as a memory layer
//            keeps every value it is handed (each block's first touch is a page fault)
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <lz4.h>
#include <lz4frame.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

enum { count = 10000, passes = 3, rounds = 3, headerSize = 15 };

static int root;
static char names[count][48];

static double nanoseconds(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return now.tv_sec * 1e9 + now.tv_nsec;
}

static int ascending(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void fail(const char *what) {
    fprintf(stderr, "ReadFloor: %s: %s\n", what, strerror(errno));
    exit(1);
}

/// Opens entry `index` as FileStore opens a file it reads without a hop.
static int openEntry(int index) {
    struct open_how how = {
        .flags = O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_NOATIME | O_CLOEXEC,
        .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_CACHED,
    };
    return (int)syscall(SYS_openat2, root, names[index], &how, sizeof how);
}

/// Reads entry `index` whole into `frame`; returns its length.
static ssize_t readEntry(int index, char *frame, size_t capacity) {
    int fd = openEntry(index);
    if (fd < 0) fail(names[index]);
    struct iovec vector = {frame, capacity};
    ssize_t length = preadv2(fd, &vector, 1, 0, RWF_NOWAIT);
    close(fd);
    if (length <= 0) fail(names[index]);
    return length;
}

/// Decodes a standard frame of one block (15-byte header: content size, no dictionary) into
/// `value` and checks its content checksum; exits on a damaged frame.
static void decode(const char *frame, ssize_t length, char *value, int size) {
    unsigned blockSize;
    memcpy(&blockSize, frame + headerSize, 4);
    int decoded;
    if (blockSize & 0x80000000u) {
        decoded = (int)(blockSize & 0x7fffffffu);
        memcpy(value, frame + headerSize + 4, (size_t)decoded);
    } else {
        decoded = LZ4_decompress_safe(frame + headerSize + 4, value, (int)blockSize, size);
    }
    unsigned checksum;
    memcpy(&checksum, frame + length - 4, 4);
    if (decoded != size || XXH32(value, (size_t)size, 0) != checksum) {
        fprintf(stderr, "ReadFloor: a damaged frame\n");
        exit(1);
    }
}

/// SIZE bytes of JSON records, or of random bytes.
static void makeValue(char *value, int size, int json) {
    if (!json) {
        unsigned state = 42;
        for (int i = 0; i < size; i++) { state = state * 1103515245u + 12345u; value[i] = (char)(state >> 16); }
        return;
    }
    for (int offset = 0, record = 0; offset < size; record++) {
        char text[160];
        int n = snprintf(text, sizeof text, "{\"id\":%d,\"name\":\"user %d\",\"email\":\"user%d@example.com\",\"active\":%s},",
                         record, record, record, record % 3 ? "false" : "true");
        int take = n < size - offset ? n : size - offset;
        memcpy(value + offset, text, (size_t)take);
        offset += take;
    }
}

/// What the passes read with: the frame's buffer, its capacity, the reused value buffer, its size.
struct Work {
    char *frame;
    size_t capacity;
    char *value;
    int size;
};

/// The three passes of every round, printed; on the thread that calls it.
static void *measure(void *argument) {
    struct Work *work = argument;
    char *frame = work->frame, *value = work->value;
    size_t capacity = work->capacity;
    int size = work->size;
    static double times[passes][count];
    static char *kept[count];
    static const char *passNames[passes] = {"read", "decoded", "kept"};
    for (int round = 0; round < rounds; round++) {
        for (int pass = 0; pass < passes; pass++) {
            for (int k = 0; k < count; k++) {
                int index = (int)((long)k * 7919 % count);
                double start = nanoseconds();
                ssize_t length = readEntry(index, frame, capacity);
                if (pass == 1) decode(frame, length, value, size);
                if (pass == 2) {
                    kept[k] = malloc((size_t)size);
                    decode(frame, length, kept[k], size);
                }
                times[pass][k] = nanoseconds() - start;
            }
            if (pass == 2) for (int k = 0; k < count; k++) free(kept[k]);
            qsort(times[pass], count, sizeof(double), ascending);
        }
        printf("round %d:", round + 1);
        for (int pass = 0; pass < passes; pass++) {
            printf(" %s p50 %.2f p99 %.2f µs%s", passNames[pass], times[pass][count / 2] / 1e3,
                   times[pass][count * 99 / 100] / 1e3, pass + 1 < passes ? " |" : "\n");
        }
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 4 || argc > 5 || atoi(argv[2]) < 16 || atoi(argv[2]) > 65536 || (strcmp(argv[3], "json") && strcmp(argv[3], "random"))
        || (argc == 5 && strcmp(argv[4], "thread"))) {
        fprintf(stderr, "usage: ReadFloor DIR SIZE(16...65536) json|random [thread]\n");
        return 2;
    }
    int size = atoi(argv[2]);
    char *value = malloc((size_t)size);
    makeValue(value, size, strcmp(argv[3], "json") == 0);
    if (mkdir(argv[1], 0700) != 0) fail(argv[1]);
    root = open(argv[1], O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (root < 0) fail(argv[1]);

    LZ4F_preferences_t preferences = LZ4F_INIT_PREFERENCES;
    preferences.frameInfo.blockSizeID = LZ4F_max64KB;
    preferences.frameInfo.contentChecksumFlag = LZ4F_contentChecksumEnabled;
    preferences.frameInfo.contentSize = (unsigned long long)size;
    size_t capacity = LZ4F_compressFrameBound((size_t)size, &preferences) + 64;
    char *frame = malloc(capacity);
    for (int i = 0; i < count; i++) {
        char shard[8];
        snprintf(shard, sizeof shard, "%02X", i % 256);
        if (mkdirat(root, shard, 0700) != 0 && errno != EEXIST) fail(shard);
        snprintf(names[i], sizeof names[i], "%s/%08X%024d", shard, i, 0);
        memcpy(value, &i, sizeof i);  // every value differs
        size_t length = LZ4F_compressFrame(frame, capacity, value, (size_t)size, &preferences);
        if (LZ4F_isError(length)) { fprintf(stderr, "ReadFloor: %s\n", LZ4F_getErrorName(length)); return 1; }
        int fd = openat(root, names[i], O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0 || write(fd, frame, length) != (ssize_t)length) fail(names[i]);
        close(fd);
    }

    struct Work work = {frame, capacity, value, size};
    if (argc == 5) {
        pthread_t thread;
        if (pthread_create(&thread, NULL, measure, &work) != 0 || pthread_join(thread, NULL) != 0) fail("pthread_create");
    } else {
        measure(&work);
    }
    return 0;
}
