/*
 * bench_inflate.c - zlib against libdeflate on .json.gz traces, the choice
 * behind the Kineto reader's whole-file inflate (src/ingest/kineto.c).
 *
 * For each file: zlib's gzread through a 4 MiB buffer (as the streaming
 * reader reads) and libdeflate's one-shot gzip decompression of the whole
 * file, read into memory first (as the reader does), each the best of 5
 * runs, in MB/s of inflated output (MB = 10^6 bytes), one line a file:
 *   inflate FILE in_bytes N out_bytes N zlib_mb_s X libdeflate_mb_s Y ratio R
 * usage: bench_inflate FILE.json.gz...
 */
#include <libdeflate.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* seconds to inflate path with gzread, or -1; the inflated size in *out */
static double zlib_run(const char *path, size_t *out)
{
    double t0 = now_s();
    gzFile g = gzopen(path, "rb");
    char *buf = malloc(4u << 20);
    if (!g || !buf) {
        if (g)
            gzclose(g);
        free(buf);
        return -1;
    }
    gzbuffer(g, 1u << 20);
    size_t total = 0;
    int n;
    while ((n = gzread(g, buf, 4u << 20)) > 0)
        total += (size_t)n;
    gzclose(g);
    free(buf);
    *out = total;
    return n < 0 ? -1 : now_s() - t0;
}

/* seconds to read path and inflate it whole with libdeflate, or -1 */
static double libdeflate_run(const char *path, size_t expect)
{
    double t0 = now_s();
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *in = malloc((size_t)n), *out = malloc(expect ? expect : 1);
    int ok = in && out && fread(in, 1, (size_t)n, f) == (size_t)n;
    fclose(f);
    struct libdeflate_decompressor *d = ok ? libdeflate_alloc_decompressor() : NULL;
    size_t got = 0;
    ok = d && libdeflate_gzip_decompress(d, in, (size_t)n, out, expect, &got) == LIBDEFLATE_SUCCESS && got == expect;
    libdeflate_free_decompressor(d);
    free(in);
    free(out);
    return ok ? now_s() - t0 : -1;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE.json.gz...\n", argv[0]);
        return 2;
    }
    for (int k = 1; k < argc; k++) {
        double bz = 1e30, bd = 1e30;
        size_t out = 0;
        for (int rep = 0; rep < 5; rep++) {
            double z = zlib_run(argv[k], &out), d = libdeflate_run(argv[k], out);
            if (z < 0 || d < 0) {
                fprintf(stderr, "bench_inflate: %s: cannot inflate\n", argv[k]);
                return 1;
            }
            if (z < bz)
                bz = z;
            if (d < bd)
                bd = d;
        }
        FILE *f = fopen(argv[k], "rb");
        long in = 0;
        if (f) {
            fseek(f, 0, SEEK_END);
            in = ftell(f);
            fclose(f);
        }
        printf("inflate %s in_bytes %ld out_bytes %zu zlib_mb_s %.1f libdeflate_mb_s %.1f ratio %.2f\n", argv[k], in,
               out, (double)out / 1e6 / bz, (double)out / 1e6 / bd, bz / bd);
    }
    return 0;
}
