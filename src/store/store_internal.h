/*
 * store_internal.h - the store's private layout, shared by store.c and the
 * tree builder (which fills the derived tables). Not a public header.
 */
#ifndef TELLER_STORE_INTERNAL_H
#define TELLER_STORE_INTERNAL_H

#include "teller/store.h"
#include "../util/kmap.h"

/* String blocks: interned text lives in blocks that never move. */
typedef struct str_block {
    struct str_block *next;
    size_t            used, size;
    char              data[];
} str_block;

struct teller_store {
    /* interned strings */
    str_block   *blocks;
    struct str_ent { const char *ptr; uint32_t len, hash; } *strs; /* id -> text */
    size_t       nstr, str_cap;
    uint32_t    *htab;      /* open addressing, TELLER_NONE = empty */
    size_t       hcap;      /* power of two */
    size_t       str_bytes;

    teller_source *sources;
    size_t         nsources, sources_cap;

    teller_events ev;
    size_t        ev_cap;
    /* ev.tracks, and (pid, tid) -> its index */
    teller_track *tracks;
    size_t        tracks_cap;
    kmap          track_map;

    teller_args *args;
    size_t       nargs, args_cap;
    teller_comm *comms;
    size_t       ncomms, comms_cap;

    /* derived (tree.c) */
    teller_step        *steps;
    teller_step        *spans;  /* the steps as stamping read them (teller_tree_spans), nsteps of them */
    uint32_t           *step_names; /* per row of steps: its annotation's name, TELLER_NONE none */
    size_t              nsteps;
    uint32_t            step_count;
    teller_collective  *colls;
    size_t              ncolls;
    teller_coll_member *members;
    size_t              nmembers;
    int64_t            (*extent)[2]; /* per source: its first start and last end (teller_tree_extent) */
    struct teller_member_row *member_rows; /* per member: its row (teller_tree_member_rows) */
    teller_node        *nodes;
    size_t              nnodes;
    /* per (step, source), the cells of the sources whose cells_given is 1:
     * found by the process that holds them (steps.c, teller_step_cells) */
    struct teller_step_cell *cells;
    uint8_t                 *cells_given;

    /* warnings */
    uint64_t nwarn;
    char    *warn_msgs[TELLER_MAX_WARNINGS];
    size_t   nwarn_msgs;

    /* readers' scratch (teller_store_scratch) */
    void    *scratch;
    size_t   scratch_cap;

    /* a per-file store that is only read into and appended to a run's
     * (teller_load, teller-mpi's readers): the tree's five event columns
     * (parent, first_child, next_sibling, depth, step) are neither
     * allocated nor written, since teller_store_append sets them in the run's
     * store; 17 bytes per event less to write, copy and fault in. Set once,
     * while the store is empty. */
    int      bare;
};

/* Grows every event column to hold `need` events; 0 or -1 (out of memory). */
int teller_store_reserve_events(teller_store *st, size_t need);
/* Grows the args table to hold `need` rows; 0 or -1 (out of memory). */
int teller_store_reserve_args(teller_store *st, size_t need);
/* teller_store_append of a store whose trees are built per source
 * (teller_tree_local), into a store that is not bare: its trees come
 * along, their event indexes moved, and its sources stay whole, so that
 * dst holds them as if their files had been read and built in it. */
teller_status teller_store_append_local(teller_store *dst, const teller_store *src, teller_error *err);
/* Gives back the event columns' and the args table's room past what they
 * hold (a store kept long, as a teller-mpi reader keeps each file's: a
 * reader reserves room for the events a file's size suggests). */
void teller_store_fit(teller_store *st);
/* Empties a store that has not been tree-built, keeping the capacity of its
 * columns and tables (their pages stay mapped), so that the next file read
 * into it neither grows nor faults them in again. */
void teller_store_reset(teller_store *st);
/* A buffer of at least n bytes for a reader to work in (the Kineto reader
 * inflates a whole gzip file into it), owned by the store and kept from
 * file to file, so that reading many files does not map and fault in a
 * fresh buffer each time; its contents are not kept. Valid until the next
 * call, teller_store_drop_scratch or teller_store_free. NULL when out of
 * memory. */
void *teller_store_scratch(teller_store *st, size_t n);
/* Releases the scratch buffer (teller_tree_build does: reading is over). */
void teller_store_drop_scratch(teller_store *st);

#endif
