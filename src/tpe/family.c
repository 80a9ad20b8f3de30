/*
 * family.c - the NAME part of an event's symbol ("TAG/NAME"): its name
 * reduced to a family that holds across GPU vendors, library versions and
 * workloads, so that a vocabulary learned on one deployment still reads
 * another (include/teller/tpe.h; the table is in docs/ARCHITECTURE.md, TPE
 * section).
 *
 * Kernels go to families by keyword tables, checked in order on the
 * kernel's head (its name without template arguments and parameters, with
 * Itanium-mangled names read back to "ns::name"), then, when no row knows
 * the head (cutlass::Kernel<...gemm...>), on the whole name. Communication
 * kernels keep collective and algorithm. Runtime and driver calls lose the
 * vendor prefix and version suffixes, every launch variant is one
 * LaunchKernel and host-side queries (attributes, properties, capture
 * state) are one Query. Python frames keep module and function, never line
 * numbers or object addresses. aten ops stay as they are. A name that no
 * rule knows gets a lexical family (its last identifier, digits masked),
 * never one shared "unknown" symbol. The exact name stays reachable
 * through the token's store event.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "teller/tpe.h"
#include "teller/tree.h"

#define FAM_MAX 1024

/* ---- small string tools on NUL-terminated buffers of FAM_MAX bytes ---- */

static void lower(char *s)
{
    for (; *s; s++)
        *s = (char)tolower((unsigned char)*s);
}

/* 1 when any of the '|'-separated keys occurs in s. */
static int has_any(const char *s, const char *keys)
{
    char k[64];
    while (*keys) {
        size_t n = strcspn(keys, "|");
        if (n && n < sizeof k) {
            memcpy(k, keys, n);
            k[n] = 0;
            if (strstr(s, k))
                return 1;
        }
        keys += n + (keys[n] == '|');
    }
    return 0;
}

static size_t put(char *out, size_t cap, const char *s)
{
    size_t n = strlen(s);
    if (n >= cap)
        n = cap - 1;
    memcpy(out, s, n);
    out[n] = 0;
    return n;
}

/* An Itanium-mangled name ("_ZN5aiter24add_rmsnorm_quant_kernelI..."):
 * its nested name, "aiter::add_rmsnorm_quant_kernel". 0 when name is not
 * one (or cannot be read), and head is left alone. */
static int demangle_head(const char *name, char *head, size_t cap)
{
    if (strncmp(name, "_Z", 2))
        return 0;
    const char *p = name + 2;
    int nested = *p == 'N';
    if (nested)
        p++;
    while (*p == 'K' || *p == 'V' || *p == 'r')
        p++; /* cv-qualifiers of a nested name */
    size_t n = 0;
    while (isdigit((unsigned char)*p)) {
        size_t len = 0;
        while (isdigit((unsigned char)*p) && len < 100000)
            len = len * 10 + (size_t)(*p++ - '0');
        if (strnlen(p, len) < len || n + len + 3 >= cap)
            return n > 0;
        if (n) {
            memcpy(head + n, "::", 2);
            n += 2;
        }
        memcpy(head + n, p, len);
        n += len;
        head[n] = 0;
        p += len;
        if (!nested)
            break;
    }
    return n > 0;
}

/* The last identifier of a head ("at::native::(anonymous namespace)::
 * softmax_warp_forward" -> "softmax_warp_forward"). */
static const char *last_component(const char *head)
{
    const char *c = head, *p;
    while ((p = strstr(c, "::")) && p[2])
        c = p + 2;
    const char *s = strrchr(c, ' ');
    return s && s[1] ? s + 1 : c;
}

/* The lexical family of a name no rule knows: its last identifier,
 * lower-cased, leading underscores and a "_kernel" ending dropped, digit
 * runs masked, at most 48 bytes. */
