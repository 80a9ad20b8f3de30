/*
 * tpe.h - Trace Pair Encoding: structural tokens for a step's call-chain
 * trees, and a byte-pair-style encoder over them (PAPER.md item 4).
 *
 * Serialisation. A step on one rank (or any set of events, such as a
 * causal-context slice, see slice.h) becomes a forest: an event's parent is
 * its nearest ancestor inside the set. The forest is walked depth first,
 * roots and children in time order, and every node becomes one base token
 * whose symbol is "TAG/NAME" ("KERNEL/gemm", "RUNTIME/LaunchKernel"):
 *   - TAG: the layer tag ("KERNEL", "BACKEND", ...);
 *   - NAME: the event's name family (teller_tpe_name_family):
 *      kernels by what they compute ("gemm", "attention", "norm",
 *      "comm.allreduce.ring", ...) whatever the vendor, library or tile
 *      size; runtime and driver calls without vendor prefix or version
 *      ("LaunchKernel" for cudaLaunchKernel, hipLaunchKernel,
 *      cuLaunchKernelEx); copies by direction and memory kind; Python
 *      frames as module.function; aten ops as they are; step annotations
 *      "step"; anything else its normalised name, digit runs masked to
 *      "#". The exact name stays reachable through the token's event.
 *      Python frames are left out altogether (their children hang from
 *      the nearest kept ancestor) when the vocabulary's frames option is
 *      off.
 * One token a node (not a TAG and a NAME token) because the pair is what
 * repeats: a vocabulary then spends no merge on joining a node's two
 * halves, and a node whose name a vocabulary never saw costs one token,
 * not two (measured: docs/ARCHITECTURE.md, TPE). Parallel arrays give, per
 * token, the parent (index of the parent node's token; TELLER_NONE at a
 * root), the depth (0 at the roots of the serialised forest, so a parent
 * is always the nearest earlier node one level up), the node's duration
 * and its duration bucket (below).
 *
 * Duration buckets. The bucket compares the node's duration with the median
 * duration of its operator (layer and teller_name_normalize'd name, digit
 * runs masked on ENGINE and OTHER events; not its family, so that "4x"
 * means slow for this op) over the whole loaded run: "lo" below 0.5x; "1x"
 * in [0.5, 1.41); "2x" in [1.41, 2.83); "4x" in [2.83, 5.66); "8x" at 5.66x
 * and more (log2 scale, bucket edges halfway between powers of two). An
 * operator whose median is 0 (instants) is always "1x". The bucket array
 * holds it on the tokens of the layers whose duration is their own work
 * (ENGINE, RUNTIME, DRIVER, KERNEL, MEMCPY, MEMSET, SYNC), when the
 * vocabulary's buckets option is on; every other token holds "1x" (BACKEND,
 * FRONTEND and OTHER spans include their children, whose buckets already
 * say what was slow; teller_tpe_bucket still gives theirs). An encoded
 * token's bucket is the most unusual of its base tokens' (1x, then lo, 2x,
 * 4x, 8x): a merged token or a run of 36 layers with one kernel 4x slower
 * says 4x, and the base tokens keep theirs for decoding. The bucket is
 * attached to tokens, not spelt in their symbols: merges and runs are
 * learned and found on symbols alone, so duration jitter (a launch 2x
 * slower in one layer of 36) splits no pattern, and what a vocabulary
 * learns on one workload meets another's (measured: docs/ARCHITECTURE.md,
 * TPE).
 *
 * Repeat runs (repeat.c). Before any merge, k >= 2 consecutive identical
 * sibling subtrees (a decode step's 36 identical layers, or a unit of
 * several sibling ops that recurs) keep their first copy, and the other
 * copies become one repeat token, so that a layer costs its tokens once on
 * any workload, with no learned merge. Identical means the same symbols and
 * depths (buckets may differ). The repeat token's symbol is "REPEAT~N", N
 * the run's copies in all, unit included, bucketed (2, 4, 8, 16, 32, 64,
 * 65+: at most that many); these 7 symbols are ids 0..6 of every
 * vocabulary (TELLER_TPE_REPEATS), never merge, and no name interns to
 * one. A repeat token covers the base tokens of the copies it stands for
 * (its span: first, len; the exact count is len / unit + 1), and unit[]
 * gives the unit's length in base tokens: its base tokens copy the symbols
 * unit[] before them. Like any token it keeps the first base token's parent
 * and depth (it hangs where the copied unit hangs, a sibling of it); its
 * duration is the sum over its base tokens (every node of the copies
 * counted once) and its bucket the most unusual of theirs. Units are whole
 * sibling items (an item is a node with its subtree), so a run never cuts
 * a node from its children. A run must stand for 3 nodes or more (it then
 * saves two tokens or more; fewer are left to merges).
 *
 * Vocabulary. An ordered table of symbols: a base symbol is a string (a
 * node's "TAG/NAME", or a layer's "TAG"), a merged symbol is a pair of
 * earlier symbols. The merge rank of a merged symbol is its order among
 * merged symbols. Base symbols seen for the first time after training get
 * new ids.
 *
 * Known names. Merges pair symbols by what they merge as
 * (teller_tpe_vocab_merges_as): a merged symbol, a layer symbol and a
 * known name as themselves; any other name (one that fewer than min_runs
 * training runs held, or one no training run showed, such as every name
 * interned after training) as its layer's symbol "TAG". So a name one
 * workload alone shows spends no merge, and an op a held-out workload
 * calls by a name of its own still merges with the launches and kernels
 * around it ("BACKEND RUNTIME/LaunchKernel KERNEL/elementwise"). A token
 * no merge takes keeps its own symbol; a merged token's symbol spells the
 * layer where a name was not known, and the encoded sequence keeps every
 * base symbol (base_sym) so that decoding is exact.
 *
 * Training (teller_tpe_train): first the known names (above), then
 * word-level BPE over many sequences, their repeat runs collapsed first,
 * and every symbol as what it merges as, as encoding sees them. Identical
 * sequences are counted once with a weight (their number, or the sum of
 * the weights given to teller_tpe_train_weighted). Adjacent pairs are counted
 * once; then the most frequent pair is merged everywhere, left to right
 * (ties: lower left id, then lower right id), with pair counts updated
 * incrementally around each merged occurrence and a lazy max-heap giving the
 * next pair. A merged token keeps the first token's parent and depth, sums
 * the durations. With cross_levels (the default, as in the paper) any
 * adjacent pair may merge; without it, only tokens with the same parent
 * and depth (a node with its next sibling), so a
 * merged token never spans a parent-child boundary: the tree stays
 * readable from the tokens, at the price of much less compression.
 *
 * Encoding (teller_tpe_encode) collapses repeat runs (on the symbols
 * themselves), then applies merges by rank over what is left, on what the
 * symbols merge as: candidate pairs wait in one bucket per merge,
 * taken in rank order (a merge only creates pairs of later rank), leftmost
 * first where occurrences overlap: O(n + V/64) for n tokens and V symbols,
 * the same result as applying the merges one after another, and no restart
 * after a merge. Each output token records the span of base tokens it
 * covers, and the encoded sequence keeps each base token's parent, depth
 * (relative to its token), duration and bucket, the interior a merged
 * token cannot carry, so that teller_tpe_decode gives back the base
 * sequence exactly: symbols by expanding merges through the vocabulary
 * (checked against base_sym, which gives the names a layer symbol stands
 * for) and copying repeat tokens' base symbols from one unit back,
 * structure and buckets from the side arrays, after checking that every
 * token's parent, depth, duration, bucket and span agree with them.
 *
 * Vocabulary file (teller_tpe_vocab_save/load), text, version 4 (version 1
 * held raw names, version 2 buckets in TAG symbols and no repeat runs,
 * version 3 a TAG and a NAME token a node; all are refused: learn it
 * again):
 *   teller-tpe-vocab 4
 *   options buckets=B cross=C frames=F
 *   symbols N               the symbols after the repeat symbols (not written)
 *   b ESCAPED_STRING        one line per symbol, in id order from id 7: a base
 *   u ESCAPED_STRING        symbol the merges know ('b'), one they know by its
 *   m LEFT RIGHT            layer ('u': "TAG/NAME", whose "TAG" must be an
 *                           earlier 'b' symbol), or a merge of two earlier ids
 *                           (never a repeat symbol)
 *   end HASH
 * Strings escape '\\' as "\\\\", bytes below 0x20, 0x7f and ' ' as "\\xHH".
 * HASH is the FNV-1a 64-bit hash, 16 hex digits, of every byte before the
 * "end" line. A file that stops early is TELLER_ERR_TRUNCATED, another
 * version or a bad hash, id or line is TELLER_ERR_FORMAT, with the line.
 */
