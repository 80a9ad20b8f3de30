/*
 * bench_tpe.c - the TPE benchmark behind `make bench` (bench/run.sh):
 *
 *   bench_tpe CORPUS_DIR WORK_DIR [SPM_TRAIN]
 *
 * CORPUS_DIR holds simulated cases (teller simulate --corpus N). The first
 * two thirds of the cases train, the rest are held out. For vocabularies of
 * 64 ... 2048 merges it prints the held-out reduction per step counted in
 * nodes (1 - tokens after / nodes, the paper's -83.9 % at 256) and in tokens
 * (1 - tokens after / tokens before), with and without crossing levels, and
 * the training time. Encoding speed is base tokens per second on one core
 * (the held-out steps encoded repeatedly for at least a second). When
 * SPM_TRAIN is given, SentencePiece's BPE trainer is timed on the same
 * training steps (one step a line, every base symbol one character), for
 * the same number of learned merges, one thread. Output lines are
 * "key value" or table rows; run.sh prints them.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "teller/ingest.h"
#include "teller/tpe.h"
#include "teller/tree.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Loads every *.trace.json.gz of a case directory. */
static teller_store *load_case(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return NULL;
    teller_store *st = teller_store_create();
    teller_error err;
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name);
        if (l < 8 || strcmp(de->d_name + l - 8, ".json.gz"))
            continue;
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
        if (teller_ingest_file(st, p, NULL, &err)) {
            fprintf(stderr, "bench_tpe: %s: %s\n", p, err.msg);
            closedir(d);
            teller_store_free(st);
            return NULL;
        }
    }
    closedir(d);
    if (teller_tree_build(st, NULL, &err)) {
        teller_store_free(st);
        return NULL;
    }
    return st;
}

typedef struct seqset {
    teller_tpe_seq *s;
    size_t          n;
} seqset;

static int add_steps(teller_store *st, teller_tpe_vocab *v, seqset *out)
{
    teller_tpe_ctx *c = NULL;
    teller_tpe_seq *s = NULL;
    size_t n = 0;
    teller_error err;
    if (teller_tpe_ctx_create(st, v, &c, &err) || teller_tpe_serialize_steps(c, &s, &n, &err)) {
        teller_tpe_ctx_free(c);
        return -1;
    }
    teller_tpe_ctx_free(c);
    teller_tpe_seq *g = realloc(out->s, (out->n + n + 1) * sizeof *g);
    if (!g)
        return -1;
    memcpy(g + out->n, s, n * sizeof *s);
    free(s);
    out->s = g;
    out->n += n;
    return 0;
}

static void free_set(seqset *x)
{
    for (size_t i = 0; i < x->n; i++)
        teller_tpe_seq_free(&x->s[i]);
    free(x->s);
    x->s = NULL;
    x->n = 0;
}

