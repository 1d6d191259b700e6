/*
 * mmap_sweep: read `a` bytes every `b` bytes of a memory mapping and time it.
 *
 * The mapping is a file (the storage under test, through the page cache or
 * DAX) or anonymous memory. The read variant copies each chunk of `a` bytes
 * into a buffer; the read-write variant also reverses the buffer and writes it
 * back (then msync()s a file mapping). T threads each sweep their own slice.
 *
 * Output: one `key=value` per line, keys fixed (see --help). Wall time is
 * CLOCK_MONOTONIC, CPU time is getrusage(RUSAGE_SELF) user+sys of the whole
 * process; io_idle_s = wall_s - cpu_s / threads approximates the time the
 * threads waited (for the device) rather than computed.
 *
 * The byte sum of every chunk read is the checksum; a reversal keeps it, so
 * it can be compared with the sum expected from the fill pattern when the
 * program wrote the data itself (memory, or --create).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define VERSION "1"
#define MAX_THREADS 1024

static const char *prog = "mmap_sweep";

static void usage(FILE *out)
{
    fprintf(out,
"usage: %s --size SIZE -a BYTES -b BYTES (--memory | --file PATH [--create])\n"
"                  [--mode read|rw] [--threads T] [--keep-cache]\n"
"\n"
"Map SIZE bytes of a file or of anonymous memory and read A bytes every B bytes\n"
"(B >= A). In mode rw each chunk read is reversed and written back, and a file\n"
"mapping is msync()ed at the end (included in the time). With T threads the\n"
"mapping is cut in T slices of SIZE/T bytes, each swept by its own thread.\n"
"\n"
"  -s, --size SIZE     bytes to map (suffixes K, M, G, T: powers of 1024)\n"
"  -a BYTES            bytes read at each step\n"
"  -b BYTES            distance between the starts of two steps\n"
"  -m, --memory        anonymous memory (filled with a pattern before timing)\n"
"  -f, --file PATH     an existing file of at least SIZE bytes\n"
"  -c, --create        create PATH (or extend it) and write SIZE bytes of pattern\n"
"                      first (not timed); PATH's directory must exist\n"
"  -M, --mode MODE     read (default) or rw\n"
"  -t, --threads T     threads (default 1)\n"
"  -k, --keep-cache    do not drop the file's pages from the page cache before\n"
"                      the sweep (default: fsync + POSIX_FADV_DONTNEED)\n"
"  -h, --help          this text\n"
"\n"
"Output, one key=value per line: mmap_sweep_version, target (memory|file), path,\n"
"size, a, b, mode, threads, steps, bytes_touched, wall_s, user_s, sys_s, cpu_s,\n"
"io_idle_s (wall_s - cpu_s/threads), throughput_mib_s (bytes_touched / wall_s),\n"
"checksum, verified (yes|no|unknown), status=ok last. Errors go to stderr,\n"
"exit status 2 for bad arguments, 1 for failures.\n", prog);
}

static void die_usage(const char *fmt, const char *arg)
{
    fprintf(stderr, "%s: ", prog);
    fprintf(stderr, fmt, arg);
    fprintf(stderr, " (see %s --help)\n", prog);
    exit(2);
}

static void die_errno(const char *what, const char *path)
{
    fprintf(stderr, "%s: %s %s: %s\n", prog, what, path, strerror(errno));
    exit(1);
}

static uint64_t parse_size(const char *text, const char *what)
{
    char *end;
    errno = 0;
    if (!text || !*text || *text == '-')
        die_usage("%s: want a positive number of bytes", what);
    unsigned long long v = strtoull(text, &end, 10);
    if (errno || end == text)
        die_usage("%s: not a number of bytes", what);
    uint64_t mult = 1;
    switch (*end) {
    case '\0': break;
    case 'k': case 'K': mult = 1ULL << 10; end++; break;
    case 'm': case 'M': mult = 1ULL << 20; end++; break;
    case 'g': case 'G': mult = 1ULL << 30; end++; break;
    case 't': case 'T': mult = 1ULL << 40; end++; break;
    default: die_usage("%s: unknown size suffix (use K, M, G or T)", what);
    }
    if (*end == 'i' && end[1] == 'B') end += 2;
    else if (*end == 'B') end++;
    if (*end)
        die_usage("%s: trailing characters after the size", what);
    if (v == 0)
        die_usage("%s: must be greater than 0", what);
    if (v > UINT64_MAX / mult)
        die_usage("%s: too large", what);
    return (uint64_t)v * mult;
}

static inline unsigned char pattern(uint64_t off)
{
    return (unsigned char)((off * 131u) ^ (off >> 9));
}

struct slice {
    unsigned char *base;   /* start of the mapping */
    uint64_t begin, end;   /* this thread's slice [begin, end) */
    uint64_t a, b;
    int rw;
    unsigned char *buf;
    uint64_t sum;
    uint64_t steps;
    uint64_t expected;
};

