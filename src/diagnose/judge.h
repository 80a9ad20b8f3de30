/*
 * judge.h - what diagnose.c uses to judge the steps once the detector
 * table has run: the steps' yardsticks (yardstick.c) and their
 * explanations (facts.c). Not a public header.
 */
#ifndef TELLER_DIAG_JUDGE_H
#define TELLER_DIAG_JUDGE_H

#include <stdint.h>

#include "cand.h"
#include "context.h"
#include "teller/tree.h"

/* Each step's kind and usual duration (out->groups, out->group_steps,
 * out->ref_steps, each step's group, work, usual_ns, excess_ns), the
 * steps' dur_ns first; flagged[k]: a finding of step k's own flags it (a
 * group's reference is its steps not flagged, when there are enough). 0,
 * or -1 out of memory. */
int diag_yardsticks(const dctx *D, diag_state *S, const uint8_t *flagged, double spreads);
/* How far step s is past the step alarm (its usual plus `spreads` of its
 * spreads, at least 1 % and 20 us over): 0.5 at the edge, towards 1
 * beyond, 0 when no slower than usual or without a yardstick. */
double diag_slowness(const teller_diag_step *s, double spreads);
/* Step k's kind, from the annotation that states the most work among its
 * ranks', else that of rank (the rank the step took longest on), else of
 * its lowest rank that has one (a step without one is a kind of its own),
 * and its work: what the annotation states, else the kernels the
 * annotation's rank launched. */
void diag_step_class(const dctx *D, uint32_t k, int32_t rank, teller_step_class *out);
/* reference.c: with a reference run, each step (its own yardstick set)
 * judged against the reference's usual for its kind and work instead
 * (by_reference) where the run has no yardstick for it, or where the
 * steps of its kind are slower than the reference's beyond its alarm as a
 * whole (their median): what slows every step alike. The other steps drop
 * the findings judged against the reference. 0, or -1 out of memory. */
int diag_reference_yardsticks(const dctx *D, diag_state *S, double spreads);
/* How the reference's usual for a step is made: the median of its kind's
 * steps, a line through them by their work, the median of those nearest
 * in work (a kind of too few steps to fit), or (the run's first step) the
 * reference's own first step, of that kind and longer. */
typedef enum diag_ref_how { DIAG_REF_MEDIAN, DIAG_REF_LINE, DIAG_REF_NEAR, DIAG_REF_FIRST } diag_ref_how;
/* reference.c: whether the reference has steps of step k's kind; how
 * many (*steps) and how their usual is made (*how). */
int diag_reference_kind(const diag_state *S, uint32_t k, uint32_t *steps, diag_ref_how *how);
/* reference.c: what the run, diagnosed with S->ref_make, says is usual. 0,
 * or -1 out of memory. */
int diag_reference_keep(const dctx *D, const diag_state *S, teller_diag_reference **out);
/* The explanation of abnormal step s, whose top finding is c, and of a
 * step slower than its usual that no finding explains, with the facts
 * their numbers are (s->first_fact, s->nfacts). */
void diag_explain(const dctx *D, diag_state *S, teller_diag_step *s, const cand *c);
void diag_explain_slow(const dctx *D, diag_state *S, teller_diag_step *s);

#endif
