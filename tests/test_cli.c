/*
 * test_cli.c - the `teller` program's handling of what users type: bad
 * option values are errors that say what was wanted, a rank the trace does
 * not have is named as such, and the version is there.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "teller/model.h"

static void test_cli_option_values(void)
{
    char out[8192], args[4600];
    CHECK_EQ_INT(run_cli("--version", out, sizeof out), 0);
    CHECK(!strncmp(out, "teller ", 7));
    const char *b200 = shared_path("tracelens/b200/eager_trace.json.gz");
    const char *bad[] = {"abc", "5", "-1", "0.5x", ""};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        snprintf(args, sizeof args, "diagnose -q --threshold '%s' '%s'", bad[i], b200);
        CHECK_EQ_INT(run_cli(args, out, sizeof out), 2);
        CHECK(strstr(out, "--threshold wants a number") != NULL);
    }
    snprintf(args, sizeof args, "diagnose -q --threshold 0.7 '%s'", b200);
    CHECK_EQ_INT(run_cli(args, out, sizeof out), 0);
    CHECK_EQ_INT(run_cli("simulate --nodes two -o /tmp/teller_cli_never", out, sizeof out), 2);
    CHECK(strstr(out, "--nodes wants an integer") != NULL);
}

/* Found by review: a step nested 100,000 deep crashed `teller tree` (one
 * stack frame a level); --step past 32 bits wrapped to step 0 in `teller
 * slice`, and --max 0 was taken and ignored; `requests --json` took --id
 * and --slowest and ignored them; bidirectional overrides in a name were
 * printed raw. */
static void test_cli_deep_trees_and_out_of_range_values(void)
{
    char dir[] = "/tmp/teller_cli_deep_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[600], out[8192], args[1400];
    snprintf(path, sizeof path, "%s/rank0.trace.json", dir);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f)
        return;
    enum { DEEP = 100000 };
    fputs("{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#0\", "
          "\"pid\": 1, \"tid\": 1, \"ts\": 0, \"dur\": 1000000}", f);
    for (int i = 1; i <= DEEP; i++)
        fprintf(f, ",\n{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"op\", \"pid\": 1, \"tid\": 1, \"ts\": %d, "
                   "\"dur\": %d}", i, 1000000 - 2 * i);
    fputs("]}\n", f);
    fclose(f);
    snprintf(args, sizeof args, "tree -q '%s' | tail -1", path);
    CHECK_EQ_INT(run_cli(args, out, sizeof out), 0);
    CHECK(strstr(out, "(depth 100000) [backend] op") != NULL);
    snprintf(args, sizeof args, "slice --step 4294967296 --rank 0 '%s'", path);
    CHECK_EQ_INT(run_cli(args, out, sizeof out), 2);
    CHECK(strstr(out, "--step wants an integer from 0 to 2147483647") != NULL);
    snprintf(args, sizeof args, "slice --step 0 --rank 0 --max 0 '%s'", path);
    CHECK_EQ_INT(run_cli(args, out, sizeof out), 2);
    snprintf(args, sizeof args, "requests --json --slowest 1 '%s'", path);
    CHECK_EQ_INT(run_cli(args, out, sizeof out), 2);
    /* a name with a right-to-left override, a C1 control and a line
     * separator prints them escaped: they would reorder or drive the terminal */
    f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) {
        fputs("{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#0\", "
              "\"pid\": 1, \"tid\": 1, \"ts\": 0, \"dur\": 100}, {\"ph\": \"X\", \"cat\": \"cpu_op\", "
              "\"name\": \"evil\\u202egnp.exe\\u009b31m\\u2028x\", \"pid\": 1, \"tid\": 1, \"ts\": 1, \"dur\": 5}]}\n", f);
        fclose(f);
        snprintf(args, sizeof args, "tree -q '%s'", path);
        CHECK_EQ_INT(run_cli(args, out, sizeof out), 0);
        CHECK(strstr(out, "evil\\u202egnp.exe\\u009b31m\\u2028x") != NULL);
        CHECK(strstr(out, "\xe2\x80\xae") == NULL);
    }
    unlink(path);
    rmdir(dir);
}

