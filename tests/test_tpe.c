/*
 * test_tpe.c - Trace Pair Encoding and causal-context slices: the
 * vocabulary file and its damage, training choices, encode/decode round
 * trips on real and simulated traces, agreement of the rank-ordered encoder
 * with merges applied one after another, odd steps (empty, one node, depth
 * 1000), duration buckets, and slices.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "teller/ingest.h"
#include "teller/sim.h"
#include "teller/slice.h"
#include "teller/tpe.h"
#include "teller/tree.h"

/* ---- helpers ---- */

/* FNV-1a 64, the vocabulary file's hash (tpe.h). */
static uint64_t fnv1a(const char *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

static int seq_same(const teller_tpe_seq *a, const teller_tpe_seq *b)
{
    if (a->n != b->n)
        return 0;
    for (size_t i = 0; i < a->n; i++)
        if (a->sym[i] != b->sym[i] || a->parent[i] != b->parent[i] || a->depth[i] != b->depth[i] ||
            a->dur_ns[i] != b->dur_ns[i] || a->event[i] != b->event[i] || a->bucket[i] != b->bucket[i])
            return 0;
    return 1;
}

/* The textbook definition: every merge in rank order, applied left to right
 * over the whole sequence after repeat runs (the encoder's repeat tokens as
 * they are, every other token as its base tokens), a symbol pairing as
 * what it merges as (a name the merges do not know as its layer). The
 * encoder must give the same symbols. */
static size_t naive_encode(const teller_tpe_vocab *v, const teller_tpe_seq *b, const teller_tpe_seq *enc, uint32_t *out)
{
    size_t n = 0;
    uint32_t *par = malloc((b->n ? b->n : 1) * sizeof *par);
    uint16_t *dep = malloc((b->n ? b->n : 1) * sizeof *dep);
    for (size_t t = 0; t < enc->n; t++)
        for (uint32_t i = enc->first[t]; i < enc->first[t] + (enc->unit[t] ? 1 : enc->len[t]); i++, n++) {
            out[n] = enc->unit[t] ? enc->sym[t] : b->sym[i];
            par[n] = b->parent[i];
            dep[n] = b->depth[i];
        }
    int cross = teller_tpe_vocab_options(v).cross_levels;
    for (uint32_t id = 0; id < teller_tpe_vocab_size(v); id++) {
        uint32_t l, r;
        if (teller_tpe_vocab_symbol(v, id, NULL, &l, &r) != 1)
            continue;
        size_t w = 0;
        for (size_t i = 0; i < n; i++) {
            if (i + 1 < n && teller_tpe_vocab_merges_as(v, out[i]) == l && teller_tpe_vocab_merges_as(v, out[i + 1]) == r &&
                (cross || (par[i] == par[i + 1] && dep[i] == dep[i + 1]))) {
                out[w] = id;
                par[w] = par[i];
                dep[w] = dep[i];
                w++;
                i++;
                continue;
            }
            out[w] = out[i];
            par[w] = par[i];
            dep[w] = dep[i];
            w++;
        }
        n = w;
    }
    free(par);
    free(dep);
    return n;
}

/* Trains on seqs, then checks every sequence: decode(encode(x)) == x, the
 * encoder agrees with naive_encode, spans tile the base. Returns total
 * tokens after encoding. */
static size_t roundtrip_all(teller_tpe_vocab *v, teller_tpe_seq *seqs, size_t n)
{
    teller_error err;
    teller_error_clear(&err);
    teller_tpe_seq enc, dec;
    memset(&enc, 0, sizeof enc);
    memset(&dec, 0, sizeof dec);
    size_t after = 0, bad = 0, mismatch = 0;
    for (size_t k = 0; k < n; k++) {
        if (teller_tpe_encode(v, &seqs[k], &enc, &err) != TELLER_OK) {
            bad++;
            continue;
        }
        after += enc.n;
        if (teller_tpe_decode(v, &enc, &dec, &err) != TELLER_OK || !seq_same(&dec, &seqs[k]))
            bad++;
        uint32_t *ref = malloc((seqs[k].n + 1) * sizeof *ref);
        size_t rn = naive_encode(v, &seqs[k], &enc, ref);
        if (rn != enc.n || (rn && memcmp(ref, enc.sym, rn * sizeof *ref)))
            mismatch++;
        free(ref);
        size_t pos = 0;
        for (size_t t = 0; t < enc.n; t++) {
            if (enc.first[t] != pos)
                bad++;
            pos += enc.len[t];
        }
        if (pos != seqs[k].n)
            bad++;
    }
    CHECK_EQ_INT(bad, 0);
    CHECK_EQ_INT(mismatch, 0);
    teller_tpe_seq_free(&enc);
    teller_tpe_seq_free(&dec);
    return after;
}

static void free_seqs(teller_tpe_seq *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        teller_tpe_seq_free(&s[i]);
    free(s);
}

/* A base sequence by hand: node i has depth d[i]; parents follow depth. */
static void hand_seq(teller_tpe_vocab *v, const char *const *names, const uint16_t *d, size_t nodes,
                     teller_tpe_seq *s)
{
    teller_error err;
    CHECK_EQ_INT(teller_tpe_seq_alloc(s, 2 * nodes, &err), TELLER_OK);
    uint32_t last_at[64];
    for (size_t i = 0; i < nodes; i++) {
        uint32_t par = d[i] ? last_at[d[i] - 1] : TELLER_NONE;
        last_at[d[i]] = (uint32_t)(2 * i);
        for (int k = 0; k < 2; k++) {
            size_t t = 2 * i + (size_t)k;
            s->sym[t] = teller_tpe_vocab_intern(v, k ? names[i] : "KERNEL", k ? strlen(names[i]) : 6);
            s->parent[t] = par;
            s->depth[t] = d[i];
            s->dur_ns[t] = k ? 0 : 10;
            s->first[t] = (uint32_t)t;
            s->len[t] = 1;
            s->event[t] = TELLER_NONE;
        }
    }
}

static teller_store *load_files(const char *const *paths, size_t n)
{
    teller_store *st = teller_store_create();
    teller_error err;
    teller_error_clear(&err);
    for (size_t i = 0; i < n; i++)
        CHECK_EQ_INT(teller_ingest_file(st, paths[i], NULL, &err), TELLER_OK);
    CHECK_EQ_INT(teller_tree_build(st, NULL, &err), TELLER_OK);
    return st;
}

static teller_store *load_case(const char *dir, int world)
{
    char p[16][700];
    const char *pp[16];
    for (int r = 0; r < world && r < 16; r++) {
        snprintf(p[r], sizeof p[r], "%s/rank%d.trace.json.gz", dir, r);
        pp[r] = p[r];
    }
    return load_files(pp, (size_t)world);
}

static void serialize(teller_store *st, teller_tpe_vocab *v, teller_tpe_seq **seqs, size_t *n)
{
    teller_error err;
    teller_error_clear(&err);
    teller_tpe_ctx *c = NULL;
    *seqs = NULL;
    *n = 0;
    CHECK_EQ_INT(teller_tpe_ctx_create(st, v, &c, &err), TELLER_OK);
    if (c)
        CHECK_EQ_INT(teller_tpe_serialize_steps(c, seqs, n, &err), TELLER_OK);
    teller_tpe_ctx_free(c);
}

static void simulate(const char *dir, uint64_t seed, int steps)
{
    teller_sim_opts o = teller_sim_defaults();
    o.nodes = 1;
    o.gpus_per_node = 2;
    o.tp = 2;
    o.pp = 1;
    o.steps = steps;
    o.seed = seed;
    o.faults = 1u << TELLER_FAULT_KERNEL_REGRESSION;
    teller_error err;
    teller_error_clear(&err);
    CHECK_EQ_INT(teller_simulate(&o, dir, &err), TELLER_OK);
}


/* ---- tests ---- */

static void test_tpe_most_frequent_pair_first(void)
{
    teller_tpe_vocab_opts vo = {0, 1, 0};
    teller_tpe_vocab *v = teller_tpe_vocab_create(&vo);
    /* flat: KERNEL a KERNEL b KERNEL a KERNEL c KERNEL a: (KERNEL, a) x3 is
     * the most frequent (no two siblings in a row alike: no repeat run) */
    const char *names[] = {"a", "b", "a", "c", "a"};
    uint16_t d[] = {0, 0, 0, 0, 0};
    teller_tpe_seq s;
    memset(&s, 0, sizeof s);
    hand_seq(v, names, d, 5, &s);
    teller_tpe_train_opts to = {1, 2, 0};
    teller_error err;
    uint32_t first_merge = (uint32_t)teller_tpe_vocab_size(v);
    CHECK_EQ_INT(teller_tpe_train(v, &s, 1, &to, &err), TELLER_OK);
    CHECK_EQ_INT(teller_tpe_vocab_merges(v), 1);
    uint32_t l = 0, r = 0;
    CHECK_EQ_INT(teller_tpe_vocab_symbol(v, first_merge, NULL, &l, &r), 1);
    CHECK_EQ_INT(l, teller_tpe_vocab_intern(v, "KERNEL", 6));
    CHECK_EQ_INT(r, teller_tpe_vocab_intern(v, "a", 1));
    /* more merges: stops at min_count (nothing repeats twice once merged) */
    to.vocab = 100;
    CHECK_EQ_INT(teller_tpe_train(v, &s, 1, &to, &err), TELLER_OK);
    teller_tpe_seq enc;
    memset(&enc, 0, sizeof enc);
    CHECK_EQ_INT(teller_tpe_encode(v, &s, &enc, &err), TELLER_OK);
    CHECK(enc.n < s.n);
    /* merged tokens keep the first token's parent and depth and sum durations */
    int64_t total = 0;
    for (size_t t = 0; t < enc.n; t++)
        total += enc.dur_ns[t];
    CHECK_EQ_INT(total, 50);
    roundtrip_all(v, &s, 1);
    teller_tpe_seq_free(&enc);
    teller_tpe_seq_free(&s);
    teller_tpe_vocab_free(v);
    /* a tie (every pair once): the lower left id wins, then the lower right id */
    v = teller_tpe_vocab_create(&vo);
    const char *tie[] = {"a", "b"};
    hand_seq(v, tie, d, 2, &s); /* KERNEL=R a=R+1 KERNEL b=R+2 (R repeat symbols first): (R,R+1) (R+1,R) (R,R+2) */
    teller_tpe_train_opts one = {1, 1, 0};
    CHECK_EQ_INT(teller_tpe_train(v, &s, 1, &one, &err), TELLER_OK);
    CHECK_EQ_INT(teller_tpe_vocab_symbol(v, TELLER_TPE_REPEATS + 3, NULL, &l, &r), 1);
    CHECK(l == TELLER_TPE_REPEATS && r == TELLER_TPE_REPEATS + 1);
    teller_tpe_seq_free(&s);
    teller_tpe_vocab_free(v);
}

static void test_tpe_no_cross_keeps_levels(void)
{
    /* parent with children: with cross off no token may span two levels (no
     * two siblings in a row alike: no repeat run) */
    const char *names[] = {"step", "op", "k1", "op", "k2", "op", "k1", "op", "k3"};
    uint16_t d[] = {0, 1, 2, 1, 2, 1, 2, 1, 2};
    for (int cross = 0; cross <= 1; cross++) {
        teller_tpe_vocab_opts vo = {0, cross, 0};
        teller_tpe_vocab *v = teller_tpe_vocab_create(&vo);
        teller_tpe_seq s, enc;
        memset(&s, 0, sizeof s);
        memset(&enc, 0, sizeof enc);
        hand_seq(v, names, d, 9, &s);
        teller_tpe_train_opts to = {50, 2, 0};
        teller_error err;
        CHECK_EQ_INT(teller_tpe_train(v, &s, 1, &to, &err), TELLER_OK);
        CHECK_EQ_INT(teller_tpe_encode(v, &s, &enc, &err), TELLER_OK);
        int spans_levels = 0;
        for (size_t t = 0; t < enc.n; t++) /* merged tokens; a repeat token covers whole subtrees */
            for (uint32_t i = enc.first[t]; i < enc.first[t] + enc.len[t] && !enc.unit[t]; i++)
                spans_levels |= enc.base_ddepth[i] != 0 || s.parent[i] != s.parent[enc.first[t]];
        CHECK_EQ_INT(spans_levels, cross);
        roundtrip_all(v, &s, 1);
        teller_tpe_seq_free(&enc);
        teller_tpe_seq_free(&s);
        teller_tpe_vocab_free(v);
    }
}

static void test_tpe_vocab_file_and_damage(void)
{
    teller_tpe_vocab *v = teller_tpe_vocab_create(NULL);
    const char *names[] = {"a b", "x\\y", "a b", "x\\y", "a b", "tab\there"};
    uint16_t d[] = {0, 0, 0, 0, 0, 0};
    teller_tpe_seq s;
    memset(&s, 0, sizeof s);
    hand_seq(v, names, d, 6, &s);
    teller_tpe_train_opts to = {8, 2, 0};
    teller_error err;
    teller_error_clear(&err);
    CHECK_EQ_INT(teller_tpe_train(v, &s, 1, &to, &err), TELLER_OK);
    char dir[] = "/tmp/teller_tpe_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[600], bad[600];
    snprintf(path, sizeof path, "%s/v.tpe", dir);
    snprintf(bad, sizeof bad, "%s/bad.tpe", dir);
    CHECK_EQ_INT(teller_tpe_vocab_save(v, path, &err), TELLER_OK);
    teller_tpe_vocab *w = NULL;
    CHECK_EQ_INT(teller_tpe_vocab_load(path, &w, &err), TELLER_OK);
    CHECK(w != NULL);
    if (w) {
        CHECK_EQ_INT(teller_tpe_vocab_size(w), teller_tpe_vocab_size(v));
        CHECK_EQ_INT(teller_tpe_vocab_merges(w), teller_tpe_vocab_merges(v));
        for (uint32_t id = 0; id < teller_tpe_vocab_size(v); id++) {
            const char *ta = NULL, *tb = NULL;
            uint32_t la = 0, ra = 0, lb = 1, rb = 1;
            int ka = teller_tpe_vocab_symbol(v, id, &ta, &la, &ra), kb = teller_tpe_vocab_symbol(w, id, &tb, &lb, &rb);
            CHECK_EQ_INT(ka, kb);
            if (ka == 0 && kb == 0)
                CHECK(!strcmp(ta, tb));
            else
                CHECK(la == lb && ra == rb);
        }
        roundtrip_all(w, &s, 1);
    }
    teller_tpe_vocab_free(w);
    FILE *f = fopen(path, "rb");
    char data[8192];
    size_t n = f ? fread(data, 1, sizeof data, f) : 0;
    if (f)
        fclose(f);
    CHECK(n > 40 && n < sizeof data);
    /* truncated at every length: an error, never a crash; a cut file is TRUNCATED */
    int all_err = 1;
    for (size_t cut = 0; cut < n; cut++) {
        teller_tpe_vocab *x = NULL;
        teller_status st = teller_tpe_vocab_parse(data, cut, "cut", &x, &err);
        all_err &= st != TELLER_OK && x == NULL;
        teller_tpe_vocab_free(x);
    }
    CHECK(all_err);
    CHECK_EQ_INT(teller_tpe_vocab_parse(data, n / 2, "cut", &w, &err), TELLER_ERR_TRUNCATED);
    CHECK(strstr(err.msg, "truncated") != NULL);
    /* other version */
    char other[8192];
    memcpy(other, data, n);
    other[17] = '7';
    CHECK_EQ_INT(teller_tpe_vocab_parse(other, n, "v7", &w, &err), TELLER_ERR_FORMAT);
    CHECK(strstr(err.msg, "version 7 is not supported") != NULL);
    /* versions 2 (buckets in TAG symbols, no repeat symbols) and 3 (TAG and
     * NAME tokens a node): refused, saying what to do */
    other[17] = '2';
    CHECK_EQ_INT(teller_tpe_vocab_parse(other, n, "v2", &w, &err), TELLER_ERR_FORMAT);
    CHECK(strstr(err.msg, "learn it again") != NULL);
    other[17] = '3';
    CHECK_EQ_INT(teller_tpe_vocab_parse(other, n, "v3", &w, &err), TELLER_ERR_FORMAT);
    CHECK(strstr(err.msg, "one token per node") != NULL && strstr(err.msg, "learn it again") != NULL);
    /* one flipped byte in a symbol: the hash says corrupt */
    memcpy(other, data, n);
    char *sym = strstr(other, "\nb ");
    CHECK(sym != NULL);
    if (sym)
        sym[3] ^= 1;
    CHECK_EQ_INT(teller_tpe_vocab_parse(other, n, "flip", &w, &err), TELLER_ERR_FORMAT);
    CHECK(strstr(err.msg, "corrupt") != NULL);
    /* not a vocabulary at all */
    CHECK_EQ_INT(teller_tpe_vocab_parse("{\"json\": 1}\n", 12, "json", &w, &err), TELLER_ERR_FORMAT);
    f = fopen(bad, "wb");
    if (f) {
        fwrite(data, 1, n - 5, f);
        fclose(f);
    }
    CHECK_EQ_INT(teller_tpe_vocab_load(bad, &w, &err), TELLER_ERR_TRUNCATED);
    CHECK_EQ_INT(teller_tpe_vocab_load("/nonexistent/v.tpe", &w, &err), TELLER_ERR_IO);
    teller_tpe_seq_free(&s);
    teller_tpe_vocab_free(v);
    rm_rf(dir);
}

/* A name that too few runs hold merges as its layer: training learns the
 * merges on the layer symbol, a name no training run showed takes them
 * too, decoding gives every name back, and the file keeps which names the
 * merges know ('u' lines); a 'u' line with no layer symbol before it is
 * refused. */
static void test_tpe_rare_names_merge_as_layer(void)
{
    teller_tpe_vocab *v = teller_tpe_vocab_create(NULL);
    teller_error err;
    teller_error_clear(&err);
    /* four runs: "KERNEL/gemm" then a name of the run's own, then "KERNEL/norm" */
    const char *own[4] = {"KERNEL/a", "KERNEL/b", "KERNEL/c", "KERNEL/d"};
    teller_tpe_seq s[5];
    uint32_t run[4] = {0, 1, 2, 3};
    memset(s, 0, sizeof s);
    for (int k = 0; k < 5; k++) {
        const char *names[3] = {"KERNEL/gemm", k < 4 ? own[k] : "KERNEL/never_seen", "KERNEL/norm"};
        CHECK_EQ_INT(teller_tpe_seq_alloc(&s[k], 3, &err), TELLER_OK);
        for (int i = 0; i < 3; i++) {
            s[k].sym[i] = teller_tpe_vocab_intern(v, names[i], strlen(names[i]));
            s[k].parent[i] = TELLER_NONE;
            s[k].first[i] = (uint32_t)i;
            s[k].len[i] = 1;
            s[k].event[i] = TELLER_NONE;
            s[k].dur_ns[i] = 10 * k + i;
        }
    }
    uint32_t kernel = teller_tpe_vocab_intern(v, "KERNEL", 6);
    teller_tpe_train_opts to = teller_tpe_train_defaults();
    to.vocab = 8;
    CHECK_EQ_INT(teller_tpe_train_runs(v, s, NULL, run, 4, &to, &err), TELLER_OK);
    CHECK_EQ_INT(teller_tpe_vocab_merges_as(v, s[0].sym[0]), s[0].sym[0]); /* four runs: known */
    CHECK_EQ_INT(teller_tpe_vocab_merges_as(v, s[0].sym[1]), kernel);      /* one run: its layer */
    CHECK_EQ_INT(teller_tpe_vocab_merges_as(v, s[4].sym[1]), kernel);      /* never trained on */
    CHECK_EQ_INT(teller_tpe_vocab_merges_as(v, kernel), kernel);
    CHECK_EQ_INT(teller_tpe_vocab_merges(v), 2); /* gemm, KERNEL and norm joined in two merges */
    /* every step, the unseen name's too, is one token and decodes exactly */
    size_t after = roundtrip_all(v, s, 5);
    CHECK_EQ_INT(after, 5);
    /* the file keeps which names the merges know */
    teller_tpe_vocab *w = NULL;
    char *text = NULL, *z = NULL;
    size_t n = 0;
    CHECK_EQ_INT(teller_tpe_vocab_write(v, &text, &n, &err), TELLER_OK);
    if (text && (z = malloc(n + 1))) {
        memcpy(z, text, n);
        z[n] = 0;
        CHECK(strstr(z, "\nu KERNEL/a\n") != NULL && strstr(z, "\nb KERNEL/gemm\n") != NULL);
        free(z);
    }
    CHECK_EQ_INT(teller_tpe_vocab_parse(text, n, "rare", &w, &err), TELLER_OK);
    if (w) {
        for (uint32_t id = 0; id < teller_tpe_vocab_size(v); id++)
            CHECK_EQ_INT(teller_tpe_vocab_merges_as(w, id), teller_tpe_vocab_merges_as(v, id));
        CHECK_EQ_INT(roundtrip_all(w, s, 5), 5);
    }
    teller_tpe_vocab_free(w);
    free(text);
    /* 'u' needs an earlier layer symbol to merge as */
    const char *bad = "teller-tpe-vocab 4\noptions buckets=1 cross=1 frames=0\nsymbols 1\nu KERNEL/a\n";
    char buf[256];
    size_t bl = strlen(bad);
    memcpy(buf, bad, bl);
    bl += (size_t)snprintf(buf + bl, sizeof buf - bl, "end %016llx\n", (unsigned long long)fnv1a(buf, bl));
    w = NULL;
    CHECK_EQ_INT(teller_tpe_vocab_parse(buf, bl, "u", &w, &err), TELLER_ERR_FORMAT);
    CHECK(w == NULL && strstr(err.msg, "layer symbol") != NULL);
    for (int k = 0; k < 5; k++)
        teller_tpe_seq_free(&s[k]);
    teller_tpe_vocab_free(v);
}

/* Every shared real trace: serialised, learned on together, and each step
 * decoded back exactly, with frames left out and crossing levels (the
 * defaults), and with frames kept inside levels. */
static void test_tpe_real_traces_roundtrip(void)
{
    const char *files[] = {
        "tracelens/inference/vllm_decode_full/graph_execution.json.gz",
        "tracelens/inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz",
        "tracelens/inference/sglang_prefilldecode/sglang_Qwen3-8B_prefilldecode.json.gz",
        "tracelens/b200/eager_trace.json.gz",
        "tracelens/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
        "tracelens/mi300/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
        "hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz",
        "hta/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz",
        "hta/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz",
        "hta/critical_path/cuda_event_sync/event_sync_trace.json.gz",
        "hta/critical_path/cuda_event_sync_multi_stream/event_sync_trace.json.gz",
        "hta/critical_path/simple_add/benchmark_result_493459_1694039959_trace.json.gz",
        "hta/execution_trace/benchmark_simple_add_trace.json.gz",
        "hta/nccl_parser_config/nccl_data.json.gz",
        "hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
        "hta/trace_compare/base/base.json.gz",
        "hta/trace_compare/test/test.json.gz",
        "hta/trace_file_list/inference_rank_1.json.gz",
        "hta/trace_filter/sampled_rank-0.json.gz",
        "hta/trace_filter/sampled_rank-1.json.gz",
        "hta/triton_example/triton_example.json.gz",
        "nsys-ai/h100_2gpu_1s.sqlite",
        "nsys-ai/mfu_2gpu_after.sqlite",
        "nsys-ai/mfu_2gpu_before.sqlite",
        "nsys-ai/mock.sqlite",
    };
    for (int cross = 0; cross <= 1; cross++) {
        teller_tpe_vocab_opts vo = {1, cross, !cross};
        teller_tpe_vocab *v = teller_tpe_vocab_create(&vo);
        teller_tpe_seq *all = NULL;
        size_t nall = 0, before = 0;
        for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
            const char *p = shared_path(files[i]);
            teller_store *st = load_files(&p, 1);
            teller_tpe_seq *s = NULL;
            size_t n = 0;
            serialize(st, v, &s, &n);
            CHECK(n > 0);
            /* serialisation: one "TAG/NAME" token a node, parents earlier and one level up */
            int shape_ok = 1;
            for (size_t k = 0; k < n; k++) {
                for (size_t t = 0; t < s[k].n; t++) {
                    uint32_t pa = s[k].parent[t];
                    const char *text = NULL;
                    shape_ok &= teller_tpe_vocab_symbol(v, s[k].sym[t], &text, NULL, NULL) == 0 &&
                                strchr(text, '/') != NULL;
                    shape_ok &= pa == TELLER_NONE ? s[k].depth[t] == 0
                                                  : (pa < t && s[k].depth[pa] + 1 == s[k].depth[t]);
                }
            }
            CHECK(shape_ok);
            teller_tpe_seq *g = realloc(all, (nall + n) * sizeof *g);
            CHECK(g != NULL);
            if (g) {
                all = g;
                memcpy(all + nall, s, n * sizeof *s);
                nall += n;
            }
            free(s);
            teller_store_free(st);
        }
        for (size_t k = 0; k < nall; k++)
            before += all[k].n;
        teller_tpe_train_opts to = {256, 2, 3};
        teller_error err;
        CHECK_EQ_INT(teller_tpe_train(v, all, nall, &to, &err), TELLER_OK);
        CHECK(teller_tpe_vocab_merges(v) > 100);
        size_t after = roundtrip_all(v, all, nall);
        CHECK(after * 2 < before); /* these repeat: at least half the tokens go */
        free_seqs(all, nall);
        teller_tpe_vocab_free(v);
    }
}

