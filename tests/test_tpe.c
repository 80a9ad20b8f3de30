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

static int seq_same(const teller_tpe_seq *a, const teller_tpe_seq *b)
{
    if (a->n != b->n)
        return 0;
    for (size_t i = 0; i < a->n; i++)
        if (a->sym[i] != b->sym[i] || a->parent[i] != b->parent[i] || a->depth[i] != b->depth[i] ||
            a->dur_ns[i] != b->dur_ns[i] || a->event[i] != b->event[i])
            return 0;
    return 1;
}

/* The textbook definition: every merge in rank order, applied left to right
 * over the whole sequence. The encoder must give the same symbols. */
static size_t naive_encode(const teller_tpe_vocab *v, const teller_tpe_seq *b, uint32_t *out)
{
    size_t n = b->n;
    uint32_t *par = malloc((n ? n : 1) * sizeof *par);
    uint16_t *dep = malloc((n ? n : 1) * sizeof *dep);
    memcpy(out, b->sym, n * sizeof *out);
    memcpy(par, b->parent, n * sizeof *par);
    memcpy(dep, b->depth, n * sizeof *dep);
    int cross = teller_tpe_vocab_options(v).cross_levels;
    for (uint32_t id = 0; id < teller_tpe_vocab_size(v); id++) {
        uint32_t l, r;
        if (teller_tpe_vocab_symbol(v, id, NULL, &l, &r) != 1)
            continue;
        size_t w = 0;
        for (size_t i = 0; i < n; i++) {
            if (i + 1 < n && out[i] == l && out[i + 1] == r && (cross || (par[i] == par[i + 1] && dep[i] == dep[i + 1]))) {
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
        size_t rn = naive_encode(v, &seqs[k], ref);
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

static void rm_rf(const char *dir)
{
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
}

/* ---- tests ---- */

static void test_tpe_most_frequent_pair_first(void)
{
    teller_tpe_vocab_opts vo = {0, 1};
    teller_tpe_vocab *v = teller_tpe_vocab_create(&vo);
    /* flat: KERNEL a KERNEL b KERNEL a KERNEL b KERNEL a: (KERNEL, a) x3 is the most frequent */
    const char *names[] = {"a", "b", "a", "b", "a"};
    uint16_t d[] = {0, 0, 0, 0, 0};
    teller_tpe_seq s;
    memset(&s, 0, sizeof s);
    hand_seq(v, names, d, 5, &s);
    teller_tpe_train_opts to = {1, 2};
    teller_error err;
    CHECK_EQ_INT(teller_tpe_train(v, &s, 1, &to, &err), TELLER_OK);
    CHECK_EQ_INT(teller_tpe_vocab_merges(v), 1);
    uint32_t l = 0, r = 0;
    CHECK_EQ_INT(teller_tpe_vocab_symbol(v, 3, NULL, &l, &r), 1);
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
    hand_seq(v, tie, d, 2, &s); /* KERNEL=0 a=1 KERNEL b=2: (0,1) (1,0) (0,2) */
    teller_tpe_train_opts one = {1, 1};
    CHECK_EQ_INT(teller_tpe_train(v, &s, 1, &one, &err), TELLER_OK);
    CHECK_EQ_INT(teller_tpe_vocab_symbol(v, 3, NULL, &l, &r), 1);
    CHECK(l == 0 && r == 1);
    teller_tpe_seq_free(&s);
    teller_tpe_vocab_free(v);
}

static void test_tpe_no_cross_keeps_levels(void)
{
    /* parent with children: with cross off no token may span two levels */
    const char *names[] = {"step", "op", "k1", "op", "k1", "op", "k1", "op", "k1"};
    uint16_t d[] = {0, 1, 2, 1, 2, 1, 2, 1, 2};
    for (int cross = 0; cross <= 1; cross++) {
        teller_tpe_vocab_opts vo = {0, cross};
        teller_tpe_vocab *v = teller_tpe_vocab_create(&vo);
        teller_tpe_seq s, enc;
        memset(&s, 0, sizeof s);
        memset(&enc, 0, sizeof enc);
        hand_seq(v, names, d, 9, &s);
        teller_tpe_train_opts to = {50, 2};
        teller_error err;
        CHECK_EQ_INT(teller_tpe_train(v, &s, 1, &to, &err), TELLER_OK);
        CHECK_EQ_INT(teller_tpe_encode(v, &s, &enc, &err), TELLER_OK);
        int spans_levels = 0;
        for (size_t t = 0; t < enc.n; t++)
            for (uint32_t i = enc.first[t]; i < enc.first[t] + enc.len[t]; i++)
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
    teller_tpe_train_opts to = {8, 2};
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

static void test_tpe_real_traces_roundtrip(void)
{
    const char *files[] = {
        "tracelens/inference/vllm_decode_full/graph_execution.json.gz",
        "tracelens/inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz",
        "tracelens/inference/sglang_prefilldecode/sglang_Qwen3-8B_prefilldecode.json.gz",
        "tracelens/b200/eager_trace.json.gz",
        "hta/trace_filter/sampled_rank-0.json.gz",
        "nsys-ai/h100_2gpu_1s.sqlite",
    };
    for (int cross = 0; cross <= 1; cross++) {
        teller_tpe_vocab_opts vo = {1, cross};
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
            /* serialisation: two tokens a node, parents earlier and one level up */
            int shape_ok = 1;
            for (size_t k = 0; k < n; k++) {
                CHECK(s[k].n % 2 == 0);
                for (size_t t = 0; t < s[k].n; t++) {
                    uint32_t pa = s[k].parent[t];
                    shape_ok &= pa == TELLER_NONE ? s[k].depth[t] == 0
                                                  : (pa < t && pa % 2 == 0 && s[k].depth[pa] + 1 == s[k].depth[t]);
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
        teller_tpe_train_opts to = {256, 2};
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
    teller_tpe_train_opts to = {256, 2};
    teller_error err;
    CHECK_EQ_INT(teller_tpe_train(v, ta, na, &to, &err), TELLER_OK);
    serialize(sb, v, &tb, &nb); /* held out: its new names get ids, never merge */
    CHECK_EQ_INT(nb, 12);
    size_t nodes = 0;
    for (size_t k = 0; k < nb; k++)
        nodes += tb[k].n / 2;
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

/* A hand-made store: one rank, a step marker holding `depth` nested ops,
 * plus `flat` sibling kernels-by-name of which the last is 10x slower. */
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
        teller_event_row r = {span / 2 + 100 * i, i + 1 == flat ? 90 : 9, teller_store_intern(st, "aten::mm", 8),
                              TELLER_LAYER_BACKEND, 0, s, 1, 1, 0, TELLER_NONE};
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
    teller_tpe_train_opts to = {64, 2};
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
        CHECK_EQ_INT(s[0].n, 2);
        CHECK(teller_tpe_train(v, s, 1, &to, &err) == TELLER_OK);
        roundtrip_all(v, s, 1);
        char text[64];
        teller_tpe_symbol_text(v, s[0].sym[1], text, sizeof text);
        CHECK(!strcmp(text, "ProfilerStep##")); /* digits masked on ENGINE names */
    }
    free_seqs(s, n);
    teller_store_free(one);
    /* depth 1000, twice (two identical steps would dedupe: use two stores) */
    teller_store *deep = hand_store(1000, 0, 1);
    serialize(deep, v, &s, &n);
    CHECK_EQ_INT(n, 1);
    if (n == 1) {
        CHECK_EQ_INT(s[0].n, 2002);
        CHECK_EQ_INT(s[0].depth[2001], 1000);
        teller_tpe_vocab_opts co = {1, 1};
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
        CHECK_EQ_INT(s[0].n, 20);
        char t1[64], t9[64];
        teller_tpe_symbol_text(v, s[0].sym[2], t1, sizeof t1);
        teller_tpe_symbol_text(v, s[0].sym[18], t9, sizeof t9);
        CHECK(!strcmp(t1, "BACKEND~1x"));
        CHECK(!strcmp(t9, "BACKEND~8x")); /* 90 ns against a median of 9 */
        CHECK_EQ_INT(s[0].dur_ns[18], 90);
        CHECK_EQ_INT(s[0].dur_ns[19], 0);
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
    CHECK_EQ_INT(s.n, 2 * n);
    CHECK_EQ_INT(s.depth[0], 0);
    /* --op: the longest matching event */
    uint32_t op = teller_slice_find_seed(st, 1, 0, "AllReduce");
    CHECK(op != TELLER_NONE);
    teller_tpe_ctx_free(c);
    teller_tpe_seq_free(&s);
    teller_tpe_vocab_free(v);
    free(evs);
    free(it);
    teller_store_free(st);
    rm_rf(dir);
}

const test_case tpe_tests[] = {
    {"tpe: training merges the most frequent pair first", test_tpe_most_frequent_pair_first},
    {"tpe: merges stay within a level unless crossing is allowed", test_tpe_no_cross_keeps_levels},
    {"tpe: vocabulary file round-trips; truncated, other-version, corrupt files fail clearly",
     test_tpe_vocab_file_and_damage},
    {"tpe: decode(encode(step)) == step on the real traces", test_tpe_real_traces_roundtrip},
    {"tpe: held-out simulated case round-trips and compresses", test_tpe_simulated_heldout_roundtrip},
    {"tpe: empty, single-node and depth-1000 steps", test_tpe_odd_steps_empty_single_deep},
    {"tpe: duration bucket marks the slow op", test_tpe_bucket_marks_slow_op},
    {"tpe: slice holds seed, launch, ancestors, peers, neighbours in time order", test_tpe_slice_relations},
    {NULL, NULL},
};