static void test_cli_missing_rank(void)
{
    char out[8192], args[4600];
    snprintf(args, sizeof args, "tree -q --rank 3 '%s'", shared_path("tracelens/b200/eager_trace.json.gz"));
    CHECK_EQ_INT(run_cli(args, out, sizeof out), 1);
    CHECK(strstr(out, "no rank 3") != NULL && strstr(out, "its ranks: 0") != NULL);
    CHECK(strstr(out, "no step") == NULL);
}

/* Every command loads through the one-run check: traces of two runs are
 * refused (exit 1) naming both and saying how to force them; --force reads
 * them; --jobs wants a thread count. */
static void test_cli_refuses_two_runs(void)
{
    char out[8192], args[9000], b200[4096], h100[4096];
    snprintf(b200, sizeof b200, "%s", shared_path("tracelens/b200/eager_trace.json.gz"));
    snprintf(h100, sizeof h100, "%s", shared_path("tracelens/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"));
    snprintf(args, sizeof args, "stats -q '%s' '%s'", b200, h100);
    CHECK_EQ_INT(run_cli(args, out, sizeof out), 1);
    CHECK(strstr(out, b200) && strstr(out, h100) && strstr(out, "cannot be one run") && strstr(out, "--force"));
    snprintf(args, sizeof args, "stats -q --force -j 2 '%s' '%s'", b200, h100);
    CHECK_EQ_INT(run_cli(args, out, sizeof out), 0);
    CHECK(strstr(out, "ranks             2") != NULL);
    snprintf(args, sizeof args, "stats -q -j 0 '%s'", b200);
    CHECK_EQ_INT(run_cli(args, out, sizeof out), 2);
    CHECK(strstr(out, "-j wants an integer") != NULL);
}

/* diagnose --candidates writes every step's candidates; eval --candidates
 * reads them back as candidate recall@K, alone or beside the predictions */
static void test_cli_candidates(void)
{
    char out[8192], args[4600];
    char dir[] = "/tmp/teller_cli_cands_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    snprintf(args, sizeof args, "simulate -o %s/case --steps 30 --fault all --fault-rate 0.4 --seed 77", dir);
    CHECK_EQ_INT(run_cli(args, out, sizeof out), 0);
    snprintf(args, sizeof args, "diagnose --json %s/p.json --candidates %s/c.json %s/case", dir, dir, dir);
    CHECK_EQ_INT(run_cli(args, out, sizeof out), 0);
    CHECK(strstr(out, "/c.json") != NULL);
    snprintf(args, sizeof args, "eval --truth %s/case --candidates %s/c.json", dir, dir);
    CHECK_EQ_INT(run_cli(args, out, sizeof out), 0);
    CHECK(strstr(out, "candidate recall@K, 1 case(s)") != NULL && strstr(out, "opAC1") == NULL);
    snprintf(args, sizeof args, "eval --json --truth %s/case --pred %s/p.json --candidates %s/c.json", dir, dir, dir);
    CHECK_EQ_INT(run_cli(args, out, sizeof out), 0);
    CHECK(strstr(out, "\"candidate_recall\"") != NULL && strstr(out, "\"operator\"") != NULL);
    /* predictions are not candidates: eval says which file is wrong */
    snprintf(args, sizeof args, "eval --truth %s/case --candidates %s/case/truth.json", dir, dir);
    CHECK_EQ_INT(run_cli(args, out, sizeof out), 1);
    CHECK(strstr(out, "truth.json") != NULL);
    /* a corpus paired with a predictions file (or nothing there): eval says
     * the corpus wants a directory, not that the corpus lacks a truth.json */
    snprintf(args, sizeof args, "eval --truth %s --pred %s/p.json", dir, dir);
    CHECK_EQ_INT(run_cli(args, out, sizeof out), 1);
    CHECK(strstr(out, "is a corpus of 1 case:") != NULL && strstr(out, "p.json is not one") != NULL);
    rm_rf(dir);
}

/* teller train writes a model that diagnose --model uses; --no-model is
 * the numeric stage; a model file that is not one is an error naming it */