static void test_tpe_simulated_heldout_roundtrip(void)
{
    char dir[] = "/tmp/teller_tpe_sim_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char a[100], b[100];
    snprintf(a, sizeof a, "%s/a", dir);
    snprintf(b, sizeof b, "%s/b", dir);
    simulate(a, 11, 6);
    simulate(b, 12, 6);
    teller_tpe_vocab *v = teller_tpe_vocab_create(NULL); /* crossing levels, as in the paper */
    teller_store *sa = load_case(a, 2), *sb = load_case(b, 2);
    teller_tpe_seq *ta = NULL, *tb = NULL;
    size_t na = 0, nb = 0;
    serialize(sa, v, &ta, &na);
    teller_tpe_train_opts to = {256, 2, 3};
    teller_error err;
    CHECK_EQ_INT(teller_tpe_train(v, ta, na, &to, &err), TELLER_OK);
    serialize(sb, v, &tb, &nb); /* held out: its new names get ids, never merge */
    CHECK_EQ_INT(nb, 12);
    size_t nodes = 0;
    for (size_t k = 0; k < nb; k++)
        nodes += tb[k].n;
    size_t after = roundtrip_all(v, tb, nb);
    CHECK(after < nodes / 2);
    /* the step's tokens point back to its events */
    teller_tpe_seq enc;
    memset(&enc, 0, sizeof enc);
    CHECK_EQ_INT(teller_tpe_encode(v, &tb[0], &enc, &err), TELLER_OK);
    const teller_events *ev = teller_store_events(sb);
    int ok = 1;
    for (size_t t = 0; t < enc.n; t++)
        for (uint32_t i = enc.first[t]; i < enc.first[t] + enc.len[t]; i++)
            ok &= enc.base_event[i] < ev->n && ev->step[enc.base_event[i]] == teller_store_steps(sb)[0].step;
    CHECK(ok);
    teller_tpe_seq_free(&enc);
    free_seqs(ta, na);
    free_seqs(tb, nb);
    teller_store_free(sa);
    teller_store_free(sb);
    teller_tpe_vocab_free(v);
    rm_rf(dir);
}