static size_t lexical(const char *head, char *out, size_t cap)
{
    char t[FAM_MAX];
    const char *c = last_component(head);
    while (*c == '_')
        c++;
    put(t, sizeof t, *c ? c : head);
    lower(t);
    size_t n = teller_name_mask_digits(t);
    static const char *const ends[] = {"_kernel", "kernel"};
    for (size_t k = 0; k < 2; k++) {
        size_t e = strlen(ends[k]);
        if (n > e && !strcmp(t + n - e, ends[k])) {
            n -= e;
            t[n] = 0;
            break;
        }
    }
    while (n > 1 && (t[n - 1] == '_' || t[n - 1] == ' '))
        t[--n] = 0;
    if (n > 48)
        t[48] = 0;
    if (!t[0])
        put(t, sizeof t, "?");
    return put(out, cap, t);
}

/* ---- kernels ---- */

/* Communication: "comm.COLLECTIVE.ALGORITHM"; NCCL/RCCL kernels name their
 * algorithm (ring, tree, collnet, nvls, pat), custom all-reduce kernels
 * (vLLM's, symmetric memory) are "custom". 0 when s is not communication. */
static size_t comm_family(const char *s, char *out, size_t cap)
{
    int lib = has_any(s, "nccl|rccl");
    if (!lib && !has_any(s, "all_reduce|allreduce|all_gather|allgather|reduce_scatter|reducescatter|alltoall|"
                            "all_to_all|cross_device_reduce"))
        return 0;
    static const struct { const char *keys, *name; } coll[] = {
        {"allreduce|all_reduce|cross_device_reduce", "allreduce"},
        {"allgather|all_gather", "allgather"},
        {"reducescatter|reduce_scatter", "reducescatter"},
        {"alltoall|all_to_all", "alltoall"},
        {"broadcast", "broadcast"},
        {"sendrecv", "sendrecv"},
        {"send", "send"},
        {"recv", "recv"},
        {"reduce", "reduce"},
    };
    const char *c = "other", *a = lib ? "any" : "custom";
    for (size_t k = 0; k < sizeof coll / sizeof *coll; k++)
        if (has_any(s, coll[k].keys)) {
            c = coll[k].name;
            break;
        }
    if (lib) {
        static const struct { const char *keys, *name; } algo[] = {
            {"_ring", "ring"}, {"_tree", "tree"}, {"collnet", "collnet"}, {"nvls", "nvls"}, {"_pat_", "pat"},
        };
        for (size_t k = 0; k < sizeof algo / sizeof *algo; k++)
            if (has_any(s, algo[k].keys)) {
                a = algo[k].name;
                break;
            }
    }
    char t[64];
    snprintf(t, sizeof t, "comm.%s.%s", c, a);
    return put(out, cap, t);
}

/* Rows in order: the first whose keys occur names the family. Keys are
 * lower case. Specific before general: KV-cache writes before attention
 * (flashinfer index kernels), MoE before GEMM, convolution before GEMM
 * (implicit-GEMM convolutions), GEMM before quantisation (FP8 GEMMs). */