static void test_cli_train_and_model(void)
{
    char out[16384], args[4600];
    char dir[] = "/tmp/teller_cli_train_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    snprintf(args, sizeof args, "simulate --corpus 3 --steps 20 --nodes 1 --gpus-per-node 2 --fault all --seed 31 -o %s/c",
             dir);
    CHECK_EQ_INT(run_cli(args, out, sizeof out), 0);
    snprintf(args, sizeof args, "train -o %s/m.tmod --epochs 3 --seed 2 %s/c", dir, dir);
    CHECK_EQ_INT(run_cli(args, out, sizeof out), 0);
    CHECK(strstr(out, "3 cases") != NULL && strstr(out, "epoch   3") != NULL && strstr(out, "kept epoch") != NULL);
    CHECK(strstr(out, "abnormal from P 0.") != NULL && strstr(out, "validation: step F1 ") != NULL);
    CHECK(strstr(out, "TPE tokens, vocabulary of") != NULL);
    /* ablations: modalities left out (the model file keeps them out where
     * it is used, --model-alone scores it without the numeric stage's
     * rules), raw tokens, a vocabulary learned on the slices; the options
     * that exclude each other */
    static const struct {
        const char *args; /* two %s: the directory */
        int         rc;
        const char *want;
    } abl[] = {
        {"train -o %s/ma.tmod --epochs 2 --without logs --without numbers %s/c", 0, "validation: step F1 "},
        {"train -o %s/mt.tmod --epochs 2 --without trace %s/c", 0, "validation: step F1 "},
        {"diagnose --model %s/mt.tmod --model-alone %s/c/case_0000", 0, " (teller train)\n"},
        {"train -o %s/ma.tmod --without time %s/c", 2, "--without takes trace, logs or numbers, not 'time'"},
        {"train -o %s/mr.tmod --epochs 2 --trace-tokens raw %s/c", 0, "raw tokens, vocabulary of"},
        {"train -o %s/mr.tmod --epochs 2 --trace-tokens raw %s/c", 0, "(0 merges)"},
        {"train -o %s/mv.tmod --epochs 2 --tpe-vocab 8 %s/c", 0, "(8 merges)"},
        {"diagnose --model %s/mv.tmod %s/c/case_0000", 0, " (teller train)\n"},
        {"train -o %s/mx.tmod --recipe 0123456789012345678901234567890123456789012345678901234567890123 %s/c", 2,
         "--recipe takes at most 63 bytes"},
        {"train -o %s/mx.tmod --tpe-vocab 8 --trace-tokens raw %s/c", 2, "exclude each other"},
        {"diagnose --no-model --model-alone --model %s/m.tmod %s/c/case_0000", 2, "--no-model excludes"},
    };
    for (size_t i = 0; i < sizeof abl / sizeof abl[0]; i++) {
        snprintf(args, sizeof args, abl[i].args, dir, dir);
        CHECK_EQ_INT(run_cli(args, out, sizeof out), abl[i].rc);
        CHECK(strstr(out, abl[i].want) != NULL);
    }
    /* the predictions say who judged: the model by its file's checksum
     * (its last 8 bytes) and recipe, or the numeric stage */
    snprintf(args, sizeof args, "train -o %s/mn.tmod --epochs 2 --recipe 'nightly <b>' %s/c", dir, dir);
    CHECK_EQ_INT(run_cli(args, out, sizeof out), 0);
    snprintf(args, sizeof args, "%s/mn.tmod", dir);
    size_t nm = 0;
    unsigned char *mb = (unsigned char *)read_file(args, &nm);
    CHECK(mb != NULL && nm > 8);
    unsigned long long id = 0;
    for (int i = 0; mb && i < 8; i++)
        id |= (unsigned long long)mb[nm - 8 + i] << (8 * i);
    free(mb);
    char want[256];
    snprintf(args, sizeof args, "diagnose --model %s/mn.tmod --json %s/p.json --html %s/r.html %s/c/case_0000", dir, dir,
             dir, dir);
    CHECK_EQ_INT(run_cli(args, out, sizeof out), 0);
    snprintf(want, sizeof want, "; judged by model %016llx (nightly <b>)\n", id);
    CHECK(strstr(out, want) != NULL);
    snprintf(args, sizeof args, "%s/p.json", dir);
    size_t njs = 0;
    char *js = read_file(args, &njs);
    snprintf(want, sizeof want, "\"judged_by\": {\"by\": \"model\", \"model\": \"%016llx\", \"recipe\": \"nightly <b>\"}", id);
    CHECK(js && strstr(js, want) != NULL);
    free(js);
    snprintf(args, sizeof args, "%s/r.html", dir);
    char *html = read_file(args, &njs);
    snprintf(want, sizeof want, "judged by model %016llx (nightly &lt;b&gt;)</p>", id);
    CHECK(html && strstr(html, want) != NULL);
    free(html);
    snprintf(args, sizeof args, "diagnose --no-model --json %s/p.json %s/c/case_0000", dir, dir);
    CHECK_EQ_INT(run_cli(args, out, sizeof out), 0);
    CHECK(strstr(out, "; judged by the numeric stage\n") != NULL);
    snprintf(args, sizeof args, "%s/p.json", dir);
    js = read_file(args, &njs);
    CHECK(js && strstr(js, "\"judged_by\": {\"by\": \"numeric stage\"}") != NULL);
    free(js);
    snprintf(args, sizeof args, "diagnose --no-model --model %s/m.tmod %s/c/case_0000", dir, dir);
    CHECK_EQ_INT(run_cli(args, out, sizeof out), 2);
    snprintf(args, sizeof args, "diagnose --model %s/c/case_0000/truth.json %s/c/case_0000", dir, dir);
    CHECK_EQ_INT(run_cli(args, out, sizeof out), 1);
    CHECK(strstr(out, "truth.json") != NULL && strstr(out, "not a teller model file") != NULL);
    /* fine-tuning from it */
    snprintf(args, sizeof args, "train -o %s/m2.tmod --base %s/m.tmod --epochs 2 %s/c/case_0001 %s/c/case_0002", dir, dir,
             dir, dir);
    CHECK_EQ_INT(run_cli(args, out, sizeof out), 0);
    snprintf(args, sizeof args, "train -o %s/m3.tmod %s", dir, dir);
    CHECK_EQ_INT(run_cli(args, out, sizeof out), 1);
    CHECK(strstr(out, "no case directories") != NULL);
    rm_rf(dir);
}