/* A hand-made store: one rank, a step marker holding `depth` nested aten
 * ops, plus `flat` sibling launch calls of which the last is 10x slower. */
static teller_store *hand_store(int depth, int flat, int marker)
{
    teller_store *st = teller_store_create();
    teller_source src;
    memset(&src, 0, sizeof src);
    src.rank = 0;
    src.node = 0;
    src.pid = 1;
    src.path = teller_store_intern(st, "hand", 4);
    uint16_t s = (uint16_t)teller_store_add_source(st, &src);
    int64_t span = 10000000;
    if (marker) {
        teller_event_row m = {0, span, teller_store_intern(st, "ProfilerStep#3", 14), TELLER_LAYER_ENGINE, 0, s, 1, 1, 0,
                              TELLER_NONE};
        teller_store_add_event(st, &m);
    }
    for (int d = 0; d < depth; d++) {
        teller_event_row r = {1 + d, span - 2 - 2 * d, teller_store_intern(st, "aten::nest", 10), TELLER_LAYER_BACKEND, 0,
                              s, 1, 1, 0, TELLER_NONE};
        teller_store_add_event(st, &r);
    }
    for (int i = 0; i < flat; i++) {
        teller_event_row r = {span / 2 + 100 * i, i + 1 == flat ? 90 : 9,
                              teller_store_intern(st, "cudaLaunchKernel", 16), TELLER_LAYER_RUNTIME, 0, s, 1, 1, 0,
                              TELLER_NONE};
        teller_store_add_event(st, &r);
    }
    teller_error err;
    teller_error_clear(&err);
    CHECK_EQ_INT(teller_tree_build(st, NULL, &err), TELLER_OK);
    return st;
}