static void *sweep(void *arg)
{
    struct slice *s = arg;
    uint64_t sum = 0, steps = 0;
    for (uint64_t off = s->begin; off + s->a <= s->end; off += s->b) {
        unsigned char *p = s->base + off;
        memcpy(s->buf, p, s->a);
        for (uint64_t i = 0; i < s->a; i++)
            sum += s->buf[i];
        if (s->rw) {
            for (uint64_t i = 0, j = s->a - 1; i < j; i++, j--) {
                unsigned char t = s->buf[i];
                s->buf[i] = s->buf[j];
                s->buf[j] = t;
            }
            memcpy(p, s->buf, s->a);
        }
        steps++;
    }
    s->sum = sum;
    s->steps = steps;
    return NULL;
}

/* Byte sum the sweep of a slice must find in data written with pattern(). */
static uint64_t expected_sum(uint64_t begin, uint64_t end, uint64_t a, uint64_t b)
{
    uint64_t sum = 0;
    for (uint64_t off = begin; off + a <= end; off += b)
        for (uint64_t i = 0; i < a; i++)
            sum += pattern(off + i);
    return sum;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void cpu_s(double *user, double *sys)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    *user = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6;
    *sys = ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
}

static void fill(unsigned char *p, uint64_t off, uint64_t len)
{
    for (uint64_t i = 0; i < len; i++)
        p[i] = pattern(off + i);
}

static void create_file(const char *path, uint64_t size)
{
    int fd = open(path, O_WRONLY | O_CREAT, 0644);
    if (fd < 0)
        die_errno("cannot create", path);
    size_t chunk = 1 << 20;
    unsigned char *buf = malloc(chunk);
    if (!buf) { fprintf(stderr, "%s: out of memory\n", prog); exit(1); }
    for (uint64_t off = 0; off < size; off += chunk) {
        size_t len = size - off < chunk ? size - off : chunk;
        fill(buf, off, len);
        size_t done = 0;
        while (done < len) {
            ssize_t w = pwrite(fd, buf + done, len - done, off + done);
            if (w < 0)
                die_errno("cannot write", path);
            done += (size_t)w;
        }
    }
    if (fsync(fd) < 0)
        die_errno("cannot fsync", path);
    free(buf);
    close(fd);
}

