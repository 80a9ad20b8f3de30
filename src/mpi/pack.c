/*
 * pack.c - see pack.h. Layout: nine 64-bit counts (a magic number,
 * strings, sources, events, args rows, comm rows, warnings, kept warning
 * messages, tracks), then each section starting at a multiple of 8 bytes:
 * string lengths and their bytes, the source table, the track table, the
 * event columns start, dur, name, layer, flags, source, track, corr, args,
 * the args and comm tables, then each kept warning message with its NUL.
 *
 * Unpacking builds a teller_store that points into the buffer (only the
 * string table is allocated) and hands it to teller_store_append, so the
 * one append code serves both the threads and the processes, and the run's
 * store comes out the same, id for id, as when one process reads it all.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pack.h"
#include "../store/store_internal.h"

#define PACK_MAGIC 0x326b6370726c6c74ull /* "tllrpck2" */

/* The event columns the readers fill, in the order they are packed; the
 * tree build fills the others. */
#define EVENT_COLUMNS(X) X(start_ns) X(dur_ns) X(name) X(layer) X(flags) X(source) X(track) X(corr) X(args)

/* Copies n bytes to buf at *off, first rounded up to a multiple of 8;
 * with buf NULL only counts. */
static void put(char *buf, size_t *off, const void *p, size_t n)
{
    *off = (*off + 7) & ~(size_t)7;
    if (buf && n)
        memcpy(buf + *off, p, n);
    *off += n;
}

/* Writes st into buf (NULL: only measures); returns the size. */
static size_t pack_into(char *buf, const teller_store *st)
{
    const teller_events *ev = &st->ev;
    uint64_t head[9] = {PACK_MAGIC, st->nstr,          st->nsources, ev->n,      st->nargs,
                        st->ncomms, st->nwarn, st->nwarn_msgs, ev->ntracks};
    size_t off = 0;
    put(buf, &off, head, sizeof head);
    put(buf, &off, NULL, 0); /* the lengths, one after the other */
    for (size_t i = 0; i < st->nstr; i++) {
        if (buf)
            memcpy(buf + off, &st->strs[i].len, sizeof st->strs[i].len);
        off += sizeof st->strs[i].len;
    }
    for (size_t i = 0; i < st->nstr; i++) {
        if (buf)
            memcpy(buf + off, st->strs[i].ptr, st->strs[i].len);
        off += st->strs[i].len;
    }
    put(buf, &off, st->sources, st->nsources * sizeof *st->sources);
    put(buf, &off, ev->tracks, ev->ntracks * sizeof *ev->tracks);
    if (ev->n) {
#define PUT_COLUMN(c) put(buf, &off, ev->c, ev->n * sizeof *ev->c);
        EVENT_COLUMNS(PUT_COLUMN)
#undef PUT_COLUMN
    }
    put(buf, &off, st->args, st->nargs * sizeof *st->args);
    put(buf, &off, st->comms, st->ncomms * sizeof *st->comms);
    for (size_t i = 0; i < st->nwarn_msgs; i++)
        put(buf, &off, st->warn_msgs[i], strlen(st->warn_msgs[i]) + 1);
    return off;
}

void *teller_pack_store(const teller_store *st, size_t *n)
{
    size_t size = pack_into(NULL, st);
    char *buf = calloc(size ? size : 1, 1); /* zeroed: the alignment gaps are sent too */
    if (!buf)
        return NULL;
    pack_into(buf, st);
    *n = size;
    return buf;
}

/* The next n bytes of buf (size bytes) at *off rounded up to 8, or NULL
 * when they run past its end. */
static const void *take(const char *buf, size_t size, size_t *off, uint64_t n)
{
    size_t at = (*off + 7) & ~(size_t)7;
    if (at > size || n > size - at)
        return NULL;
    *off = at + n;
    return buf + at;
}

/* 1 when every id v[0..n) is below lim (or TELLER_NONE where none is allowed) */
static int ids_below(const uint32_t *v, size_t n, size_t lim, int none_ok)
{
    for (size_t i = 0; i < n; i++)
        if (v[i] >= lim && !(none_ok && v[i] == TELLER_NONE))
            return 0;
    return 1;
}