static void test_tpe_odd_steps_empty_single_deep(void)
{
    teller_error err;
    teller_error_clear(&err);
    /* empty sequence: trains to nothing, encodes to nothing, decodes back */
    teller_tpe_vocab *v = teller_tpe_vocab_create(NULL);
    teller_tpe_seq empty, enc, dec;
    memset(&empty, 0, sizeof empty);
    memset(&enc, 0, sizeof enc);
    memset(&dec, 0, sizeof dec);
    CHECK_EQ_INT(teller_tpe_seq_alloc(&empty, 0, &err), TELLER_OK);
    teller_tpe_train_opts to = {64, 2, 0};
    CHECK_EQ_INT(teller_tpe_train(v, &empty, 1, &to, &err), TELLER_OK);
    CHECK_EQ_INT(teller_tpe_encode(v, &empty, &enc, &err), TELLER_OK);
    CHECK_EQ_INT(enc.n, 0);
    CHECK_EQ_INT(teller_tpe_decode(v, &enc, &dec, &err), TELLER_OK);
    CHECK_EQ_INT(dec.n, 0);
    /* single node: the marker alone */
    teller_store *one = hand_store(0, 0, 1);
    teller_tpe_seq *s = NULL;
    size_t n = 0;
    serialize(one, v, &s, &n);
    CHECK_EQ_INT(n, 1);
    if (n == 1) {
        CHECK_EQ_INT(s[0].n, 1);
        CHECK(teller_tpe_train(v, s, 1, &to, &err) == TELLER_OK);
        roundtrip_all(v, s, 1);
        char text[64];
        teller_tpe_symbol_text(v, s[0].sym[0], text, sizeof text);
        CHECK(!strcmp(text, "ENGINE/step")); /* a step annotation is "step", whatever its number */
    }
    free_seqs(s, n);
    teller_store_free(one);
    /* depth 1000, twice (two identical steps would dedupe: use two stores) */
    teller_store *deep = hand_store(1000, 0, 1);
    serialize(deep, v, &s, &n);
    CHECK_EQ_INT(n, 1);
    if (n == 1) {
        CHECK_EQ_INT(s[0].n, 1001);
        CHECK_EQ_INT(s[0].depth[1000], 1000);
        char tag[64];
        teller_tpe_symbol_text(v, s[0].sym[1000], tag, sizeof tag);
        CHECK(!strcmp(tag, "BACKEND/aten::nest"));
        CHECK_EQ_INT(s[0].bucket[1000], 1); /* aten spans carry no bucket: their children do */
        teller_tpe_vocab_opts co = {1, 1, 0};
        teller_tpe_vocab *vc = teller_tpe_vocab_create(&co);
        teller_tpe_vocab *vv[2] = {v, vc};
        for (int k = 0; k < 2; k++) {
            teller_tpe_ctx *c = NULL;
            teller_tpe_seq *s2 = NULL;
            size_t n2 = 0;
            CHECK_EQ_INT(teller_tpe_ctx_create(deep, vv[k], &c, &err), TELLER_OK);
            CHECK_EQ_INT(teller_tpe_serialize_steps(c, &s2, &n2, &err), TELLER_OK);
            teller_tpe_ctx_free(c);
            CHECK_EQ_INT(teller_tpe_train(vv[k], s2, n2, &to, &err), TELLER_OK);
            roundtrip_all(vv[k], s2, n2);
            char text[256];
            teller_tpe_symbol_text(vv[k], (uint32_t)teller_tpe_vocab_size(vv[k]) - 1, text, sizeof text);
            CHECK(text[0] != 0);
            free_seqs(s2, n2);
        }
        teller_tpe_vocab_free(vc);
    }
    free_seqs(s, n);
    teller_store_free(deep);
    teller_tpe_seq_free(&empty);
    teller_tpe_seq_free(&enc);
    teller_tpe_seq_free(&dec);
    teller_tpe_vocab_free(v);
}