#ifndef TELLER_TPE_H
#define TELLER_TPE_H

#include <stddef.h>
#include <stdint.h>

#include "teller/error.h"
#include "teller/store.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TELLER_TPE_VERSION 4
#define TELLER_TPE_BUCKETS 5 /* lo, 1x, 2x, 4x, 8x */
#define TELLER_TPE_REPEATS 7 /* repeat symbols, ids 0..6 of every vocabulary */

/* A token sequence. Base sequences (from serialisation) have one token per
 * base token: first[i] == i and len[i] == 1, unit[i] == 0, and event[i] is
 * the store event of the node; they never hold a repeat symbol. Encoded
 * sequences have n tokens covering nbase base tokens,
 * and keep base_parent/base_ddepth/base_dur_ns/base_event/base_bucket for exact decoding. All arrays
 * are owned by the sequence (teller_tpe_seq_free). */
typedef struct teller_tpe_seq {
    size_t    n;
    uint32_t *sym;         /* [n] symbol ids */
    uint32_t *parent;      /* [n] index of the parent token, TELLER_NONE at a root */
    uint16_t *depth;       /* [n] */
    int64_t  *dur_ns;      /* [n] */
    uint32_t *first;       /* [n] first base token covered */
    uint32_t *len;         /* [n] base tokens covered */
    uint32_t *event;       /* [n] store event of the first base token (TELLER_NONE when built by hand) */
    uint32_t *unit;        /* [n] a repeat token: the base tokens one copy back (its unit's length); else 0 */
    uint8_t  *bucket;      /* [n] duration bucket 0..4 (lo..8x); base: the node's (1, 1x, on the layers
                            * that carry none); encoded: the most unusual of its base tokens' (see above) */
    size_t    nbase;       /* encoded: base tokens; base sequences: == n */
    uint32_t *base_parent; /* encoded: [nbase] the base sequence's parent array; NULL in base sequences */
    int32_t  *base_ddepth; /* encoded: [nbase] base depth minus its token's depth */
    int64_t  *base_dur_ns; /* encoded: [nbase] */
    uint32_t *base_event;  /* encoded: [nbase] */
    uint8_t  *base_bucket; /* encoded: [nbase] */
    uint32_t *base_sym;    /* encoded: [nbase] the base symbols (a merged token may stand for names by their layer) */
} teller_tpe_seq;