teller_status teller_pack_append(teller_store *dst, const void *data, size_t size, teller_error *err)
{
    const char *buf = data;
    size_t off = 0;
    const uint64_t *head = take(buf, size, &off, 9 * sizeof *head);
    if (!head || head[0] != PACK_MAGIC || head[1] == 0 || head[1] > UINT32_MAX || head[2] > UINT16_MAX ||
        head[3] >= TELLER_NONE || head[4] >= TELLER_NONE || head[5] >= TELLER_NONE || head[7] > TELLER_MAX_WARNINGS ||
        head[8] > head[3])
        return teller_error_set(err, TELLER_ERR_FORMAT, "(packed store)", 0, "not a packed store");
    teller_store v;
    memset(&v, 0, sizeof v);
    v.nstr = head[1];
    v.nsources = head[2];
    v.ev.n = head[3];
    v.nargs = head[4];
    v.ncomms = head[5];
    v.nwarn = head[6];
    v.nwarn_msgs = head[7];
    v.ev.ntracks = head[8];
    const uint32_t *lens = take(buf, size, &off, v.nstr * sizeof *lens);
    v.strs = lens ? malloc(v.nstr * sizeof *v.strs) : NULL;
    if (!v.strs) {
        if (!lens)
            return teller_error_set(err, TELLER_ERR_FORMAT, "(packed store)", off, "packed store cut short");
        return teller_error_set(err, TELLER_ERR_NOMEM, "(packed store)", 0, "out of memory");
    }
    int ok = 1;
    for (size_t i = 0; i < v.nstr && ok; i++) {
        ok = lens[i] <= size - off;
        v.strs[i].ptr = buf + off;
        v.strs[i].len = lens[i];
        off += ok ? lens[i] : 0;
    }
    size_t n = v.ev.n;
#define TAKE(field, count) (ok = ok && ((field) = (void *)(uintptr_t)take(buf, size, &off, (count) * sizeof *(field))) != NULL)
    TAKE(v.sources, v.nsources);
    TAKE(v.ev.tracks, v.ev.ntracks);
    if (n) {
#define TAKE_COLUMN(c) TAKE(v.ev.c, n);
        EVENT_COLUMNS(TAKE_COLUMN)
#undef TAKE_COLUMN
    }
    TAKE(v.args, v.nargs);
    TAKE(v.comms, v.ncomms);
#undef TAKE
    for (size_t i = 0; i < v.nwarn_msgs && ok; i++) {
        size_t at = (off + 7) & ~(size_t)7;
        const char *end = at < size ? memchr(buf + at, 0, size - at) : NULL;
        ok = end != NULL;
        if (ok) {
            v.warn_msgs[i] = (char *)(uintptr_t)(buf + at);
            off = (size_t)(end - buf) + 1;
        }
    }
    /* every id must name a row of its table: teller_store_append looks
     * them up unchecked */
    for (size_t i = 0; i < n && ok; i++)
        ok = v.ev.source[i] < v.nsources;
    ok = ok && ids_below(v.ev.name, n, v.nstr, 0) && ids_below(v.ev.args, n, v.nargs, 1) &&
         ids_below(v.ev.track, n, v.ev.ntracks, 0);
    for (size_t i = 0; i < v.nsources && ok; i++)
        ok = v.sources[i].path < v.nstr && v.sources[i].host < v.nstr && v.sources[i].device_name < v.nstr;
    for (size_t i = 0; i < v.nargs && ok; i++)
        ok = (v.args[i].comm < v.ncomms || v.args[i].comm == TELLER_NONE) && v.args[i].request < v.nstr &&
             v.args[i].in_dims < v.nstr && v.args[i].in_types < v.nstr;
    for (size_t i = 0; i < v.ncomms && ok; i++) {
        const teller_comm *c = &v.comms[i];
        ok = c->collective < v.nstr && c->pg_name < v.nstr && c->pg_desc < v.nstr && c->pg_ranks < v.nstr && c->dtype < v.nstr;
    }
    /* and every time keeps the bounds the trace readers keep: the tree
     * build sums starts and durations unchecked */
    size_t bad = n;
    for (size_t i = 0; i < n && ok && bad == n; i++)
        bad = teller_time_ok(v.ev.start_ns[i], v.ev.dur_ns[i]) ? n : i;
    teller_status s;
    if (!ok)
        s = teller_error_set(err, TELLER_ERR_FORMAT, "(packed store)", off, "packed store cut short or damaged");
    else if (bad < n)
        s = teller_error_set(err, TELLER_ERR_FORMAT, "(packed store)", (uint64_t)((const char *)&v.ev.start_ns[bad] - buf),
                             "event %zu starts at %lld ns and lasts %lld ns, past the bounds of any trace", bad,
                             (long long)v.ev.start_ns[bad], (long long)v.ev.dur_ns[bad]);
    else
        s = teller_store_append(dst, &v, err);
    free(v.strs);
    return s;
}