static const struct kernel_rule {
    const char *family, *keys;
} k_kernel_rules[] = {
    {"elementwise", "triton_poi_"}, /* TorchInductor: pointwise, reduction, persistent reduction, template */
    {"reduce", "triton_red_|triton_per_"},
    {"gemm", "triton_tem_"},
    {"kvcache", "reshape_and_cache|kv_indices|page_indices|concat_and_cache|store_kv"},
    {"attention", "attention|attn|fmha|flash|paged_att|mha_|_mha|mla_|sdpa|xformers"},
    {"moe.gemm", "moe_gemm|fused_moe|grouped_gemm|_ogs_|moe_mm|expert_gemm"},
    {"moe.routing", "moe|routing|expert|bitmatrix|gating"},
    {"norm", "rmsnorm|rms_norm|layernorm|layer_norm|groupnorm|group_norm|batchnorm|batch_norm|bn_fw|bn_bw|"
             "instancenorm|gammabeta|rowwisemoments|norm_kernel|_norm_"},
    {"rotary", "rotary|rope_|_rope|cos_sin"},
    {"softmax", "softmax"},
    {"sampling", "sampl|argmax|multinomial|top_p|topp|gumbel|penalt"},
    {"topk", "topk|top_k"},
    {"conv", "conv|fprop|dgrad|wgrad|winograd|scudnn|fft2d|implicit_gemm|im2col"},
    {"gemm", "gemm|gemv|matmul|nvjet|cutlass|cublas|xmma|cijk_|bmm|hipblaslt|wvsplitk|splitkreduce|tensorop|"
             "_mm_|mfma|wmma"},
    {"quant", "quant|fp8|fp4|int8|float8|e4m3"},
    {"activation", "silu|gelu|swiglu|geglu|act_and_mul|relu|sigmoid|tanh|activation|swish|mish"},
    {"embedding", "embedding|embed"},
    {"index", "index|gather|scatter|take_"},
    {"copy", "copy|catarray|concat|_cat_|split|transpose|permute|nchwtonhwc|nhwctonchw|clone|contiguous"},
    {"fill", "fill_|_fill|memset|zeros|zero_|arange"},
    {"scan_sort", "sort|radix|scan|cub::|rocprim|cumsum|prefix|unique|histogram"},
    {"reduce", "reduce|reduction|_sum|sum_|mean|amax|_max|_min"},
    {"pool", "pool"},
    {"random", "dropout|philox|random|uniform|bernoulli|distribution"},
    {"optimizer", "adam|sgd|adagrad|lamb_|optimizer"},
    {"elementwise", "elementwise|vectorized|unrolled|pointwise|foreach|multi_tensor|binary|unary|where|fused_"},
};

static size_t kernel_family(const char *name, const char *head, char *out, size_t cap)
{
    char s[FAM_MAX];
    for (int pass = 0; pass < 2; pass++) {
        put(s, sizeof s, pass ? name : head);
        lower(s);
        size_t n = comm_family(s, out, cap);
        if (n)
            return n;
        for (size_t k = 0; k < sizeof k_kernel_rules / sizeof *k_kernel_rules; k++)
            if (has_any(s, k_kernel_rules[k].keys))
                return put(out, cap, k_kernel_rules[k].family);
    }
    return lexical(head, out, cap);
}

/* ---- runtime and driver calls ---- */

static int ends_with(const char *s, size_t n, const char *e)
{
    size_t m = strlen(e);
    return n >= m && !memcmp(s + n - m, e, m);
}

static size_t api_family(const char *head, char *out, size_t cap)
{
    char t[FAM_MAX];
    const char *p = head;
    if (!strncmp(p, "cuda", 4))
        p += 4;
    else if (!strncmp(p, "hip", 3))
        p += 3;
    else if (!strncmp(p, "cu", 2) && isupper((unsigned char)p[2]))
        p += 2;
    if (!strncmp(p, "Ext", 3) && isupper((unsigned char)p[3]))
        p += 3;
    put(t, sizeof t, p);
    size_t n = strlen(t);
    /* per-thread-stream and ABI suffixes: _ptsz, _ptds, _spt, R0600 */
    static const char *const sfx[] = {"_ptsz", "_ptds", "_spt"};
    for (size_t k = 0; k < 3; k++)
        if (ends_with(t, n, sfx[k]))
            t[n -= strlen(sfx[k])] = 0;
    size_t d = n;
    while (d > 0 && isdigit((unsigned char)t[d - 1]))
        d--;
    if (d < n && d > 1 && t[d - 1] == 'R')
        t[n = d - 1] = 0;
    if (strstr(t, "Launch") && strstr(t, "Kernel"))
        return put(out, cap, "LaunchKernel");
    if (!strncmp(t, "Memcpy", 6) || !strncmp(t, "Memset", 6) || !strncmp(t, "MemsetD", 7)) {
        int async = strstr(t, "Async") || strstr(t, "WithStream");
        snprintf(t + 6, sizeof t - 6, "%s", async ? "Async" : "");
        return put(out, cap, t);
    }
    if (strstr(t, "Malloc") || !strncmp(t, "MemAlloc", 8))
        return put(out, cap, "Malloc");
    if (!strcmp(t, "Free") || !strncmp(t, "FreeAsync", 9) || !strncmp(t, "MemFree", 7))
        return put(out, cap, "Free");
    /* host-side queries that start no GPU work: which ones a stack makes
     * differs by vendor (cudaFuncSetAttribute, hipGetDevicePropertiesR0600),
     * and they sit between the launches a vocabulary should see */
    if (!strncmp(t, "Get", 3) || !strncmp(t, "Is", 2) || has_any(t, "Attribute|Propert|GetDevice|Occupancy|Capturing|"
                                                                     "CaptureInfo|Priority|Version|Query|GetLastError"))
        return put(out, cap, "Query");
    return n ? put(out, cap, t) : put(out, cap, head);
}