static void test_tpe_bucket_marks_slow_op(void)
{
    teller_store *st = hand_store(0, 9, 1);
    teller_tpe_vocab *v = teller_tpe_vocab_create(NULL);
    teller_tpe_seq *s = NULL;
    size_t n = 0;
    serialize(st, v, &s, &n);
    CHECK_EQ_INT(n, 1);
    if (n == 1) {
        CHECK_EQ_INT(s[0].n, 10);
        char t1[64], t9[64];
        teller_tpe_symbol_text(v, s[0].sym[1], t1, sizeof t1);
        teller_tpe_symbol_text(v, s[0].sym[9], t9, sizeof t9);
        CHECK(!strcmp(t1, "RUNTIME/LaunchKernel"));
        CHECK(!strcmp(t9, "RUNTIME/LaunchKernel"));
        CHECK(!strcmp(teller_tpe_bucket_name(s[0].bucket[1]), "1x"));
        CHECK(!strcmp(teller_tpe_bucket_name(s[0].bucket[9]), "8x")); /* 90 ns against a median of 9 */
        /* a token's bucket: the most unusual of its nodes' */
        teller_tpe_seq enc;
        memset(&enc, 0, sizeof enc);
        teller_tpe_train_opts to = {64, 2, 0};
        teller_error err;
        CHECK_EQ_INT(teller_tpe_train(v, s, 1, &to, &err), TELLER_OK);
        CHECK_EQ_INT(teller_tpe_encode(v, &s[0], &enc, &err), TELLER_OK);
        int slow = 0;
        for (size_t t = 0; t < enc.n; t++)
            slow += enc.bucket[t] == 4 && enc.first[t] <= 9 && 9 < enc.first[t] + enc.len[t];
        CHECK_EQ_INT(slow, 1);
        teller_tpe_seq_free(&enc);
        CHECK_EQ_INT(s[0].dur_ns[9], 90);
    }
    free_seqs(s, n);
    teller_tpe_vocab_free(v);
    teller_store_free(st);
}

static void test_tpe_slice_relations(void)
{
    char dir[] = "/tmp/teller_slice_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    simulate(dir, 5, 3);
    teller_store *st = load_case(dir, 2);
    const teller_events *ev = teller_store_events(st);
    /* seed: a COMM kernel on rank 0 in step 1 */
    uint32_t seed = TELLER_NONE;
    for (size_t i = 0; i < ev->n && seed == TELLER_NONE; i++)
        if (ev->layer[i] == TELLER_LAYER_KERNEL && (ev->flags[i] & TELLER_F_COMM) && ev->step[i] == 1 &&
            teller_store_event_rank(st, (uint32_t)i) == 0 && ev->parent[i] != TELLER_NONE)
            seed = (uint32_t)i;
    CHECK(seed != TELLER_NONE);
    teller_slice_opts o = teller_slice_defaults();
    o.max_events = 40;
    teller_slice_item *it = NULL;
    size_t n = 0;
    teller_error err;
    teller_error_clear(&err);
    if (seed != TELLER_NONE)
        CHECK_EQ_INT(teller_slice_build(st, &seed, 1, &o, &it, &n, &err), TELLER_OK);
    CHECK(n > 3 && n <= 40);
    int has[TELLER_REL_COUNT] = {0}, ordered = 1, peer_other_rank = 1;
    for (size_t i = 0; i < n; i++) {
        has[it[i].rel] = 1;
        if (i)
            ordered &= ev->start_ns[it[i - 1].event] <= ev->start_ns[it[i].event];
        if (it[i].rel == TELLER_REL_PEER)
            peer_other_rank &= teller_store_event_rank(st, it[i].event) != 0;
        if (it[i].rel == TELLER_REL_SEED)
            CHECK_EQ_INT(it[i].event, seed);
    }
    CHECK(has[TELLER_REL_SEED] && has[TELLER_REL_LAUNCH] && has[TELLER_REL_ANCESTOR] && has[TELLER_REL_PEER] &&
          has[TELLER_REL_NEIGHBOUR]);
    CHECK(ordered);
    CHECK(peer_other_rank);
    free(it);
    /* the whole step as seed: bounded, and serialisable as a forest */
    uint32_t m = teller_slice_find_seed(st, 1, 1, NULL);
    CHECK(m != TELLER_NONE);
    o.max_events = 64;
    CHECK_EQ_INT(teller_slice_build(st, &m, 1, &o, &it, &n, &err), TELLER_OK);
    CHECK_EQ_INT(n, 64);
    uint32_t *evs = malloc(n * sizeof *evs);
    for (size_t i = 0; i < n; i++)
        evs[i] = it[i].event;
    teller_tpe_vocab *v = teller_tpe_vocab_create(NULL);
    teller_tpe_ctx *c = NULL;
    teller_tpe_seq s;
    memset(&s, 0, sizeof s);
    CHECK_EQ_INT(teller_tpe_ctx_create(st, v, &c, &err), TELLER_OK);
    CHECK_EQ_INT(teller_tpe_serialize_events(c, evs, n, &s, &err), TELLER_OK);
    size_t frames = 0; /* Python frames are left out by default */
    for (size_t i = 0; i < n; i++)
        frames += teller_store_events(st)->layer[evs[i]] == TELLER_LAYER_FRONTEND;
    CHECK_EQ_INT(s.n, n - frames); /* one token a node */
    CHECK_EQ_INT(s.depth[0], 0);
    /* --op: the longest matching event (the decode step's all-reduces are
     * vLLM's custom all-reduce) */
    uint32_t op = teller_slice_find_seed(st, 1, 0, "cross_device_reduce");
    CHECK(op != TELLER_NONE);
    teller_tpe_ctx_free(c);
    teller_tpe_seq_free(&s);
    teller_tpe_vocab_free(v);
    free(evs);
    free(it);
    teller_store_free(st);
    rm_rf(dir);
}


/* Names from the shared real traces (CUDA and ROCm, vLLM, SGLang, HF,
 * training) and the family each must get. */