/* teller calibrate perturbs a healthy run into training and held-out
 * cases, fine-tunes the base model on the first and prints the numeric
 * stage, the base and the calibrated model side by side on the second;
 * its scratch directory is kept with --keep, removed otherwise. */
static void test_cli_calibrate(void)
{
    char out[32768], args[4600], want[256];
    char dir[] = "/tmp/teller_cli_calib_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    snprintf(args, sizeof args,
             "simulate --corpus 4 --steps 20 --nodes 1 --gpus-per-node 1 --fault all --seed 41 -o %s/c", dir);
    CHECK_EQ_INT(run_cli(args, out, sizeof out), 0);
    snprintf(args, sizeof args, "train -o %s/base.tmod --epochs 2 --recipe base-of-test %s/c", dir, dir);
    CHECK_EQ_INT(run_cli(args, out, sizeof out), 0);
    snprintf(args, sizeof args, "simulate --steps 30 --nodes 1 --gpus-per-node 1 --fault-rate 0 --seed 42 -o %s/h", dir);
    CHECK_EQ_INT(run_cli(args, out, sizeof out), 0);
    snprintf(args, sizeof args, "%s/tmp", dir);
    CHECK(mkdir(args, 0777) == 0);
    snprintf(args, sizeof args,
             "calibrate -o %s/cal.tmod --base %s/base.tmod --cases 4 --held-out 2 --epochs 2 --keep %s/k %s/h", dir, dir,
             dir, dir);
    CHECK_EQ_INT(run_cli(args, out, sizeof out), 0);
    CHECK(strstr(out, "held out: 2 cases, 60 steps, ") != NULL);
    CHECK(strstr(out, "\nthe numeric stage ") != NULL && strstr(out, " (base-of-test) ") != NULL);
    teller_model *m = NULL;
    teller_error err;
    snprintf(args, sizeof args, "%s/cal.tmod", dir);
    CHECK_EQ_INT(teller_model_load(args, &m, &err), TELLER_OK);
    if (m) {
        CHECK(strcmp(teller_model_recipe(m), "teller calibrate") == 0);
        snprintf(want, sizeof want, "\nmodel %016llx (teller calibrate) ", (unsigned long long)teller_model_id(m));
        CHECK(strstr(out, want) != NULL);
    }
    teller_model_free(m);
    /* the cases kept: training and held-out ones of other seeds, each a case */
    static const char *const kept[] = {"train/run0_0003/truth.json", "held_out/run0_0001/truth.json", "pred"};
    for (size_t i = 0; i < sizeof kept / sizeof *kept; i++) {
        struct stat sb;
        snprintf(args, sizeof args, "%s/k/%s", dir, kept[i]);
        CHECK(stat(args, &sb) == 0);
    }
    snprintf(args, sizeof args, "%s/k/train/run0_0000/truth.json", dir);
    size_t nt = 0;
    char *t0 = read_file(args, &nt);
    snprintf(args, sizeof args, "%s/k/held_out/run0_0000/truth.json", dir);
    char *h0 = read_file(args, &nt);
    CHECK(t0 && h0 && strcmp(t0, h0) != 0);
    free(t0);
    free(h0);
    /* without --keep: nothing left in TMPDIR */
    snprintf(args, sizeof args,
             "calibrate -o %s/cal2.tmod --base %s/base.tmod --cases 2 --held-out 1 --epochs 1 %s/h", dir, dir, dir);
    char env[4800];
    snprintf(env, sizeof env, "TMPDIR=%s/tmp '%s' %s", dir, TELLER_CLI, args);
    CHECK_EQ_INT(run_shell(env, out, sizeof out), 0);
    snprintf(env, sizeof env, "ls -A %s/tmp | wc -l", dir);
    CHECK_EQ_INT(run_shell(env, out, sizeof out), 0);
    CHECK(atoi(out) == 0);
    /* a run without steps cannot be perturbed: the error names it */
    snprintf(args, sizeof args, "calibrate -o %s/cal3.tmod --base %s/base.tmod %s", dir, dir,
             shared_path("hta/critical_path/simple_add"));
    CHECK_EQ_INT(run_cli(args, out, sizeof out), 1);
    CHECK(strstr(out, "simple_add: the run has no step annotations") != NULL);
    snprintf(args, sizeof args, "calibrate -o %s/cal3.tmod --base %s/c/case_0000/truth.json %s/h", dir, dir, dir);
    CHECK_EQ_INT(run_cli(args, out, sizeof out), 1);
    CHECK(strstr(out, "not a teller model file") != NULL);
    rm_rf(dir);
}