/* ---- copies ---- */

static size_t memcpy_family(const char *name, char *out, size_t cap)
{
    static const struct { const char *keys, *dir; } dirs[] = {
        {"HtoD|HostToDevice", "HtoD"}, {"DtoH|DeviceToHost", "DtoH"}, {"DtoD|DeviceToDevice", "DtoD"},
        {"HtoH|HostToHost", "HtoH"},   {"PtoP|Peer", "PtoP"},
    };
    const char *dir = NULL;
    for (size_t k = 0; k < sizeof dirs / sizeof *dirs && !dir; k++)
        if (has_any(name, dirs[k].keys))
            dir = dirs[k].dir;
    if (!dir)
        return 0;
    const char *kind = strstr(name, "Pageable") ? ".pageable" : strstr(name, "Pinned") ? ".pinned"
                                                              : strstr(name, "Managed") ? ".managed"
                                                                                         : "";
    char t[64];
    snprintf(t, sizeof t, "memcpy.%s%s", dir, kind);
    return put(out, cap, t);
}

/* ---- Python frames ---- */

/* "vllm/v1/worker/gpu_model_runner.py(1234): execute_model" ->
 * "gpu_model_runner.execute_model"; "<built-in method view of Tensor
 * object at 0x7f..>" -> "Tensor.view"; "<built-in function isinstance>"
 * -> "builtin.isinstance"; "nn.Module: LlamaDecoderLayer_3" ->
 * "nn.Module:LlamaDecoderLayer". */
static size_t frame_family(const char *name, char *out, size_t cap)
{
    char t[FAM_MAX];
    const char *lp = strstr(name, "("), *fn = strstr(name, "): ");
    if (lp && fn && fn > lp && isdigit((unsigned char)lp[1]) && strncmp(name, "<built-in", 9)) {
        /* "DIR/FILE.py(LINE): FUNC" or "<frozen os>(LINE): FUNC": the
         * module is the file's name ("__init__" stands for its folder) */
        const char *e = lp, *m;
        if (e - name > 3 && !memcmp(e - 3, ".py", 3))
            e -= 3;
        if (e > name && e[-1] == '>')
            e--;
        for (m = e; m > name && m[-1] != '/' && m[-1] != '\\' && m[-1] != ' ' && m[-1] != '<'; m--)
            ;
        if (e - m == 8 && !memcmp(m, "__init__", 8) && m - name >= 2) {
            e = m - 1;
            for (m = e; m > name && m[-1] != '/' && m[-1] != '\\'; m--)
                ;
        }
        snprintf(t, sizeof t, "%.*s.%s", (int)(e - m), m, fn + 3);
    } else if (!strncmp(name, "<built-in method ", 17)) {
        const char *meth = name + 17, *of = strstr(meth, " of ");
        if (of) {
            const char *ty = of + 4, *obj = strstr(ty, " object");
            size_t tl = obj ? (size_t)(obj - ty) : strcspn(ty, " >");
            const char *dot = ty;
            for (const char *q = ty; q < ty + tl; q++)
                if (*q == '.')
                    dot = q + 1;
            tl -= (size_t)(dot - ty);
            if (!strncmp(dot, "pybind11", 8))
                tl = 8;
            snprintf(t, sizeof t, "%.*s.%.*s", (int)tl, dot, (int)(of - meth), meth);
        } else
            snprintf(t, sizeof t, "builtin.%.*s", (int)strcspn(meth, " >"), meth);
    } else if (!strncmp(name, "<built-in function ", 19)) {
        snprintf(t, sizeof t, "builtin.%.*s", (int)strcspn(name + 19, " >"), name + 19);
    } else if (!strncmp(name, "nn.Module: ", 11)) {
        snprintf(t, sizeof t, "nn.Module:%s", name + 11);
        size_t n = strlen(t), d = n;
        while (d > 0 && isdigit((unsigned char)t[d - 1]))
            d--;
        if (d < n && d > 0 && t[d - 1] == '_')
            t[d - 1] = 0;
    } else
        put(t, sizeof t, name);
    /* no addresses or numbers: "0x7f1b..." and digit runs */
    for (char *x; (x = strstr(t, "0x"));) {
        char *e = x + 2;
        while (isxdigit((unsigned char)*e))
            e++;
        memmove(x, e, strlen(e) + 1);
    }
    teller_name_mask_digits(t);
    return put(out, cap, t[0] ? t : "?");
}