/* One step a line, symbol id -> one CJK character (3 bytes of UTF-8). */
static int write_spm_input(const char *path, const seqset *x)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    for (size_t k = 0; k < x->n; k++) {
        if (!x->s[k].n)
            continue;
        for (size_t i = 0; i < x->s[k].n; i++) {
            unsigned cp = 0x4E00u + x->s[k].sym[i];
            fputc((int)(0xE0 | (cp >> 12)), f);
            fputc((int)(0x80 | ((cp >> 6) & 0x3F)), f);
            fputc((int)(0x80 | (cp & 0x3F)), f);
        }
        fputc('\n', f);
    }
    return fclose(f);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: bench_tpe CORPUS_DIR WORK_DIR [SPM_TRAIN]\n");
        return 2;
    }
    const char *corpus = argv[1], *work = argv[2], *spm = argc > 3 ? argv[3] : NULL;
    DIR *d = opendir(corpus);
    if (!d) {
        fprintf(stderr, "bench_tpe: cannot open %s\n", corpus);
        return 1;
    }
    char **cases = NULL;
    size_t ncases = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (strncmp(de->d_name, "case_", 5))
            continue;
        cases = realloc(cases, (ncases + 1) * sizeof *cases);
        cases[ncases] = malloc(strlen(corpus) + strlen(de->d_name) + 2);
        sprintf(cases[ncases++], "%s/%s", corpus, de->d_name);
    }
    closedir(d);
    if (ncases < 3) {
        fprintf(stderr, "bench_tpe: need at least 3 cases in %s\n", corpus);
        return 1;
    }
    qsort(cases, ncases, sizeof *cases, cmp_str);
    size_t ntrain = ncases * 2 / 3;
    teller_store **st = calloc(ncases, sizeof *st);
    for (size_t i = 0; i < ncases; i++)
        if (!(st[i] = load_case(cases[i]))) {
            fprintf(stderr, "bench_tpe: cannot load %s\n", cases[i]);
            return 1;
        }
    printf("cases %zu train %zu heldout %zu\n", ncases, ntrain, ncases - ntrain);
    static const uint32_t vocabs[] = {64, 128, 256, 512, 1024, 2048};
    const size_t nv = sizeof vocabs / sizeof *vocabs;
    double train_s[2][6] = {{0}};
    size_t base_syms = 0;
    seqset keep_train = {0}, keep_held = {0};
    teller_tpe_vocab *keep_vocab = NULL;
    printf("curve %-6s %5s %8s %10s %10s %10s %9s %9s %9s\n", "mode", "vocab", "merges", "nodes/step",
           "before/step", "after/step", "red_nodes", "red_toks", "train_s");
    for (int cross = 1; cross >= 0; cross--) {
        for (size_t vi = 0; vi < nv; vi++) {
            teller_tpe_vocab_opts vo = teller_tpe_vocab_defaults();
            vo.cross_levels = cross;
            teller_tpe_vocab *v = teller_tpe_vocab_create(&vo);
            seqset tr = {0}, ho = {0};
            for (size_t i = 0; i < ncases; i++)
                if (add_steps(st[i], v, i < ntrain ? &tr : &ho)) {
                    fprintf(stderr, "bench_tpe: serialisation failed\n");
                    return 1;
                }
            base_syms = teller_tpe_vocab_size(v);
            teller_tpe_train_opts to = {vocabs[vi], 2, 3};
            teller_error err;
            double t0 = now_s();
            if (teller_tpe_train(v, tr.s, tr.n, &to, &err)) {
                fprintf(stderr, "bench_tpe: %s\n", err.msg);
                return 1;
            }
            train_s[cross][vi] = now_s() - t0;
            teller_tpe_encoder *e = teller_tpe_encoder_create(v);
            size_t maxn = 1;
            for (size_t k = 0; k < ho.n; k++)
                maxn = ho.s[k].n > maxn ? ho.s[k].n : maxn;
            uint32_t *buf = malloc(maxn * sizeof *buf);
            double nodes = 0, before = 0, after = 0, steps = 0;
            for (size_t k = 0; k < ho.n; k++) {
                if (!ho.s[k].n)
                    continue;
                steps++;
                nodes += (double)ho.s[k].n; /* one base token a node */
                before += (double)ho.s[k].n;
                after += (double)teller_tpe_encode_syms(e, &ho.s[k], buf);
            }
            printf("curve %-6s %5u %8zu %10.1f %10.1f %10.1f %8.1f%% %8.1f%% %9.3f\n", cross ? "cross" : "level",
                   vocabs[vi], teller_tpe_vocab_merges(v), nodes / steps, before / steps, after / steps,
                   100 * (1 - after / nodes), 100 * (1 - after / before), train_s[cross][vi]);
            free(buf);
            teller_tpe_encoder_free(e);
            if (cross && vocabs[vi] == 256) {
                keep_train = tr;
                keep_held = ho;
                keep_vocab = v;
            } else {
                free_set(&tr);
                free_set(&ho);
                teller_tpe_vocab_free(v);
            }
        }
    }
    /* encoding speed: vocabulary 256 (crossing), held-out steps, one core */
    {
        teller_tpe_encoder *e = teller_tpe_encoder_create(keep_vocab);
        size_t maxn = 1;
        for (size_t k = 0; k < keep_held.n; k++)
            maxn = keep_held.s[k].n > maxn ? keep_held.s[k].n : maxn;
        uint32_t *buf = malloc(maxn * sizeof *buf);
        double tokens = 0, t0 = now_s(), t = 0;
        size_t sink = 0;
        do {
            for (size_t k = 0; k < keep_held.n; k++) {
                sink += teller_tpe_encode_syms(e, &keep_held.s[k], buf);
                tokens += (double)keep_held.s[k].n;
            }
            t = now_s() - t0;
        } while (t < 1.0);
        printf("encode_tokens_per_s %.0f\n", tokens / t);
        printf("encode_sink %zu\n", sink % 10);
        free(buf);
        teller_tpe_encoder_free(e);
    }
    /* SentencePiece on the same training steps, same learned merges */
    size_t ntok = 0;
    for (size_t k = 0; k < keep_train.n; k++)
        ntok += keep_train.s[k].n;
    /* distinct training steps (the trainer counts identical ones once) */
    size_t distinct = 0;
    {
        uint64_t *h = malloc((keep_train.n + 1) * sizeof *h);
        for (size_t k = 0; k < keep_train.n; k++) {
            uint64_t x = 1469598103934665603ull;
            for (size_t i = 0; i < keep_train.s[k].n; i++) {
                x = (x ^ keep_train.s[k].sym[i]) * 1099511628211ull;
                x = (x ^ keep_train.s[k].depth[i]) * 1099511628211ull;
            }
            h[k] = x;
        }
        for (size_t k = 0; k < keep_train.n; k++) {
            int seen = 0;
            for (size_t j = 0; j < k && !seen; j++)
                seen = h[j] == h[k];
            distinct += !seen;
        }
        free(h);
    }
    printf("train_steps %zu train_tokens %zu base_symbols %zu distinct_steps %zu\n", keep_train.n, ntok, base_syms,
           distinct);
    if (spm) {
        char in[4096], cmd[12288];
        snprintf(in, sizeof in, "%s/tpe_spm_input.txt", work);
        if (write_spm_input(in, &keep_train)) {
            fprintf(stderr, "bench_tpe: cannot write %s\n", in);
            return 1;
        }
        static const uint32_t spm_vocabs[] = {256, 1024};
        for (size_t i = 0; i < 2; i++) {
            size_t vs = base_syms + spm_vocabs[i] + 1; /* alphabet + merges + <unk> */
            snprintf(cmd, sizeof cmd,
                     "'%s' --input='%s' --model_prefix='%s/tpe_spm_%u' --model_type=bpe --vocab_size=%zu "
                     "--character_coverage=1.0 --max_sentence_length=100000000 --add_dummy_prefix=false "
                     "--split_by_whitespace=false --bos_id=-1 --eos_id=-1 --hard_vocab_limit=false "
                     "--num_threads=1 --minloglevel=2 >'%s/tpe_spm_%u.log' 2>&1",
                     spm, in, work, spm_vocabs[i], vs, work, spm_vocabs[i]);
            double t0 = now_s();
            int rc = system(cmd);
            double ts = now_s() - t0;
            size_t vi = spm_vocabs[i] == 256 ? 2 : 4;
            if (rc)
                printf("spm vocab %u failed (exit %d), see %s/tpe_spm_%u.log\n", spm_vocabs[i], rc, work,
                       spm_vocabs[i]);
            else
                printf("spm vocab %u spm_s %.3f teller_s %.3f speedup %.1f\n", spm_vocabs[i], ts, train_s[1][vi],
                       ts / (train_s[1][vi] > 1e-6 ? train_s[1][vi] : 1e-6));
        }
    }
    free_set(&keep_train);
    free_set(&keep_held);
    teller_tpe_vocab_free(keep_vocab);
    for (size_t i = 0; i < ncases; i++) {
        teller_store_free(st[i]);
        free(cases[i]);
    }
    free(st);
    free(cases);
    return 0;
}
