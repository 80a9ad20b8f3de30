/*
 * test_cli.c - the `teller` program's handling of what users type: bad
 * option values are errors that say what was wanted, a rank the trace does
 * not have is named as such, and the version is there.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

/* Runs `teller ARGS 2>&1`; returns the exit status, output in out. */
static int run_cli(const char *args, char *out, size_t cap)
{
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "'%s' %s 2>&1", TELLER_CLI, args);
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = 0;
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

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
        {"diagnose --model %s/mt.tmod --model-alone %s/c/case_0000", 0, "judged by the model"},
        {"train -o %s/ma.tmod --without time %s/c", 2, "--without takes trace, logs or numbers, not 'time'"},
        {"train -o %s/mr.tmod --epochs 2 --trace-tokens raw %s/c", 0, "raw tokens, vocabulary of"},
        {"train -o %s/mr.tmod --epochs 2 --trace-tokens raw %s/c", 0, "(0 merges)"},
        {"train -o %s/mv.tmod --epochs 2 --tpe-vocab 8 %s/c", 0, "(8 merges)"},
        {"diagnose --model %s/mv.tmod %s/c/case_0000", 0, "judged by the model"},
        {"train -o %s/mx.tmod --tpe-vocab 8 --trace-tokens raw %s/c", 2, "exclude each other"},
        {"diagnose --no-model --model-alone --model %s/m.tmod %s/c/case_0000", 2, "--no-model excludes"},
    };
    for (size_t i = 0; i < sizeof abl / sizeof abl[0]; i++) {
        snprintf(args, sizeof args, abl[i].args, dir, dir);
        CHECK_EQ_INT(run_cli(args, out, sizeof out), abl[i].rc);
        CHECK(strstr(out, abl[i].want) != NULL);
    }
    snprintf(args, sizeof args, "diagnose --model %s/m.tmod %s/c/case_0000", dir, dir);
    CHECK_EQ_INT(run_cli(args, out, sizeof out), 0);
    CHECK(strstr(out, "judged by the model") != NULL);
    snprintf(args, sizeof args, "diagnose --no-model %s/c/case_0000", dir);
    CHECK_EQ_INT(run_cli(args, out, sizeof out), 0);
    CHECK(strstr(out, "judged by the model") == NULL);
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

const test_case cli_tests[] = {
    {"cli: a tree 100,000 deep prints; values past their range are refused", test_cli_deep_trees_and_out_of_range_values},
    {"cli: train writes a model; diagnose --model uses it, --no-model does not, a foreign file is an error",
     test_cli_train_and_model},
    {"cli: diagnose --candidates and eval --candidates: candidate recall@K", test_cli_candidates},
    {"cli: bad option values are errors naming what was wanted; --version", test_cli_option_values},
    {"cli: tree names a rank the trace does not have", test_cli_missing_rank},
    {"cli: traces of two runs are refused unless --force", test_cli_refuses_two_runs},
    {NULL, NULL},
};