/* ---- engine annotations ---- */

static int is_step_annotation(const char *name)
{
    return !strncmp(name, "ProfilerStep#", 13) || !strncmp(name, "step[", 5) ||
           (!strncmp(name, "execute_", 8) && strstr(name, "_context_") && strstr(name, "_generation_"));
}

static size_t family(teller_layer layer, const char *name, char *out, size_t cap)
{
    char head[FAM_MAX];
    size_t n = 0;
    if (!demangle_head(name, head, sizeof head))
        teller_name_normalize(name, head, sizeof head);
    switch (layer) {
    case TELLER_LAYER_KERNEL:
        return kernel_family(name, head, out, cap);
    case TELLER_LAYER_RUNTIME:
    case TELLER_LAYER_DRIVER:
        return api_family(head, out, cap);
    case TELLER_LAYER_MEMCPY:
        n = memcpy_family(name, out, cap);
        return n ? n : lexical(head, out, cap);
    case TELLER_LAYER_MEMSET:
        return put(out, cap, "memset");
    case TELLER_LAYER_FRONTEND:
        return frame_family(name, out, cap);
    case TELLER_LAYER_ENGINE:
        if (is_step_annotation(name))
            return put(out, cap, "step");
        break;
    case TELLER_LAYER_SYNC: {
        char t[FAM_MAX];
        put(t, sizeof t, head);
        lower(t);
        for (char *q = t; *q; q++)
            if (!isalnum((unsigned char)*q))
                *q = '_';
        teller_name_mask_digits(t);
        return put(out, cap, t);
    }
    case TELLER_LAYER_BACKEND:
        if (!strncmp(head, "aten::", 6))
            return put(out, cap, head); /* aten ops as they are */
        break;
    default:
        break;
    }
    /* annotations, other backend ops, profiler spans: the normalised name
     * without the profiler's ", seq = N, op_id = N" suffix, digit runs
     * masked ("Torch-Compiled Region: 0/1" -> "Torch-Compiled Region: #/#") */
    char *sfx = strstr(head, ", seq = ");
    if (!sfx)
        sfx = strstr(head, ", op_id = ");
    if (sfx)
        *sfx = 0;
    n = teller_name_mask_digits(head);
    return n ? put(out, cap, head) : put(out, cap, "?");
}

size_t teller_tpe_name_family(teller_layer layer, const char *name, char *out, size_t cap)
{
    if (!cap)
        return 0;
    size_t n = name && *name ? family(layer, name, out, cap) : 0;
    return n ? n : put(out, cap, "?");
}