static void test_tpe_family_table(void)
{
    static const struct {
        teller_layer L;
        const char *name, *family;
    } rows[] = {
        {TELLER_LAYER_KERNEL, "nvjet_tst_144x128_64x6_2x1_v_bz_bias_TNN", "gemm"},
        {TELLER_LAYER_KERNEL,
         "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT128x256x32_MI16x16x1_SN_LDSB1_AFC1_AFEM1_AFEM1_ASEM1_CLR1",
         "gemm"},
        {TELLER_LAYER_KERNEL,
         "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_32x3_tn_align1>(cutlass_80_tensorop_s1688gemm_"
         "128x128_32x3_tn_align1::Params)",
         "gemm"},
        {TELLER_LAYER_KERNEL,
         "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_"
         "kernel__5x_cublas",
         "gemm"},
        {TELLER_LAYER_KERNEL, "ampere_sgemm_128x64_nn", "gemm"},
        {TELLER_LAYER_KERNEL, "fmhaSm100aKernel_QkvE4m3OBfloat16H64PagedKvCausalP16VarSeqQ128Kv128PersistentContext",
         "attention"},
        {TELLER_LAYER_KERNEL,
         "void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<64, 128, 128, 4, false, false, "
         "cutlass::bfloat16_t> >(pytorch_flash::Flash_fwd_params)",
         "attention"},
        {TELLER_LAYER_KERNEL,
         "void paged_attention_ll4mi_QKV_mfma16_kernel<0, __hip_bfloat16, __hip_bfloat16, (vllm::Fp8KVCacheDataType)0, "
         "1, 128, 256, false, 4, 1>(__hip_bfloat16 const*)",
         "attention"},
        {TELLER_LAYER_KERNEL, "kernel_unified_attention_2d", "attention"},
        {TELLER_LAYER_KERNEL,
         "_ZN7ck_tile6kentryILi2ENS_38FmhaBatchPrefillWithPagedKVCacheKernelINS_40BlockFmhaBatchPrefillPipeline",
         "attention"},
        {TELLER_LAYER_KERNEL,
         "void vllm::rms_norm_kernel<c10::BFloat16, 8, 2>(c10::BFloat16*, c10::BFloat16 const*, long, long)", "norm"},
        {TELLER_LAYER_KERNEL,
         "_ZN5aiter24add_rmsnorm_quant_kernelIDF16bDF16bLi256ELi16ELb0ELb0ELb1ELi1EEEvPT0_PT_PfS4_S4_S4_diiiiiiib",
         "norm"},
        {TELLER_LAYER_KERNEL,
         "_ZN7sgl_hip10activation18act_and_mul_kernelI14__hip_bfloat16TnPFT_RKS3_EXadL_Z4siluIS2_ES3_S5_EEEEvPS3_PS4_i",
         "activation"},
        {TELLER_LAYER_KERNEL,
         "void vllm::rotary_embedding_kernel<c10::BFloat16, true>(long const*, c10::BFloat16*, int)", "rotary"},
        {TELLER_LAYER_KERNEL,
         "void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16, unsigned char, (vllm::Fp8KVCacheDataType)1>"
         "(__nv_bfloat16 const*)",
         "kvcache"},
        {TELLER_LAYER_KERNEL,
         "void (anonymous namespace)::softmax_warp_forward<float, float, float, 1, false, false>(float*, float const*)",
         "softmax"},
        {TELLER_LAYER_KERNEL,
         "void moe::dev::routing::routingIndicesHistogramKernel<moe::dev::routing::routingRenormalize::KernelParams"
         "<__nv_bfloat16, __nv_bfloat16, 128, false> >(moe::dev::routing::routingRenormalize::KernelParams)",
         "moe.routing"},
        {TELLER_LAYER_KERNEL, "_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1_swiglu", "moe.gemm"},
        {TELLER_LAYER_KERNEL, "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
         "comm.allgather.ring"},
        {TELLER_LAYER_KERNEL, "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)",
         "comm.allreduce.ring"},
        {TELLER_LAYER_KERNEL,
         "void (anonymous namespace)::multimem_all_reduce_kernel<c10::BFloat16, 16>(c10::BFloat16*, unsigned long)",
         "comm.allreduce.custom"},
        {TELLER_LAYER_KERNEL,
         "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, at::detail::Array<char*, "
         "1> >(int, at::native::FillFunctor<float>, at::detail::Array<char*, 1>)",
         "elementwise"},
        {TELLER_LAYER_KERNEL, "triton_poi_fused_add_cos_sin_0", "elementwise"},
        {TELLER_LAYER_KERNEL, "triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_1", "reduce"},
        {TELLER_LAYER_KERNEL,
         "void at::native::(anonymous namespace)::CatArrayBatchedCopy<float, unsigned int, 1, 128, 1>(float*)", "copy"},
        {TELLER_LAYER_RUNTIME, "cudaLaunchKernel", "LaunchKernel"},
        {TELLER_LAYER_RUNTIME, "hipLaunchKernel", "LaunchKernel"},
        {TELLER_LAYER_RUNTIME, "hipExtModuleLaunchKernel", "LaunchKernel"},
        {TELLER_LAYER_RUNTIME, "cudaLaunchKernelExC", "LaunchKernel"},
        {TELLER_LAYER_DRIVER, "cuLaunchKernelEx", "LaunchKernel"},
        {TELLER_LAYER_RUNTIME, "cudaGraphLaunch", "GraphLaunch"},
        {TELLER_LAYER_RUNTIME, "hipGraphLaunch", "GraphLaunch"},
        {TELLER_LAYER_RUNTIME, "cudaMemcpyAsync", "MemcpyAsync"},
        {TELLER_LAYER_RUNTIME, "hipMemcpyWithStream", "MemcpyAsync"},
        {TELLER_LAYER_RUNTIME, "cudaStreamSynchronize", "StreamSynchronize"},
        {TELLER_LAYER_RUNTIME, "cudaStreamGetCaptureInfo_v2", "Query"},
        {TELLER_LAYER_RUNTIME, "hipGetDevicePropertiesR0600", "Query"},
        {TELLER_LAYER_RUNTIME, "cudaFuncSetAttribute", "Query"},
        {TELLER_LAYER_MEMCPY, "Memcpy HtoD (Pinned -> Device)", "memcpy.HtoD.pinned"},
        {TELLER_LAYER_MEMCPY, "Memcpy DtoH (Device -> Pageable)", "memcpy.DtoH.pageable"},
        {TELLER_LAYER_MEMCPY, "Memcpy DtoD (Device -> Device)", "memcpy.DtoD"},
        {TELLER_LAYER_MEMSET, "Memset (Device)", "memset"},
        {TELLER_LAYER_SYNC, "Stream Wait Event", "stream_wait_event"},
        {TELLER_LAYER_FRONTEND, "torch/nn/modules/module.py(1779): _call_impl", "module._call_impl"},
        {TELLER_LAYER_FRONTEND, "vllm/v1/worker/gpu_model_runner.py(2250): execute_model",
         "gpu_model_runner.execute_model"},
        {TELLER_LAYER_FRONTEND, "torch/cuda/__init__.py(1014): synchronize", "cuda.synchronize"},
        {TELLER_LAYER_FRONTEND, "<frozen os>(717): __getitem__", "os.__getitem__"},
        {TELLER_LAYER_FRONTEND, "<built-in method append of list object at 0x7f1bafbe0340>", "list.append"},
        {TELLER_LAYER_FRONTEND, "<built-in method view of Tensor object at 0x7ed7a027b740>", "Tensor.view"},
        {TELLER_LAYER_FRONTEND, "<built-in function isinstance>", "builtin.isinstance"},
        {TELLER_LAYER_FRONTEND, "nn.Module: LlamaDecoderLayer_3", "nn.Module:LlamaDecoderLayer"},
        {TELLER_LAYER_ENGINE, "ProfilerStep#12", "step"},
        {TELLER_LAYER_ENGINE, "execute_32_context_0(sq0sk0sqsq0sqsk0)_generation_32(sq32sk32785sqsq32sqsk32785)",
         "step"},
        {TELLER_LAYER_ENGINE, "step[DECODE bs=32]", "step"},
        {TELLER_LAYER_ENGINE, "nccl:all_reduce", "nccl:all_reduce"},
        {TELLER_LAYER_BACKEND, "aten::mm", "aten::mm"},
        {TELLER_LAYER_BACKEND, "aten::conv2d", "aten::conv2d"}, /* aten ops as they are: digits too */
        {TELLER_LAYER_BACKEND, "autograd::engine::evaluate_function: AddBackward0",
         "autograd::engine::evaluate_function: AddBackward#"},
        {TELLER_LAYER_BACKEND, "FlashAttnFunc, seq = 12345, op_id = 678901", "FlashAttnFunc"},
        {TELLER_LAYER_OTHER, "PyTorch Profiler (0)", "PyTorch Profiler (#)"},
        {TELLER_LAYER_KERNEL, "", "?"},
    };
    int bad = 0;
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        char out[256];
        size_t n = teller_tpe_name_family(rows[i].L, rows[i].name, out, sizeof out);
        if (strcmp(out, rows[i].family) || n != strlen(out)) {
            fprintf(stderr, "  family of '%s': '%s', want '%s'\n", rows[i].name, out, rows[i].family);
            bad++;
        }
    }
    CHECK_EQ_INT(bad, 0);
    /* a small buffer is cut, NUL-terminated */
    char small[4];
    CHECK_EQ_INT(teller_tpe_name_family(TELLER_LAYER_RUNTIME, "cudaLaunchKernel", small, sizeof small), 3);
    CHECK(!strcmp(small, "Lau"));
}

/* A kernel no rule knows gets a family from its own words: two unknown
 * kernels stay apart, template arguments and digits do not split one. */
static void test_tpe_family_lexical_fallback(void)
{
    char a[128], b[128], c[128], d[128];
    teller_tpe_name_family(TELLER_LAYER_KERNEL, "void foo::compute_position_kernel<long>(long*, int)", a, sizeof a);
    teller_tpe_name_family(TELLER_LAYER_KERNEL, "void foo::compute_position_kernel<int>(int*, int)", b, sizeof b);
    teller_tpe_name_family(TELLER_LAYER_KERNEL, "spin_kernel_v2_16x4", c, sizeof c);
    teller_tpe_name_family(TELLER_LAYER_KERNEL, "spin_kernel_v2_32x8", d, sizeof d);
    CHECK(!strcmp(a, "compute_position"));
    CHECK(!strcmp(a, b));
    CHECK(!strcmp(c, d));
    CHECK(strcmp(a, c) != 0);
    CHECK(strchr(c, '1') == NULL && strchr(c, '#') != NULL);
}

