/*
 * notes.c - the notes on what the run did not let the diagnosis see or
 * trust (the explanations are facts.c's).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "context.h"

void diag_add_note(diag_state *S, const char *text)
{
    teller_diagnosis *d = S->out;
    char **nn = realloc(d->notes, (d->nnotes + 1) * sizeof *nn);
    char *t = nn ? strdup(text) : NULL;
    if (nn)
        d->notes = nn;
    if (!t) {
        S->nomem = 1;
        return;
    }
    d->notes[d->nnotes++] = t;
}

/* The profiler's own work inside the steps (TELLER_F_PROFILER): the step
 * and rank where it took the most, in all, and in how many (step, rank)
 * pairs it took any. A stall that is the tracer's, not the program's. */
static void profiler_note(const dctx *D, diag_state *S)
{
    int64_t most = 0;
    size_t pairs = 0, most_c = 0;
    for (size_t c = 0; c < (size_t)D->nsteps * D->nsrc; c++) {
        int64_t sum = D->cell[c].profiler_ns;
        pairs += sum > 0;
        if (sum > most) {
            most = sum;
            most_c = c;
        }
    }
    if (most < TELLER_FAULT_MATERIAL_NS)
        return;
    char note[400];
    snprintf(note, sizeof note,
             "the profiler's own work (CUPTI's activity buffer requests and flushes, its instrumentation) took "
             "%.3f ms in all inside step %u on rank %d, and some time in %zu (step, rank) pair%s: time the program "
             "untraced would not have spent; API calls are timed without it",
             (double)most / 1e6, (uint32_t)(most_c / D->nsrc) + S->out->step_base,
             (int)teller_store_source_c(D->st, (uint32_t)(most_c % D->nsrc))->rank, pairs, pairs == 1 ? "" : "s");
    diag_add_note(S, note);
}

/* Notes on what the run did not let the diagnosis see or trust. */
void diag_notes(const dctx *D, diag_state *S)
{
    const teller_store *st = D->st;
    const teller_step *steps = teller_store_steps(st);
    if (D->ev->n == 0) { /* e.g. a profiler that stopped before its first step */
        diag_add_note(S, "the traces hold no events: there is nothing to diagnose");
        return;
    }
    /* what could not be seen */
    int has_markers = 0;
    for (size_t i = 0; i < teller_store_num_steps(st); i++)
        has_markers |= steps[i].marker != TELLER_NONE;
    if (!has_markers)
        diag_add_note(S, "no step annotations were found: each rank's whole trace is one step, so per-step findings are coarse");
    for (size_t i = 0; has_markers && i < teller_store_num_steps(st); i++)
        if (steps[i].marker == TELLER_NONE && steps[i].step == 0) { /* a rank without annotations among ranks with */
            char note[256];
            snprintf(note, sizeof note,
                     "rank %d has no step annotation while other ranks have: its whole trace is taken as step 0, so "
                     "findings on it (and step 0's duration) are not per step",
                     (int)steps[i].rank);
            diag_add_note(S, note);
        }
    int lone = 1;
    for (size_t s = 0; s < teller_store_num_sources(st); s++)
        lone &= D->group[s] == (int32_t)s;
    if (teller_store_num_sources(st) > 1 && lone)
        diag_add_note(S, "no rank shares a tensor-parallel collective with another: kernels are not compared across peers");
    if (teller_store_num_sources(st) == 1)
        diag_add_note(S, "a single rank: communication is seen from one side only, and kernels have no peers to compare with");
    /* ranks whose trace ends in a step that never ended (tree.c) */
    size_t cut = 0;
    uint32_t cut_step = 0;
    for (size_t i = 0; i < teller_store_num_steps(st); i++)
        if (teller_step_unfinished(&steps[i])) {
            cut++;
            cut_step = steps[i].step;
        }
    if (cut) {
        char note[320];
        snprintf(note, sizeof note,
                 "%zu rank%s launched work after %s last step annotation ended: %s trace%s end%s in step %u, which "
                 "never ended (a process taken down in it: a watchdog, a crash)%s",
                 cut, cut == 1 ? "" : "s", cut == 1 ? "its" : "their", cut == 1 ? "its" : "their", cut == 1 ? "" : "s",
                 cut == 1 ? "s" : "", cut_step + S->out->step_base,
                 S->req ? ""
                        : "; the service logs (--log) would say whether a collective's watchdog fired, and who it "
                          "waited for");
        diag_add_note(S, note);
    }
    size_t loaded = teller_store_num_sources(st);
    const teller_source *first = loaded ? teller_store_source_c(st, 0) : NULL;
    if (first && first->world_size > 0 && (size_t)first->world_size > loaded) {
        char note[200];
        snprintf(note, sizeof note, "the trace names %d ranks but %zu %s loaded: the others are not seen",
                 first->world_size, loaded, loaded == 1 ? "was" : "were");
        diag_add_note(S, note);
    }
    profiler_note(D, S);
}