/* Every command's options come from its table: --help is its "Usage:"
 * line, what it does and one line per option (help2man's layout), exit 0;
 * an unknown option, a missing value or a count past an int's range is a
 * usage error in one format, "teller CMD: ...", exit 2. */
static void test_cli_options_from_one_table(void)
{
    static const char *const cmds[] = {"stats", "tree", "steps", "logs", "simulate", "perturb", "diagnose", "eval",
                                       "baseline", "run", "requests", "tpe", "tpe train", "tpe encode", "tpe stats",
                                       "slice", "train", "calibrate"};
    char out[16384], args[4800], want[128];
    for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++) {
        snprintf(args, sizeof args, "%s --help", cmds[i]);
        CHECK_EQ_INT(run_cli(args, out, sizeof out), 0);
        snprintf(want, sizeof want, "Usage: teller %s ", cmds[i]);
        CHECK(!strncmp(out, want, strlen(want)));
        CHECK(strstr(out, "\nOptions:\n") != NULL && strstr(out, "\n  -h, --help ") != NULL);
        snprintf(args, sizeof args, "%s --no-such-option", cmds[i]);
        CHECK_EQ_INT(run_cli(args, out, sizeof out), 2);
        snprintf(want, sizeof want, "teller %s: unknown option '--no-such-option'", cmds[i]);
        if (!strstr(out, want)) {
            fprintf(stderr, "  teller %s: '%s' does not say %s\n", cmds[i], out, want);
            check_failures++;
        }
    }
    CHECK_EQ_INT(run_cli("diagnose --help", out, sizeof out), 0);
    CHECK(strstr(out, "\n      --candidates FILE ") && strstr(out, "\n      --step-pattern REGEX ") &&
          strstr(out, "\n  -j, --jobs N "));
    CHECK_EQ_INT(run_cli("tpe train --help", out, sizeof out), 0);
    CHECK(strstr(out, "\n      --[no-]cross ") != NULL);
    CHECK_EQ_INT(run_cli("stats --jobs", out, sizeof out), 2);
    CHECK(strstr(out, "teller stats: --jobs needs a value (N)") != NULL);
    /* 2^32 + 1 was cast to an int (undefined; INT_MIN on x86, which the simulator then refused) */
    CHECK_EQ_INT(run_cli("simulate -o /tmp/teller_cli_never --nodes 4294967297", out, sizeof out), 2);
    CHECK(strstr(out, "teller simulate: --nodes wants an integer from 1 to 2147483647, not '4294967297'") != NULL);
    CHECK_EQ_INT(run_cli("simulate --nodes 2", out, sizeof out), 2);
    CHECK(strstr(out, "teller simulate: -o DIR is required") != NULL);
    CHECK_EQ_INT(run_cli("tpe", out, sizeof out), 2);
    CHECK(strstr(out, "teller tpe: which one? train, encode or stats") != NULL);
    CHECK_EQ_INT(run_cli("tpe merge x", out, sizeof out), 2);
    CHECK_EQ_INT(run_cli("eval --truth", out, sizeof out), 2);
    CHECK(strstr(out, "teller eval: --truth needs a value (TRUTH)") != NULL);
    CHECK_EQ_INT(run_cli("baseline zscore", out, sizeof out), 2);
    CHECK_EQ_INT(run_cli("baseline median x", out, sizeof out), 2);
    CHECK(strstr(out, "not 'median'") != NULL);
    CHECK_EQ_INT(run_cli("run", out, sizeof out), 2);
    CHECK(strstr(out, "teller run: no command given") != NULL);
    /* --name=value is --name value */
    char b200[4096];
    snprintf(b200, sizeof b200, "%s", shared_path("tracelens/b200/eager_trace.json.gz"));
    snprintf(args, sizeof args, "diagnose -q --threshold=0.7 '%s'", b200);
    CHECK_EQ_INT(run_cli(args, out, sizeof out), 0);
    snprintf(args, sizeof args, "stats --json=yes '%s'", b200);
    CHECK_EQ_INT(run_cli(args, out, sizeof out), 2);
    CHECK(strstr(out, "teller stats: --json takes no value") != NULL);
    /* requests' --log takes the arguments after it; logs' --align those up to '--' */
    snprintf(args, sizeof args, "requests -q --no-diagnose '%s' --log /nonexistent/a.log /nonexistent/b.log", b200);
    CHECK_EQ_INT(run_cli(args, out, sizeof out), 1);
    CHECK(strstr(out, "/nonexistent/a.log") && strstr(out, "cannot open log"));
    snprintf(args, sizeof args, "logs --align '%s' /nonexistent/a.log", b200);
    CHECK_EQ_INT(run_cli(args, out, sizeof out), 2);
    CHECK(strstr(out, "teller logs: --align wants TRACE... and then '--'") != NULL);
}