/* Left out, Python frames leave no FRONTEND node and the rest of the tree
 * hangs from the nearest kept ancestor; kept, they are nodes. */
static void test_tpe_frames_left_out_or_kept(void)
{
    const char *p = shared_path("tracelens/b200/eager_trace.json.gz");
    teller_store *st = load_files(&p, 1);
    size_t nodes[2] = {0, 0}, frames[2] = {0, 0};
    for (int keep = 0; keep <= 1; keep++) {
        teller_tpe_vocab_opts vo = teller_tpe_vocab_defaults();
        vo.frames = keep;
        teller_tpe_vocab *v = teller_tpe_vocab_create(&vo);
        teller_tpe_seq *s = NULL;
        size_t n = 0;
        serialize(st, v, &s, &n);
        for (size_t k = 0; k < n; k++)
            for (size_t t = 0; t < s[k].n; t++) {
                char tag[1100]; /* a whole node symbol: a cut one would read "..." */
                teller_tpe_symbol_text(v, s[k].sym[t], tag, sizeof tag);
                nodes[keep]++;
                frames[keep] += !strncmp(tag, "FRONTEND", 8);
                CHECK(s[k].parent[t] == TELLER_NONE || s[k].depth[s[k].parent[t]] + 1 == s[k].depth[t]);
            }
        free_seqs(s, n);
        teller_tpe_vocab_free(v);
    }
    CHECK_EQ_INT(frames[0], 0);
    CHECK(frames[1] > 10000);
    CHECK_EQ_INT(nodes[1] - frames[1], nodes[0]);
    teller_store_free(st);
}

/* A weight of 3 is the same as giving the sequence three times, and it
 * changes what is learned first. */
static void test_tpe_weights_count_like_copies(void)
{
    /* no two siblings in a row alike: no repeat run */
    const char *na[] = {"a", "b", "a", "e", "f", "g"}, *nb[] = {"c", "d", "c", "h", "c", "i"};
    uint16_t d[] = {0, 0, 0, 0, 0, 0};
    teller_tpe_vocab *v[3];
    teller_tpe_seq s1[4], s2[2], s3[2];
    memset(s1, 0, sizeof s1);
    memset(s2, 0, sizeof s2);
    memset(s3, 0, sizeof s3);
    for (int k = 0; k < 3; k++)
        v[k] = teller_tpe_vocab_create(NULL);
    for (int k = 0; k < 3; k++)
        hand_seq(v[0], na, d, 6, &s1[k]);
    hand_seq(v[0], nb, d, 6, &s1[3]);
    hand_seq(v[1], na, d, 6, &s2[0]);
    hand_seq(v[1], nb, d, 6, &s2[1]);
    hand_seq(v[2], na, d, 6, &s3[0]);
    hand_seq(v[2], nb, d, 6, &s3[1]);
    uint32_t w[2] = {3, 1};
    teller_tpe_train_opts to = {4, 2, 0};
    teller_error err;
    CHECK_EQ_INT(teller_tpe_train(v[0], s1, 4, &to, &err), TELLER_OK);
    CHECK_EQ_INT(teller_tpe_train_weighted(v[1], s2, w, 2, &to, &err), TELLER_OK);
    CHECK_EQ_INT(teller_tpe_train(v[2], s3, 2, &to, &err), TELLER_OK);
    CHECK_EQ_INT(teller_tpe_vocab_size(v[0]), teller_tpe_vocab_size(v[1]));
    int same = 1;
    for (uint32_t id = 0; id < teller_tpe_vocab_size(v[0]); id++) {
        uint32_t l1 = 0, r1 = 0, l2 = 1, r2 = 1;
        const char *t1 = NULL, *t2 = NULL;
        int k1 = teller_tpe_vocab_symbol(v[0], id, &t1, &l1, &r1), k2 = teller_tpe_vocab_symbol(v[1], id, &t2, &l2, &r2);
        same &= k1 == k2 && (k1 ? l1 == l2 && r1 == r2 : !strcmp(t1, t2));
    }
    CHECK(same);
    /* symbols: the repeat symbols, KERNEL a b e f g c d h i, so the first
     * merge comes after them: weighted it is "KERNEL a" (6 times against
     * "KERNEL c" 3), unweighted "KERNEL c" */
    const char *want[2] = {"a", "c"};
    for (int k = 1; k <= 2; k++) {
        uint32_t l = 0, r = 0;
        const char *tl = NULL, *tr = NULL;
        CHECK_EQ_INT(teller_tpe_vocab_symbol(v[k], TELLER_TPE_REPEATS + 10, NULL, &l, &r), 1);
        teller_tpe_vocab_symbol(v[k], l, &tl, NULL, NULL);
        teller_tpe_vocab_symbol(v[k], r, &tr, NULL, NULL);
        CHECK(tl && tr && !strcmp(tl, "KERNEL") && !strcmp(tr, want[k - 1]));
    }
    for (int k = 0; k < 4; k++)
        teller_tpe_seq_free(&s1[k]);
    for (int k = 0; k < 2; k++) {
        teller_tpe_seq_free(&s2[k]);
        teller_tpe_seq_free(&s3[k]);
    }
    for (int k = 0; k < 3; k++)
        teller_tpe_vocab_free(v[k]);
}

/* A vocabulary learned on the CUDA run of a workload compresses its ROCm
 * run: the names meet in families (measured 63 %; with the raw names of
 * commit 5c53b1d, 6.6 %). */
static void test_tpe_vocab_transfers_cuda_to_rocm(void)
{
    const char *p = shared_path("tracelens/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz");
    teller_store *sc = load_files(&p, 1);
    p = shared_path("tracelens/mi300/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz");
    teller_store *sr = load_files(&p, 1);
    teller_tpe_vocab *v = teller_tpe_vocab_create(NULL);
    teller_tpe_seq *tc = NULL, *tr = NULL;
    size_t nc = 0, nr = 0;
    serialize(sc, v, &tc, &nc);
    teller_tpe_train_opts to = {256, 2, 1}; /* one run: every name it shows is known */
    teller_error err;
    CHECK_EQ_INT(teller_tpe_train(v, tc, nc, &to, &err), TELLER_OK);
    serialize(sr, v, &tr, &nr);
    size_t nodes = 0;
    for (size_t k = 0; k < nr; k++)
        nodes += tr[k].n;
    size_t after = roundtrip_all(v, tr, nr);
    CHECK(nodes > 5000);
    fprintf(stderr, "  CUDA -> ROCm node reduction %.1f %%\n", 100.0 * (1.0 - (double)after / (double)nodes));
    CHECK(after * 2 < nodes); /* at least 50 % fewer tokens than nodes */
    free_seqs(tc, nc);
    free_seqs(tr, nr);
    teller_tpe_vocab_free(v);
    teller_store_free(sc);
    teller_store_free(sr);
}

/* The built-in vocabulary: version 3, learned with the default options,
 * and it compresses a shared real trace with exact decoding. */
static void test_tpe_default_vocab_builtin(void)
{
    teller_tpe_vocab *v = NULL;
    teller_error err;
    teller_error_clear(&err);
    CHECK_EQ_INT(teller_tpe_vocab_default(&v, &err), TELLER_OK);
    CHECK(v != NULL);
    if (!v)
        return;
    teller_tpe_vocab_opts o = teller_tpe_vocab_options(v), d = teller_tpe_vocab_defaults();
    CHECK(o.buckets == d.buckets && o.cross_levels == d.cross_levels && o.frames == d.frames);
    CHECK_EQ_INT(teller_tpe_vocab_merges(v), 256);
    const char *p = shared_path("tracelens/inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz");
    teller_store *st = load_files(&p, 1);
    teller_tpe_seq *s = NULL;
    size_t n = 0, before = 0;
    serialize(st, v, &s, &n);
    for (size_t k = 0; k < n; k++)
        before += s[k].n;
    size_t after = roundtrip_all(v, s, n);
    CHECK(before > 0 && after * 2 < before);
    free_seqs(s, n);
    teller_store_free(st);
    teller_tpe_vocab_free(v);
    /* a version-1 file (raw names) is refused with a reason */
    const char v1[] = "teller-tpe-vocab 1\noptions buckets=1 cross=1\nsymbols 0\nend 0000000000000000\n";
    CHECK_EQ_INT(teller_tpe_vocab_parse(v1, sizeof v1 - 1, "v1", &v, &err), TELLER_ERR_FORMAT);
    CHECK(strstr(err.msg, "learn it again") != NULL);
}