int main(int argc, char **argv)
{
    uint64_t size = 0, a = 0, b = 0;
    const char *path = NULL;
    int memory = 0, create = 0, rw = 0, keep_cache = 0;
    long threads = 1;
    static const struct option opts[] = {
        {"size", required_argument, 0, 's'}, {"memory", no_argument, 0, 'm'},
        {"file", required_argument, 0, 'f'}, {"create", no_argument, 0, 'c'},
        {"mode", required_argument, 0, 'M'}, {"threads", required_argument, 0, 't'},
        {"keep-cache", no_argument, 0, 'k'}, {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":s:a:b:mf:cM:t:kh", opts, NULL)) != -1) {
        char *end;
        switch (c) {
        case 's': size = parse_size(optarg, "--size"); break;
        case 'a': a = parse_size(optarg, "-a"); break;
        case 'b': b = parse_size(optarg, "-b"); break;
        case 'm': memory = 1; break;
        case 'f': path = optarg; break;
        case 'c': create = 1; break;
        case 'M':
            if (!strcmp(optarg, "read")) rw = 0;
            else if (!strcmp(optarg, "rw")) rw = 1;
            else die_usage("--mode %s: want read or rw", optarg);
            break;
        case 't':
            errno = 0;
            threads = strtol(optarg, &end, 10);
            if (errno || *end || end == optarg || threads < 1 || threads > MAX_THREADS)
                die_usage("--threads %s: want a whole number from 1 to 1024", optarg);
            break;
        case 'k': keep_cache = 1; break;
        case 'h': usage(stdout); return 0;
        case ':': die_usage("%s needs a value", argv[optind - 1]); break;
        default: die_usage("unknown option %s", argv[optind - 1]);
        }
    }
    if (optind < argc)
        die_usage("unexpected argument %s", argv[optind]);
    if (!size) die_usage("%s: --size is required", "arguments");
    if (!a) die_usage("%s: -a is required", "arguments");
    if (!b) die_usage("%s: -b is required", "arguments");
    if (memory == !!path)
        die_usage("%s: give exactly one of --memory and --file PATH", "arguments");
    if (create && !path)
        die_usage("%s: --create needs --file PATH", "arguments");
    if (a > b) {
        char msg[128];
        snprintf(msg, sizeof msg, "-a %" PRIu64 " is larger than -b %" PRIu64, a, b);
        die_usage("%s: chunks would overlap; want a <= b", msg);
    }
    uint64_t slice_len = size / (uint64_t)threads;
    if (a > slice_len) {
        char msg[160];
        snprintf(msg, sizeof msg, "-a %" PRIu64 " does not fit in a slice of %" PRIu64
                 " bytes (size %" PRIu64 " / %ld threads)", a, slice_len, size, threads);
        die_usage("%s: lower -a or --threads, or raise --size", msg);
    }
    if ((uint64_t)(size_t)size != size)
        die_usage("%s: --size does not fit in this process's address space", "arguments");

    unsigned char *base;
    int fd = -1;
    int verifiable = memory || create;
    if (memory) {
        base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (base == MAP_FAILED)
            die_errno("cannot map anonymous memory of --size", "bytes");
        fill(base, 0, size);
    } else {
        if (create)
            create_file(path, size);
        fd = open(path, rw ? O_RDWR : O_RDONLY);
        if (fd < 0) {
            fprintf(stderr, "%s: cannot open --file %s: %s%s\n", prog, path, strerror(errno),
                    errno == ENOENT ? " (give an existing file, or --create)" : "");
            return errno == ENOENT ? 2 : 1;
        }
        struct stat st;
        if (fstat(fd, &st) < 0)
            die_errno("cannot stat --file", path);
        if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode)) {
            fprintf(stderr, "%s: --file %s: not a regular file\n", prog, path);
            return 2;
        }
        if (S_ISREG(st.st_mode) && (uint64_t)st.st_size < size) {
            fprintf(stderr, "%s: --file %s: has %lld bytes, less than --size %" PRIu64
                    " (use --create to write it first)\n", prog, path,
                    (long long)st.st_size, size);
            return 2;
        }
        if (!keep_cache) {
            if (rw || create)
                fsync(fd);
            posix_fadvise(fd, 0, (off_t)size, POSIX_FADV_DONTNEED);
        }
        base = mmap(NULL, size, rw ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, fd, 0);
        if (base == MAP_FAILED)
            die_errno("cannot map --file", path);
    }

    struct slice sl[MAX_THREADS];
    pthread_t tid[MAX_THREADS];
    for (long t = 0; t < threads; t++) {
        sl[t] = (struct slice){.base = base, .begin = t * slice_len,
                               .end = (t + 1) * slice_len, .a = a, .b = b, .rw = rw};
        sl[t].buf = malloc(a);
        if (!sl[t].buf) { fprintf(stderr, "%s: out of memory for -a\n", prog); return 1; }
        memset(sl[t].buf, 0, a);
    }

    double u0, s0, u1, s1;
    cpu_s(&u0, &s0);
    double w0 = now_s();
    if (threads == 1) {
        sweep(&sl[0]);
    } else {
        for (long t = 0; t < threads; t++)
            if (pthread_create(&tid[t], NULL, sweep, &sl[t])) {
                fprintf(stderr, "%s: cannot start thread %ld\n", prog, t);
                return 1;
            }
        for (long t = 0; t < threads; t++)
            pthread_join(tid[t], NULL);
    }
    if (rw && !memory && msync(base, size, MS_SYNC) < 0)
        die_errno("msync failed on", path);
    double wall = now_s() - w0;
    cpu_s(&u1, &s1);

    uint64_t sum = 0, steps = 0, expected = 0;
    for (long t = 0; t < threads; t++) {
        sum += sl[t].sum;
        steps += sl[t].steps;
        if (verifiable)
            expected += expected_sum(sl[t].begin, sl[t].end, a, b);
        free(sl[t].buf);
    }
    munmap(base, size);
    if (fd >= 0)
        close(fd);

    double user = u1 - u0, sys = s1 - s0, cpu = user + sys;
    uint64_t touched = steps * a;
    printf("mmap_sweep_version=%s\n", VERSION);
    printf("target=%s\n", memory ? "memory" : "file");
    printf("path=%s\n", memory ? "-" : path);
    printf("size=%" PRIu64 "\n", size);
    printf("a=%" PRIu64 "\n", a);
    printf("b=%" PRIu64 "\n", b);
    printf("mode=%s\n", rw ? "rw" : "read");
    printf("threads=%ld\n", threads);
    printf("steps=%" PRIu64 "\n", steps);
    printf("bytes_touched=%" PRIu64 "\n", touched);
    printf("wall_s=%.6f\n", wall);
    printf("user_s=%.6f\n", user);
    printf("sys_s=%.6f\n", sys);
    printf("cpu_s=%.6f\n", cpu);
    printf("io_idle_s=%.6f\n", wall - cpu / threads > 0 ? wall - cpu / threads : 0.0);
    printf("throughput_mib_s=%.3f\n", wall > 0 ? touched / wall / (1 << 20) : 0.0);
    printf("checksum=%" PRIu64 "\n", sum);
    if (!verifiable) {
        printf("verified=unknown\n");
    } else if (sum == expected) {
        printf("verified=yes\n");
    } else {
        printf("verified=no\n");
        fprintf(stderr, "%s: checksum %" PRIu64 " differs from the expected %" PRIu64
                " (data changed under the sweep?)\n", prog, sum, expected);
        printf("status=checksum-mismatch\n");
        return 1;
    }
    printf("status=ok\n");
    return 0;
}
