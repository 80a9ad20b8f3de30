/*
 * sentences.c - what the diagnosis says in words: the explanation of a
 * step's top finding, durations as text, and the notes on what the run
 * did not let it see.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diag_internal.h"

void diag_add_note(dctx *D, const char *text)
{
    teller_diagnosis *d = D->out;
    char **nn = realloc(d->notes, (d->nnotes + 1) * sizeof *nn);
    char *t = nn ? strdup(text) : NULL;
    if (nn)
        d->notes = nn;
    if (!t) {
        D->nomem = 1;
        return;
    }
    d->notes[d->nnotes++] = t;
}

/* Notes on what the run did not let the diagnosis see or trust. */
void diag_notes(dctx *D)
{
    teller_store *st = D->st;
    const teller_step *steps = teller_store_steps(st);
    if (D->ev->n == 0) { /* e.g. a profiler that stopped before its first step */
        diag_add_note(D, "the traces hold no events: there is nothing to diagnose");
        return;
    }
    /* what could not be seen */
    int has_markers = 0;
    for (size_t i = 0; i < teller_store_num_steps(st); i++)
        has_markers |= steps[i].marker != TELLER_NONE;
    if (!has_markers)
        diag_add_note(D, "no step annotations were found: each rank's whole trace is one step, so per-step findings are coarse");
    for (size_t i = 0; has_markers && i < teller_store_num_steps(st); i++)
        if (steps[i].marker == TELLER_NONE && steps[i].step == 0) { /* a rank without annotations among ranks with */
            char note[256];
            snprintf(note, sizeof note,
                     "rank %d has no step annotation while other ranks have: its whole trace is taken as step 0, so "
                     "findings on it (and step 0's duration) are not per step",
                     (int)steps[i].rank);
            diag_add_note(D, note);
        }
    int lone = 1;
    for (size_t s = 0; s < teller_store_num_sources(st); s++)
        lone &= D->group[s] == (int32_t)s;
    if (teller_store_num_sources(st) > 1 && lone)
        diag_add_note(D, "no rank shares a tensor-parallel collective with another: kernels are not compared across peers");
    if (teller_store_num_sources(st) == 1)
        diag_add_note(D, "a single rank: communication is seen from one side only, and kernels have no peers to compare with");
    if (D->nsteps < 4)
        diag_add_note(D, "fewer than four steps: what is usual comes from within the same steps, so findings are tentative");
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
                 cut == 1 ? "s" : "", cut_step,
                 D->req ? ""
                        : "; the service logs (--log) would say whether a collective's watchdog fired, and who it "
                          "waited for");
        diag_add_note(D, note);
    }
    size_t loaded = teller_store_num_sources(st);
    const teller_source *first = loaded ? teller_store_source_c(st, 0) : NULL;
    if (first && first->world_size > 0 && (size_t)first->world_size > loaded) {
        char note[200];
        snprintf(note, sizeof note, "the trace names %d ranks but %zu %s loaded: the others are not seen",
                 first->world_size, loaded, loaded == 1 ? "was" : "were");
        diag_add_note(D, note);
    }
}

void diag_fmt_ms(char *b, size_t n, double ns)
{
    if (ns >= 1e9)
        snprintf(b, n, "%.3f s", ns / 1e9);
    else if (ns >= 1e6)
        snprintf(b, n, "%.3f ms", ns / 1e6);
    else
        snprintf(b, n, "%.1f us", ns / 1e3);
}

void diag_explain(dctx *D, teller_diag_step *s, const cand *c)
{
    char what[256], dur[32], ex[32], act[32], usual[32];
    int32_t node = diag_node_of_rank(D->st, c->rank);
    teller_fault_what(c->det, teller_fault_def_of(c->det)->by_node ? node : c->rank, what, sizeof what);
    diag_fmt_ms(dur, sizeof dur, (double)s->dur_ns);
    diag_fmt_ms(ex, sizeof ex, (double)s->excess_ns);
    diag_fmt_ms(act, sizeof act, c->actual);
    /* an operator a usual step (next to) never runs, a swap's copies or a
     * cudaMalloc, has no usual time worth setting its own against: under
     * 50 ns it would read "against a usual 0.0 us" */
    char against[64];
    diag_fmt_ms(usual, sizeof usual, c->usual);
    if (c->usual >= 50)
        snprintf(against, sizeof against, " against a usual %s", usual);
    else
        snprintf(against, sizeof against, " (usually next to none)");
    int n;
    if (c->det == TELLER_FAULT_NCCL_HANG) {
        /* the root never ran the operator: say who waited, not what it "took" */
        if (c->rank < 0)
            n = snprintf(s->pred.explanation, sizeof s->pred.explanation,
                         "Step %u took %s, %s longer than expected: a rank whose trace is not loaded never launched "
                         "its collective, so the %u loaded member(s) (rank %d among them) blocked in %s until the "
                         "NCCL watchdog fired (nccl_hang).",
                         s->pred.step, dur, ex, c->fed, c->peer, teller_store_str(D->st, c->name));
        else {
            char others[48] = "";
            if (c->fed > 1)
                snprintf(others, sizeof others, " and %u other member%s", c->fed - 1, c->fed > 2 ? "s" : "");
            n = snprintf(s->pred.explanation, sizeof s->pred.explanation,
                         "Step %u took %s, %s longer than expected: %s (nccl_hang). The root operator is %s on rank %d "
                         "(node %d), which it never launched; rank %d%s waited %s for it.",
                         s->pred.step, dur, ex, what, teller_store_str(D->st, c->name), c->rank, node, c->peer, others,
                         ex);
        }
    } else if (c->carried) {
        /* nothing of its own: the numbers are the carried finding's */
        char came[32];
        diag_fmt_ms(came, sizeof came, c->came);
        n = snprintf(s->pred.explanation, sizeof s->pred.explanation,
                     "Step %u took %s, %s longer than expected: %s (%s), carried from step %u: its GPU work queued "
                     "behind step %u's, which ended %s late. The root operator is %s on rank %d (node %d), which took "
                     "%s in step %u%s.",
                     s->pred.step, dur, ex, what, teller_fault_name(c->det), c->from, s->pred.step - 1, came,
                     teller_store_str(D->st, c->name), c->rank, node, act, c->from, against);
    } else {
        n = snprintf(s->pred.explanation, sizeof s->pred.explanation,
                     "Step %u took %s, %s longer than expected: %s (%s). The root operator is %s on rank %d (node %d), "
                     "which took %s%s.",
                     s->pred.step, dur, ex, what, teller_fault_name(c->det), teller_store_str(D->st, c->name), c->rank, node,
                     act, against);
    }
    if (s->pred.nev > 0 && n > 0 && (size_t)n < sizeof s->pred.explanation - 40)
        snprintf(s->pred.explanation + n, sizeof s->pred.explanation - (size_t)n, " Log: \"%.300s\"", s->pred.ev[0].text);
}
