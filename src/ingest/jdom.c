/*
 * jdom.c - see jdom.h. Recursive descent over json.h's pull tokenizer; the
 * whole input is in memory, so JSON_MORE means the input ended early.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jdom.h"
#include "json.h"

#define MAX_DEPTH 64
#define MAX_FILE  (256u << 20)

typedef struct jparser {
    json_cur    c;
    const char *base;
    const char *name;
    teller_error *err;
    int         failed;
} jparser;

static int jfail(jparser *p, const char *at, const char *msg)
{
    if (!p->failed)
        teller_error_set(p->err, TELLER_ERR_FORMAT, p->name, (uint64_t)(at - p->base), "%s", msg);
    p->failed = 1;
    return -1;
}

static int check(jparser *p, int r)
{
    if (r == JSON_OK)
        return 0;
    if (r == JSON_MORE)
        return jfail(p, p->c.end, "the JSON ends early");
    return jfail(p, p->c.p, p->c.err ? p->c.err : "invalid JSON");
}

static char *dup_str(jparser *p, const json_str *s)
{
    char *o = malloc(s->len + 8);
    if (!o) {
        jfail(p, p->c.p, "out of memory");
        return NULL;
    }
    if (!s->escaped) {
        memcpy(o, s->s, s->len);
        o[s->len] = 0;
        return o;
    }
    if (json_unescape(s, o, s->len + 8) < 0) {
        free(o);
        jfail(p, s->s, "bad escape in a string");
        return NULL;
    }
    return o;
}

static void free_val(jv *v)
{
    free(v->str);
    for (size_t i = 0; i < v->n; i++) {
        free_val(&v->items[i]);
        if (v->keys)
            free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
}

static int parse_val(jparser *p, jv *out, int depth);

static int push(jparser *p, jv *v, size_t *cap, const jv *item, char *key)
{
    if (v->n == *cap) {
        size_t nc = *cap ? *cap * 2 : 4;
        jv *ni = realloc(v->items, nc * sizeof *ni);
        if (!ni)
            return jfail(p, p->c.p, "out of memory");
        v->items = ni;
        if (v->type == J_OBJ) {
            char **nk = realloc(v->keys, nc * sizeof *nk);
            if (!nk)
                return jfail(p, p->c.p, "out of memory");
            v->keys = nk;
        }
        *cap = nc;
    }
    v->items[v->n] = *item;
    if (v->type == J_OBJ)
        v->keys[v->n] = key;
    v->n++;
    return 0;
}

static int parse_val(jparser *p, jv *out, int depth)
{
    memset(out, 0, sizeof *out);
    if (check(p, json_ws(&p->c)))
        return -1;
    out->offset = (uint64_t)(p->c.p - p->base);
    if (depth > MAX_DEPTH)
        return jfail(p, p->c.p, "nesting too deep");
    char ch = *p->c.p;
    if (ch == '{' || ch == '[') {
        out->type = ch == '{' ? J_OBJ : J_ARR;
        p->c.p++;
        size_t cap = 0;
        for (int first = 1;;) {
            int done;
            jv item;
            char *key = NULL;
            if (out->type == J_OBJ) {
                json_str k;
                if (check(p, json_obj_next(&p->c, &first, &k, &done)))
                    return -1;
                if (done)
                    return 0;
                if (!(key = dup_str(p, &k)))
                    return -1;
            } else {
                if (check(p, json_arr_next(&p->c, first, &done)))
                    return -1;
                first = 0;
                if (done)
                    return 0;
            }
            if (parse_val(p, &item, depth + 1)) {
                free(key);
                free_val(&item);
                return -1;
            }
            if (push(p, out, &cap, &item, key)) {
                free(key);
                free_val(&item);
                return -1;
            }
        }
    }
    if (ch == '"') {
        json_str s;
        if (check(p, json_string(&p->c, &s)))
            return -1;
        out->type = J_STR;
        return (out->str = dup_str(p, &s)) ? 0 : -1;
    }
    if (ch == 't' || ch == 'f' || ch == 'n') {
        const char *lit = ch == 't' ? "true" : ch == 'f' ? "false" : "null";
        size_t n = strlen(lit);
        if ((size_t)(p->c.end - p->c.p) < n || memcmp(p->c.p, lit, n) != 0)
            return jfail(p, p->c.p, "bad literal");
        p->c.p += n;
        out->type = ch == 'n' ? J_NULL : J_BOOL;
        out->b = ch == 't';
        return 0;
    }
    out->type = J_NUM;
    return check(p, json_double(&p->c, &out->num));
}

jv *jdom_parse(const char *name, const char *data, size_t len, teller_error *err)
{
    /* numbers at the very end need a terminator: parse a padded copy */
    char *buf = malloc(len + 2);
    jv *v = calloc(1, sizeof *v);
    if (!buf || !v) {
        free(buf);
        free(v);
        teller_error_set(err, TELLER_ERR_NOMEM, name, 0, "out of memory");
        return NULL;
    }
    memcpy(buf, data, len);
    buf[len] = '\n';
    buf[len + 1] = 0;
    jparser p = {{buf, buf + len + 1, NULL}, buf, name, err, 0};
    if (parse_val(&p, v, 0) == 0 && json_ws(&p.c) == JSON_OK)
        jfail(&p, p.c.p, "data after the JSON value");
    free(buf);
    if (p.failed) {
        jdom_free(v);
        return NULL;
    }
    return v;
}

jv *jdom_load(const char *path, teller_error *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        teller_error_set(err, TELLER_ERR_IO, path, 0, "cannot open the file");
        return NULL;
    }
    char *data = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len == cap) {
            cap = cap ? cap * 2 : 65536;
            char *nd = cap <= MAX_FILE ? realloc(data, cap) : NULL;
            if (!nd) {
                free(data);
                fclose(f);
                teller_error_set(err, TELLER_ERR_LIMIT, path, len, "file too large (or out of memory)");
                return NULL;
            }
            data = nd;
        }
        size_t n = fread(data + len, 1, cap - len, f);
        if (n == 0)
            break;
        len += n;
    }
    fclose(f);
    jv *v = jdom_parse(path, data ? data : "", len, err);
    free(data);
    return v;
}

void jdom_free(jv *v)
{
    if (!v)
        return;
    free_val(v);
    free(v);
}

const jv *jdom_get(const jv *o, const char *key)
{
    if (!o || o->type != J_OBJ)
        return NULL;
    for (size_t i = 0; i < o->n; i++)
        if (!strcmp(o->keys[i], key))
            return &o->items[i];
    return NULL;
}

double jdom_num(const jv *o, const char *key, double def)
{
    const jv *v = jdom_get(o, key);
    return v && v->type == J_NUM ? v->num : def;
}

const char *jdom_str(const jv *o, const char *key, const char *def)
{
    const jv *v = jdom_get(o, key);
    return v && v->type == J_STR ? v->str : def;
}

int jdom_bool(const jv *o, const char *key, int def)
{
    const jv *v = jdom_get(o, key);
    return v && v->type == J_BOOL ? v->b : def;
}