/* Ten identical layers (two ops, each with a kernel) under a step: one
 * layer stays, the other nine become one repeat token, whatever the
 * vocabulary (none here), even with a kernel 4x slower in layer 5: the
 * repeat token's bucket says so, and decoding gives every node back with
 * its bucket. A name spelt like a repeat symbol is an ordinary symbol. */
static void test_tpe_repeat_runs_keep_one_layer(void)
{
    teller_tpe_vocab *v = teller_tpe_vocab_create(NULL);
    enum { LAYERS = 10, NODES = 1 + 4 * LAYERS };
    const char *tag[NODES], *name[NODES];
    uint16_t dep[NODES];
    uint8_t bucket[NODES];
    tag[0] = "ENGINE";
    name[0] = "step";
    dep[0] = 0;
    bucket[0] = 1;
    for (int l = 0; l < LAYERS; l++)
        for (int k = 0; k < 4; k++) {
            int i = 1 + 4 * l + k;
            tag[i] = k % 2 ? "KERNEL" : "BACKEND";
            name[i] = k < 2 ? "aten::rms_norm" : k == 2 ? "aten::mm" : "gemm";
            dep[i] = k % 2 ? 2 : 1;
            bucket[i] = l == 5 && k == 3 ? 3 : 1;
        }
    teller_error err;
    teller_tpe_seq s, enc, dec;
    memset(&s, 0, sizeof s);
    memset(&enc, 0, sizeof enc);
    memset(&dec, 0, sizeof dec);
    CHECK_EQ_INT(teller_tpe_seq_alloc(&s, 2 * NODES, &err), TELLER_OK);
    uint32_t last_at[3] = {0, 0, 0};
    for (size_t i = 0; i < NODES; i++) {
        uint32_t par = dep[i] ? last_at[dep[i] - 1] : TELLER_NONE;
        last_at[dep[i]] = (uint32_t)(2 * i);
        for (int k = 0; k < 2; k++) {
            size_t t = 2 * i + (size_t)k;
            const char *txt = k ? name[i] : tag[i];
            s.sym[t] = teller_tpe_vocab_intern(v, txt, strlen(txt));
            s.parent[t] = par;
            s.depth[t] = dep[i];
            s.dur_ns[t] = k ? 0 : (int64_t)(10 + i);
            s.bucket[t] = k ? 1 : bucket[i];
            s.first[t] = (uint32_t)t;
            s.len[t] = 1;
            s.event[t] = TELLER_NONE;
        }
    }
    CHECK_EQ_INT(teller_tpe_encode(v, &s, &enc, &err), TELLER_OK);
    CHECK_EQ_INT(enc.n, 11); /* step 2 + layer 8 + repeat */
    if (enc.n == 11) {
        CHECK_EQ_INT(enc.sym[10], teller_tpe_repeat_symbol(LAYERS));
        CHECK_EQ_INT(enc.unit[10], 8);
        CHECK_EQ_INT(enc.first[10], 10);
        CHECK_EQ_INT(enc.len[10], 72);
        CHECK_EQ_INT(enc.depth[10], 1);      /* a sibling of the layer it copies */
        CHECK_EQ_INT(enc.parent[10], 0);     /* the step's TAG token */
        CHECK_EQ_INT(enc.bucket[10], 3);     /* one of its kernels ran 4x */
        CHECK_EQ_INT(enc.bucket[9], 1);
        int64_t base_dur = 0, dur = 0;
        for (size_t i = 10; i < s.n; i++)
            base_dur += s.dur_ns[i];
        dur = enc.dur_ns[10];
        CHECK_EQ_INT(dur, base_dur); /* every node of the copies counted once */
    }
    char text[64];
    teller_tpe_symbol_text(v, teller_tpe_repeat_symbol(LAYERS), text, sizeof text);
    CHECK(!strcmp(text, "REPEAT~16"));
    CHECK_EQ_INT(teller_tpe_decode(v, &enc, &dec, &err), TELLER_OK);
    CHECK(seq_same(&dec, &s));
    /* damaged: a unit reaching before the sequence, a bucket that disagrees */
    if (enc.n == 11) {
        enc.unit[10] = 1000;
        CHECK_EQ_INT(teller_tpe_decode(v, &enc, &dec, &err), TELLER_ERR_FORMAT);
        enc.unit[10] = 8;
        enc.bucket[10] = 1;
        CHECK_EQ_INT(teller_tpe_decode(v, &enc, &dec, &err), TELLER_ERR_FORMAT);
    }
    /* a name spelt like a repeat symbol interns to an ordinary symbol */
    CHECK(teller_tpe_vocab_intern(v, "REPEAT~16", 9) >= TELLER_TPE_REPEATS);
    teller_tpe_seq_free(&s);
    teller_tpe_seq_free(&enc);
    teller_tpe_seq_free(&dec);
    teller_tpe_vocab_free(v);
}

/* Repeat runs need no learned merge: an HF eager decode step (24 identical
 * layers) shrinks by most of its nodes with an empty vocabulary (measured
 * 91.1 %), and decodes back exactly. */
static void test_tpe_repeat_runs_without_merges(void)
{
    const char *p = shared_path("tracelens/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz");
    teller_store *st = load_files(&p, 1);
    teller_tpe_vocab *v = teller_tpe_vocab_create(NULL);
    teller_tpe_seq *s = NULL;
    size_t n = 0, nodes = 0;
    serialize(st, v, &s, &n);
    CHECK(n > 0);
    for (size_t k = 0; k < n; k++)
        nodes += s[k].n;
    size_t after = roundtrip_all(v, s, n);
    CHECK(nodes > 1000 && after * 100 < nodes * 15); /* node reduction over 85 % */
    free_seqs(s, n);
    teller_tpe_vocab_free(v);
    teller_store_free(st);
}

const test_case tpe_tests[] = {
    {"tpe: a name too few runs hold merges as its layer and decodes back to itself", test_tpe_rare_names_merge_as_layer},
    {"tpe: training merges the most frequent pair first", test_tpe_most_frequent_pair_first},
    {"tpe: merges stay within a level unless crossing is allowed", test_tpe_no_cross_keeps_levels},
    {"tpe: vocabulary file round-trips; truncated, other-version, corrupt files fail clearly",
     test_tpe_vocab_file_and_damage},
    {"tpe: decode(encode(step)) == step on every shared real trace", test_tpe_real_traces_roundtrip},
    {"tpe: held-out simulated case round-trips and compresses", test_tpe_simulated_heldout_roundtrip},
    {"tpe: empty, single-node and depth-1000 steps", test_tpe_odd_steps_empty_single_deep},
    {"tpe: duration bucket marks the slow op and the token holding it", test_tpe_bucket_marks_slow_op},
    {"tpe: identical layers are one layer and a repeat token, a slow kernel in one shown by its bucket",
     test_tpe_repeat_runs_keep_one_layer},
    {"tpe: repeat runs alone shrink a real decode step by over 85 %", test_tpe_repeat_runs_without_merges},
    {"tpe: slice holds seed, launch, ancestors, peers, neighbours in time order", test_tpe_slice_relations},
    {"tpe: real kernel, API, copy, frame and annotation names get their families", test_tpe_family_table},
    {"tpe: a name no rule knows gets a lexical family of its own", test_tpe_family_lexical_fallback},
    {"tpe: Python frames are left out, or kept as nodes", test_tpe_frames_left_out_or_kept},
    {"tpe: a sequence weight counts like copies of the sequence", test_tpe_weights_count_like_copies},
    {"tpe: a vocabulary learned on a CUDA run compresses the ROCm run", test_tpe_vocab_transfers_cuda_to_rocm},
    {"tpe: the built-in vocabulary loads and compresses a real trace", test_tpe_default_vocab_builtin},
    {NULL, NULL},
};
