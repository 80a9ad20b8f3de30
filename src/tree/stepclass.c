/*
 * stepclass.c - what a step annotation says of its step: the engine's kind
 * of step (prefill, decode, a mixed batch, a training or inference
 * iteration), the annotation's family (the same annotation whatever its
 * numbers) and the work it states (tokens, batch size). Read from the
 * names the engines write: vLLM's profiler
 * `execute_[N_]context_P(T...)_generation_D(...)`, SGLang's
 * `step[DECODE|EXTEND|MIXED bs=N]`, PyTorch's `ProfilerStep#N`.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "teller/tree.h"

/* Counts an annotation gives are taken up to 2^24: no engine schedules
 * more in a step, and sums of a few of them stay inside int32; larger is
 * no count (-1). */
#define MAX_STEP_COUNT (1L << 24)

/* The integer right after `key` in s, or -1. */
static int32_t int_after(const char *s, const char *key)
{
    const char *p = strstr(s, key);
    if (!p)
        return -1;
    p += strlen(key);
    if (!isdigit((unsigned char)*p))
        return -1;
    long v = strtol(p, NULL, 10);
    return v > MAX_STEP_COUNT ? -1 : (int32_t)v;
}

/* Token count in the parenthesis after "context_N": "(1951)" (vLLM's
 * profiler names) or "(sq<N>...)" (TraceLens: the sum of query lengths). */
static int32_t ctx_tokens(const char *s)
{
    const char *p = strstr(s, "context_");
    if (!p || !(p = strchr(p, '(')))
        return -1;
    p++;
    if (!strncmp(p, "sq", 2))
        p += 2;
    if (!isdigit((unsigned char)*p))
        return -1;
    long v = strtol(p, NULL, 10);
    return v > MAX_STEP_COUNT ? -1 : (int32_t)v;
}

/* The annotation with every digit run as '#' and what parentheses hold
 * dropped, cut to cap - 1 bytes: the same family whatever the batch. */
static void family_of(const char *a, char *out, size_t cap)
{
    size_t w = 0;
    int depth = 0;
    for (const char *p = a; *p && w + 1 < cap; p++) {
        if (*p == '(') {
            if (!depth++)
                out[w++] = '(';
            continue;
        }
        if (*p == ')') {
            if (depth && !--depth && w + 1 < cap)
                out[w++] = ')';
            continue;
        }
        if (depth)
            continue;
        if (isdigit((unsigned char)*p)) {
            if (!w || out[w - 1] != '#')
                out[w++] = '#';
            continue;
        }
        out[w++] = *p;
    }
    out[w] = '\0';
}

void teller_step_classify(const char *a, teller_step_class *c)
{
    memset(c, 0, sizeof *c);
    c->prefill_seqs = c->prefill_tokens = c->decode_seqs = -1;
    c->work = -1;
    if (!a)
        a = "";
    if (strstr(a, "context_") && strstr(a, "generation_")) {
        c->prefill_seqs = int_after(a, "context_");
        c->prefill_tokens = ctx_tokens(a);
        c->decode_seqs = int_after(a, "generation_");
        if (c->prefill_seqs > 0)
            c->kind = c->decode_seqs > 0 ? TELLER_STEP_MIXED : TELLER_STEP_PREFILL;
        else if (c->prefill_seqs == 0 && c->decode_seqs > 0)
            c->kind = TELLER_STEP_DECODE;
        if (c->prefill_seqs >= 0 && c->decode_seqs >= 0 && (c->prefill_tokens >= 0 || c->prefill_seqs == 0))
            c->work = (int64_t)c->decode_seqs + (c->prefill_tokens > 0 ? c->prefill_tokens : 0);
        family_of(a, c->family, sizeof c->family);
    } else if (!strncmp(a, "step[", 5)) {
        /* SGLang: the batch size alone; DECODE's are all decoders */
        int32_t bs = int_after(a, "bs=");
        const char *k = a + 5;
        c->kind = !strncmp(k, "DECODE", 6) ? TELLER_STEP_DECODE
                  : !strncmp(k, "EXTEND", 6) || !strncmp(k, "PREFILL", 7) ? TELLER_STEP_PREFILL
                  : !strncmp(k, "MIXED", 5) ? TELLER_STEP_MIXED
                  : TELLER_STEP_OTHER;
        if (c->kind == TELLER_STEP_DECODE && bs >= 0) {
            c->prefill_seqs = c->prefill_tokens = 0;
            c->decode_seqs = bs;
        }
        c->work = bs;
        size_t n = strcspn(k, " ]");
        if (n > sizeof c->family - 7)
            n = sizeof c->family - 7;
        memcpy(c->family, "step[", 5);
        memcpy(c->family + 5, k, n);
        c->family[5 + n] = ']';
        c->family[6 + n] = '\0';
    } else {
        c->kind = !strncmp(a, "ProfilerStep#", 13) ? TELLER_STEP_ITERATION : TELLER_STEP_OTHER;
        family_of(a, c->family, sizeof c->family);
    }
}

int64_t teller_step_iteration(const char *name)
{
    if (strncmp(name, "ProfilerStep#", 13) || !name[13])
        return -1;
    int64_t v = 0;
    for (const char *p = name + 13; *p; p++) {
        if (*p < '0' || *p > '9' || v > (INT64_MAX - 9) / 10)
            return -1;
        v = v * 10 + (*p - '0');
    }
    return v;
}

const char *teller_step_kind_name(teller_step_kind k)
{
    switch (k) {
    case TELLER_STEP_PREFILL: return "prefill";
    case TELLER_STEP_DECODE: return "decode";
    case TELLER_STEP_MIXED: return "mixed";
    case TELLER_STEP_ITERATION: return "iteration";
    default: return "other";
    }
}