/* Allocates the per-token arrays for n tokens (zeroed; buckets 1x), freeing what s held. */
teller_status teller_tpe_seq_alloc(teller_tpe_seq *s, size_t n, teller_error *err);
void teller_tpe_seq_free(teller_tpe_seq *s);

typedef struct teller_tpe_vocab teller_tpe_vocab;

typedef struct teller_tpe_vocab_opts {
    int buckets;      /* duration buckets in the bucket arrays (default 1; 0: all 1x) */
    int cross_levels; /* merges may join tokens of different parent or depth (default 1, the paper's) */
    int frames;       /* Python frames are nodes (default 0: left out, see docs/ARCHITECTURE.md, TPE) */
} teller_tpe_vocab_opts;

teller_tpe_vocab_opts teller_tpe_vocab_defaults(void);

/* An empty vocabulary; NULL when out of memory. */
teller_tpe_vocab *teller_tpe_vocab_create(const teller_tpe_vocab_opts *opts);
void teller_tpe_vocab_free(teller_tpe_vocab *v);
teller_tpe_vocab_opts teller_tpe_vocab_options(const teller_tpe_vocab *v);

/* Id of the base symbol s[0..len), added when new; TELLER_NONE when out of
 * memory. Never a repeat symbol, whatever the text. */
uint32_t teller_tpe_vocab_intern(teller_tpe_vocab *v, const char *s, size_t len);
size_t teller_tpe_vocab_size(const teller_tpe_vocab *v);   /* all symbols */
size_t teller_tpe_vocab_merges(const teller_tpe_vocab *v); /* merged symbols */
/* The symbol id pairs as in merges: itself for a merged symbol and a known
 * name, its layer's symbol for a name the merges do not know (see "Known
 * names"); TELLER_NONE for an unknown id. */
