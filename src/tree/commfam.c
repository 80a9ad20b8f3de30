/*
 * commfam.c - the families of communication kernels (tree.h): which
 * kernel names are collectives, the operation each performs, and how its
 * instances line up across ranks. NCCL and RCCL kernels carry the
 * trace's sequence numbers when PyTorch launched them (record_param_comms);
 * the engines' own kernels (custom all-reduce, fused all-reduce + norm,
 * symmetric memory, DeepEP's expert-parallel dispatch and combine) carry
 * none and line up by their order in a step. docs/ARCHITECTURE.md has the
 * table with the source each name was checked against.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "teller/tree.h"

static const teller_comm_family k_families[] = {
    [TELLER_COMM_NCCL] = {"nccl", "NCCL (and RCCL, which keeps NCCL's kernel names)", TELLER_COMM_MATCH_SEQ},
    [TELLER_COMM_RCCL] = {"rccl", "RCCL", TELLER_COMM_MATCH_SEQ},
    [TELLER_COMM_CUSTOM_AR] = {"custom_ar", "vLLM custom all-reduce; SGLang sgl-kernel custom all-reduce",
                               TELLER_COMM_MATCH_ORDER},
    [TELLER_COMM_TRT_AR] = {"trt_ar", "TensorRT-LLM custom all-reduce; SGLang sgl-kernel trt_reduce",
                            TELLER_COMM_MATCH_ORDER},
    [TELLER_COMM_AR_FUSION] = {"ar_fusion", "TensorRT-LLM / FlashInfer all-reduce fused with a norm",
                               TELLER_COMM_MATCH_ORDER},
    [TELLER_COMM_SYMM_MEM] = {"symm_mem", "PyTorch symmetric memory", TELLER_COMM_MATCH_ORDER},
    [TELLER_COMM_DEEP_EP] = {"deep_ep", "DeepEP expert-parallel dispatch and combine", TELLER_COMM_MATCH_ORDER},
};

/* Substrings of a kernel's head (teller_name_normalize: no return type,
 * template arguments or parameters, so that a parameter type such as
 * AllReduceFusionParams never decides), tried in order; op NULL: the
 * head's last identifier (DeepEP, whose namespaces say it communicates and
 * whose function names say what). */
static const struct {
    teller_comm_family_id fam;
    const char           *part;
    const char           *op;
} k_heads[] = {
    {TELLER_COMM_CUSTOM_AR, "cross_device_reduce_", "allreduce"},
    {TELLER_COMM_TRT_AR, "oneShotAllReduceKernel", "allreduce"},
    {TELLER_COMM_TRT_AR, "twoShotAllReduceKernel", "allreduce"},
    {TELLER_COMM_AR_FUSION, "allreduce_fusion_kernel", "allreduce"},
    {TELLER_COMM_SYMM_MEM, "one_shot_all_reduce", "allreduce"},
    {TELLER_COMM_SYMM_MEM, "two_shot_all_reduce", "allreduce"},
    {TELLER_COMM_SYMM_MEM, "multimem_all_reduce", "allreduce"},
    {TELLER_COMM_SYMM_MEM, "multimem_all_gather", "allgather"},
    {TELLER_COMM_DEEP_EP, "deep_ep::intranode::", NULL},
    {TELLER_COMM_DEEP_EP, "deep_ep::internode::", NULL},
    {TELLER_COMM_DEEP_EP, "deep_ep::internode_ll::", NULL},
};

/* DeepEP's kernels that move data or synchronise the ranks; its layout and
 * buffer-cleaning kernels are local work. */
static int deep_ep_op(const char *op)
{
    return strstr(op, "dispatch") || strstr(op, "combine") || strstr(op, "notify") || !strcmp(op, "barrier");
}

static int ci_contains(const char *s, const char *needle)
{
    size_t n = strlen(needle);
    for (; *s; s++) {
        size_t i = 0;
        while (i < n && s[i] && tolower((unsigned char)s[i]) == needle[i])
            i++;
        if (i == n)
            return 1;
    }
    return 0;
}

teller_comm_family_id teller_comm_family_of(const char *name, char *op, size_t cap)
{
    char head[256];
    teller_name_normalize(name, head, sizeof head);
    if (op && cap)
        op[0] = 0;
    for (size_t i = 0; i < sizeof k_heads / sizeof *k_heads; i++) {
        if (!strstr(head, k_heads[i].part))
            continue;
        const char *o = k_heads[i].op;
        if (!o) {
            const char *last = strrchr(head, ':');
            o = last ? last + 1 : head;
            if (!deep_ep_op(o))
                continue;
        }
        if (op && cap)
            snprintf(op, cap, "%s", o);
        return k_heads[i].fam;
    }
    if (ci_contains(name, "nccl"))
        return TELLER_COMM_NCCL;
    return ci_contains(name, "rccl") ? TELLER_COMM_RCCL : TELLER_COMM_NONE;
}

int teller_name_is_comm(const char *name)
{
    if (strncmp(name, "c10d::", 6) == 0 || strcmp(name, "record_param_comms") == 0)
        return 1;
    return teller_comm_family_of(name, NULL, 0) != TELLER_COMM_NONE;
}

const teller_comm_family *teller_comm_family_get(teller_comm_family_id fam)
{
    return fam > TELLER_COMM_NONE && fam < TELLER_COMM_FAMILIES ? &k_families[fam] : NULL;
}
