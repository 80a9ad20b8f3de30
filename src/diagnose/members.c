/*
 * members.c - the collectives' members as the run-wide parts of the
 * diagnosis read them (diag_member, context.h): each member's arrival and
 * transfer, step, name, process group, direction and size, one per member
 * of the store's table. Lateness, late arrivals, transfers, hangs, peer
 * groups and a reference's transfers read these, never another rank's
 * events. Each field is one of the member's communication row
 * (tree_internal.h, teller_coll_row), which a process that does not hold
 * the rank receives in the rank's summary; found here from the member's
 * kernel while the process holds every event (docs/SCALE.md).
 */
#include <stdlib.h>
#include <string.h>

#include "context.h"

int diag_members_build(dctx *D)
{
    const teller_events *ev = D->ev;
    const teller_collective *co = teller_store_collectives(D->st);
    const teller_coll_member *mem = teller_store_coll_members(D->st);
    size_t n = 0;
    for (size_t c = 0; c < teller_store_num_collectives(D->st); c++)
        if (co[c].first_member + co[c].num_members > n)
            n = co[c].first_member + co[c].num_members;
    diag_member *out = malloc((n ? n : 1) * sizeof *out);
    if (!out)
        return -1;
    for (size_t m = 0; m < n; m++) {
        uint32_t k = mem[m].kernel;
        const teller_comm *cm = teller_store_event_comm(D->st, k);
        const char *coll = cm ? teller_store_str(D->st, cm->collective) : "";
        out[m] = (diag_member){
            .start = ev->start_ns[k],
            .dur = ev->dur_ns[k],
            .elems = cm && cm->in_nelems > 0 ? cm->in_nelems : -1,
            .step = ev->step[k],
            .name = ev->name[k],
            .pg_ranks = cm ? cm->pg_ranks : 0,
            .src = ev->source[k],
            .dir = (int8_t)(!strcmp(coll, "send") ? 1 : !strcmp(coll, "recv") ? -1 : 0),
        };
    }
    D->member = out;
    return 0;
}