uint32_t teller_tpe_vocab_merges_as(const teller_tpe_vocab *v, uint32_t id);
/* 1 for a merged symbol (left/right filled), 0 for a base symbol (its text
 * in *text, living as long as the vocabulary), -1 for an unknown id. */
int teller_tpe_vocab_symbol(const teller_tpe_vocab *v, uint32_t id, const char **text, uint32_t *left,
                            uint32_t *right);
/* Writes the readable form of a symbol (base text, or the texts of its base
 * symbols joined by ' ') into out (at most cap bytes, NUL-terminated, "..."
 * when cut); returns the full length. */
size_t teller_tpe_symbol_text(const teller_tpe_vocab *v, uint32_t id, char *out, size_t cap);
/* The repeat symbol of a run of `copies` copies in all, unit included:
 * 0 "REPEAT~2", 1 "REPEAT~4" (3 or 4), ... 5 "REPEAT~64", 6 "REPEAT~65+". */
uint32_t teller_tpe_repeat_symbol(uint32_t copies);

/* The default vocabulary, built into the library (learned by `make vocab`
 * from the simulator corpus and the shared real traces; see
 * docs/ARCHITECTURE.md, TPE). A new vocabulary each call; the caller frees
 * it. */
teller_status teller_tpe_vocab_default(teller_tpe_vocab **out, teller_error *err);

teller_status teller_tpe_vocab_save(const teller_tpe_vocab *v, const char *path, teller_error *err);
/* The vocabulary file's bytes, as teller_tpe_vocab_save writes them, in
 * *out (malloc'd, caller frees; not NUL-terminated), *n bytes. */
teller_status teller_tpe_vocab_write(const teller_tpe_vocab *v, char **out, size_t *n, teller_error *err);
teller_status teller_tpe_vocab_load(const char *path, teller_tpe_vocab **out, teller_error *err);
/* Parses a vocabulary file's bytes; name is used in errors. */
teller_status teller_tpe_vocab_parse(const char *data, size_t n, const char *name, teller_tpe_vocab **out,
                                     teller_error *err);

/* ---- serialisation ---- */

/* The NAME part of the symbol of an event of the given layer: its family
 * (see above and the table in docs/ARCHITECTURE.md, TPE section). Writes
 * at most cap bytes, NUL-terminated, never an empty string ("?" for an
 * empty name); returns the length. */
size_t teller_tpe_name_family(teller_layer layer, const char *name, char *out, size_t cap);

/* Per loaded run: normalised names and family medians (see above). Built
 * once per store; lives until freed; the store must outlive it. */
typedef struct teller_tpe_ctx teller_tpe_ctx;