/* Bytes that are no log: xorshift64 noise, n bytes, written to path. */
static void write_noise(const char *path, size_t n)
{
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    uint64_t x = 2463534242ull;
    for (size_t i = 0; f && i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        fputc((int)(x >> 32) & 0xff, f);
    }
    if (f)
        fclose(f);
}

/* A one-step trace of one rank, the smallest the loader takes. */
static void write_tiny_trace(const char *path, int rank)
{
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f)
        return;
    fprintf(f, "{\"distributedInfo\": {\"rank\": %d, \"world_size\": 2}, \"traceEvents\": [{\"ph\": \"X\", "
               "\"cat\": \"user_annotation\", \"name\": \"ProfilerStep#0\", \"pid\": 1, \"tid\": 1, \"ts\": 0, "
               "\"dur\": 100}]}\n", rank);
    fclose(f);
}

/* The error paths of the review, each a clear message and the one exit
 * rule: usage 2, input 1. Before: an unwritable --json said "cannot write"
 * and then "written:" it (after the whole diagnosis); random bytes as
 * --log or to `teller logs` exited 0 with their bytes as templates; a bad
 * --step-pattern ended with "--force reads them as one run anyway"; no
 * trace exited 1; traces in subdirectories were "no trace files". */
static void test_cli_error_paths(void)
{
    char dir[] = "/tmp/teller_cli_err_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char out[16384], args[9000], b200[4096], p[4200], q[4400];
    snprintf(b200, sizeof b200, "%s", shared_path("tracelens/b200/eager_trace.json.gz"));

    snprintf(args, sizeof args, "diagnose -q --json /nonexistent/dir/p.json '%s'", b200);
    CHECK_EQ_INT(run_cli(args, out, sizeof out), 1);
    CHECK(strstr(out, "teller: /nonexistent/dir/p.json: cannot write: /nonexistent/dir: No such file") != NULL);
    CHECK(strstr(out, "written") == NULL && strstr(out, "abnormal") == NULL); /* refused before the work */

    snprintf(p, sizeof p, "%s/garbage.log", dir);
    write_noise(p, 20000);
    snprintf(args, sizeof args, "diagnose -q --log '%s' '%s'", p, b200);
    CHECK_EQ_INT(run_cli(args, out, sizeof out), 1);
    CHECK(strstr(out, p) && strstr(out, "not a text log"));
    snprintf(args, sizeof args, "logs '%s'", p);
    CHECK_EQ_INT(run_cli(args, out, sizeof out), 1);
    CHECK(strstr(out, p) && strstr(out, "not a text log") && !strstr(out, "templates"));
    /* a text log with a stretch of noise: read, the noise's lines counted and the file named */
    snprintf(q, sizeof q, "%s/partial.log", dir);
    size_t nnoise = 0, n = 0;
    char *noise = read_file(p, &nnoise), *hdfs = read_file(shared_path("../loghub/HDFS/HDFS_2k.log"), &n);
    FILE *f = noise && hdfs ? fopen(q, "wb") : NULL;
    CHECK(f != NULL);
    if (f) {
        fwrite(hdfs, 1, n, f);
        fwrite(noise, 1, 2000, f);
        fputc('\n', f);
        fclose(f);
        snprintf(args, sizeof args, "logs '%s'", q);
        CHECK_EQ_INT(run_cli(args, out, sizeof out), 0);
        snprintf(args, sizeof args, "teller: warning: %s: ", q);
        CHECK(strstr(out, args) && strstr(out, "lines skipped as binary"));
    }
    free(noise);
    free(hdfs);

    snprintf(args, sizeof args, "stats -q --step-pattern '([' '%s'", b200);
    CHECK_EQ_INT(run_cli(args, out, sizeof out), 2);
    CHECK(strstr(out, "teller stats: --step-pattern wants a POSIX extended regular expression, not '(['") != NULL);
    CHECK(strstr(out, "--force") == NULL);

    static const char *const bare[] = {"stats", "steps", "tree", "diagnose -q", "requests", "slice", "perturb -o x"};
    for (size_t i = 0; i < sizeof bare / sizeof *bare; i++) {
        CHECK_EQ_INT(run_cli(bare[i], out, sizeof out), 2);
        CHECK(strstr(out, ": no trace given\nUsage: teller ") != NULL);
    }
    snprintf(args, sizeof args, "stats '%s/nothing_here'", dir);
    CHECK_EQ_INT(run_cli(args, out, sizeof out), 1);
    CHECK(strstr(out, "no such file or directory") != NULL);

    /* traces one level down: the subdirectories that hold them are named, one without is not */
    static const char *const subs[] = {"a", "b", "empty"};
    for (size_t i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s/run/%s", dir, subs[i]);
        snprintf(q, sizeof q, "%s/run", dir);
        mkdir(q, 0755);
        CHECK_EQ_INT(mkdir(p, 0755), 0);
        snprintf(q, sizeof q, "%s/rank%zu.trace.json", p, i);
        if (i < 2)
            write_tiny_trace(q, (int)i);
    }
    snprintf(args, sizeof args, "stats -q '%s/run'", dir);
    CHECK_EQ_INT(run_cli(args, out, sizeof out), 1);
    CHECK(strstr(out, "/run: no trace files") && strstr(out, "its subdirectories a/ and b/ hold some: give them"));
    snprintf(args, sizeof args, "stats -q '%s/run/a' '%s/run/b'", dir, dir);
    CHECK_EQ_INT(run_cli(args, out, sizeof out), 0);
    rm_rf(dir);
}