teller_status teller_tpe_ctx_create(const teller_store *st, teller_tpe_vocab *v, teller_tpe_ctx **out,
                                    teller_error *err);
void teller_tpe_ctx_free(teller_tpe_ctx *c);
/* The duration bucket (0..TELLER_TPE_BUCKETS-1) of event e. */
int teller_tpe_bucket(const teller_tpe_ctx *c, uint32_t e);
/* "lo", "1x", "2x", "4x", "8x". */
const char *teller_tpe_bucket_name(int b);

/* Serialises the given events (any order; duplicates ignored) as a forest,
 * see above. Instants and counters are skipped. */
teller_status teller_tpe_serialize_events(teller_tpe_ctx *c, const uint32_t *events, size_t n, teller_tpe_seq *out,
                                          teller_error *err);

/* One sequence per row of the step table (same order as
 * teller_store_steps): the events of that step on that rank. *out is an
 * array of *n sequences; free each, then the array. */
teller_status teller_tpe_serialize_steps(teller_tpe_ctx *c, teller_tpe_seq **out, size_t *n, teller_error *err);

/* ---- training, encoding, decoding ---- */

typedef struct teller_tpe_train_opts {
    uint32_t vocab;     /* merged symbols to learn (the learned vocabulary; base symbols are extra) */
    uint32_t min_count; /* stop when the best pair occurs fewer times (default 2) */
    uint32_t min_runs;  /* a name is known to the merges when at least this many runs hold it (default 3;
                         * 0 or 1: every name training sees); the others merge as their layer */
} teller_tpe_train_opts;

teller_tpe_train_opts teller_tpe_train_defaults(void);

/* Learns merges over the sequences (symbols of v) and appends them to v. */
teller_status teller_tpe_train(teller_tpe_vocab *v, const teller_tpe_seq *seqs, size_t nseqs,
                               const teller_tpe_train_opts *opts, teller_error *err);
/* The same, with weights[k] the number of times sequence k counts (0 leaves
 * it out; pair counts are sums of weights): how a training mix gives every
 * workload its say however many steps it has (`teller tpe train`). */
teller_status teller_tpe_train_weighted(teller_tpe_vocab *v, const teller_tpe_seq *seqs, const uint32_t *weights,
                                        size_t nseqs, const teller_tpe_train_opts *opts, teller_error *err);
/* The same, with runs[k] the run (trace, case, workload) sequence k comes
 * from, which decides the known names (opts->min_runs); runs NULL: every
 * sequence is its own run, as in teller_tpe_train and _weighted. weights
 * may be NULL (all 1). */
teller_status teller_tpe_train_runs(teller_tpe_vocab *v, const teller_tpe_seq *seqs, const uint32_t *weights,
                                    const uint32_t *runs, size_t nseqs, const teller_tpe_train_opts *opts,
                                    teller_error *err);

/* Encodes a base sequence with v's merges. out is replaced. */
teller_status teller_tpe_encode(const teller_tpe_vocab *v, const teller_tpe_seq *base, teller_tpe_seq *out,
                                teller_error *err);
/* Gives back the base sequence of an encoded one; TELLER_ERR_FORMAT when
 * the encoded arrays are inconsistent with each other or with v. */
teller_status teller_tpe_decode(const teller_tpe_vocab *v, const teller_tpe_seq *enc, teller_tpe_seq *out,
                                teller_error *err);

/* Encoder state reused across calls (no allocation per call once warm). */
typedef struct teller_tpe_encoder teller_tpe_encoder;
teller_tpe_encoder *teller_tpe_encoder_create(const teller_tpe_vocab *v);
void teller_tpe_encoder_free(teller_tpe_encoder *e);
/* Merges only: writes the encoded symbols into out (capacity base->n) and
 * returns their count. The fast path for counting and benchmarks. */
size_t teller_tpe_encode_syms(teller_tpe_encoder *e, const teller_tpe_seq *base, uint32_t *out);

#ifdef __cplusplus
}
#endif
#endif