/* diagnose --baseline refuses a reference that cannot judge the run
 * (another model, another rank count; exit 1, saying why and that --force
 * uses it anyway) and an empty one (naming the file); --force goes on with
 * a warning, and the summary names the reference. */
static void test_cli_baseline_refusals(void)
{
    char out[8192], args[9000], base[4096], mi300[4096], dir[] = "/tmp/teller_cli_base_XXXXXX";
    snprintf(base, sizeof base, "%s", shared_path("hta/trace_compare/base/base.json.gz"));
    snprintf(mi300, sizeof mi300, "%s", shared_path("tracelens/mi300/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"));
    snprintf(args, sizeof args, "diagnose -q --baseline '%s' '%s'", base, mi300);
    CHECK_EQ_INT(run_cli(args, out, sizeof out), 1);
    CHECK(strstr(out, "cannot judge this run: another model") && strstr(out, "--force"));
    snprintf(args, sizeof args, "diagnose -q --force --baseline '%s' '%s'", base, mi300);
    CHECK_EQ_INT(run_cli(args, out, sizeof out), 0);
    CHECK(strstr(out, "warning: another model") && strstr(out, "against the reference run"));
    sim_healthy(dir, 1, 2, 2, 1, 6, 7);
    snprintf(args, sizeof args, "diagnose -q --baseline '%s' '%s'", dir, base);
    CHECK_EQ_INT(run_cli(args, out, sizeof out), 1);
    CHECK(strstr(out, "the reference has 2 ranks and the run 1") != NULL);
    char empty[600];
    snprintf(empty, sizeof empty, "%s/empty.json", dir);
    FILE *f = fopen(empty, "w");
    CHECK(f != NULL);
    if (f)
        fclose(f);
    snprintf(args, sizeof args, "diagnose -q --baseline '%s' '%s'", empty, base);
    CHECK_EQ_INT(run_cli(args, out, sizeof out), 1);
    CHECK(strstr(out, empty) && strstr(out, "empty"));
    rm_rf(dir);
}

const test_case cli_tests[] = {
    {"cli: diagnose --baseline refuses a reference that cannot judge the run", test_cli_baseline_refusals},
    {"cli: a tree 100,000 deep prints; values past their range are refused", test_cli_deep_trees_and_out_of_range_values},
    {"cli: train writes a model; diagnose --model uses it, --no-model does not, a foreign file is an error",
     test_cli_train_and_model},
    {"cli: calibrate fine-tunes a model on a healthy run's perturbed cases and judges held-out ones three ways",
     test_cli_calibrate},
    {"cli: diagnose --candidates and eval --candidates: candidate recall@K", test_cli_candidates},
    {"cli: bad option values are errors naming what was wanted; --version", test_cli_option_values},
    {"cli: tree names a rank the trace does not have", test_cli_missing_rank},
    {"cli: traces of two runs are refused unless --force", test_cli_refuses_two_runs},
    {"cli: every command's options, errors and --help come from its table", test_cli_options_from_one_table},
    {"cli: error paths: unwritable outputs, garbage logs, bad patterns, no trace, nested traces", test_cli_error_paths},
    {NULL, NULL},
};
