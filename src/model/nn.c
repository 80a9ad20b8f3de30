/*
 * nn.c - the model's layers (see nn.h).
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#ifdef TELLER_HAVE_CBLAS
#include <cblas.h>
#include <dlfcn.h>
#include <pthread.h>
#include <string.h>
#endif

#include "nn.h"

#ifdef TELLER_HAVE_CBLAS
/* OpenBLAS's cblas_sgemm, opened the first time the model multiplies, not
 * when teller starts: loading it and libgfortran would cost every command
 * a few milliseconds, and most commands never run the model. NULL, and the loops below, when the library the build found
 * (TELLER_OPENBLAS_PATH) cannot be opened any more. */
typedef void (*sgemm_fn)(enum CBLAS_ORDER, enum CBLAS_TRANSPOSE, enum CBLAS_TRANSPOSE, blasint, blasint, blasint,
                         float, const float *, blasint, const float *, blasint, float, float *, blasint);
static sgemm_fn sgemm;
static pthread_once_t sgemm_once = PTHREAD_ONCE_INIT;

static void sgemm_open(void)
{
    void *lib = dlopen(TELLER_OPENBLAS_PATH, RTLD_NOW | RTLD_LOCAL), *sym = lib ? dlsym(lib, "cblas_sgemm") : NULL;
    if (sym) /* ISO C has no cast from an object pointer to a function pointer */
        memcpy(&sgemm, &sym, sizeof sgemm);
}

static sgemm_fn blas(void)
{
    pthread_once(&sgemm_once, sgemm_open);
    return sgemm;
}
#endif

void nn_linear_fwd(float *out, const float *in, const float *w, const float *b, int C, int OC)
{
    for (int o = 0; o < OC; o++)
        out[o] = b ? b[o] : 0.0f;
    for (int c = 0; c < C; c++) {
        float x = in[c];
        const float *wr = w + (long)c * OC;
        for (int o = 0; o < OC; o++)
            out[o] += x * wr[o];
    }
}

void nn_linear_bwd(float *din, float *dw, float *db, const float *dout, const float *in, const float *w, int C, int OC)
{
    for (int c = 0; c < C; c++) {
        const float *wr = w + (long)c * OC;
        float *dwr = dw + (long)c * OC, x = in[c], s = 0;
        for (int o = 0; o < OC; o++) {
            s += wr[o] * dout[o];
            dwr[o] += x * dout[o];
        }
        if (din)
            din[c] += s;
    }
    if (db)
        for (int o = 0; o < OC; o++)
            db[o] += dout[o];
}

void nn_matmul_fwd(float *out, const float *in, const float *w, const float *b, int T, int C, int OC)
{
#ifdef TELLER_HAVE_CBLAS
    sgemm_fn g = blas();
    if (g) {
        for (int t = 0; t < T; t++)
            for (int o = 0; o < OC; o++)
                out[t * OC + o] = b ? b[o] : 0.0f;
        g(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, OC, C, 1.0f, in, C, w, OC, 1.0f, out, OC);
        return;
    }
#endif
    for (int t = 0; t < T; t++)
        nn_linear_fwd(out + (long)t * OC, in + (long)t * C, w, b, C, OC);
}

void nn_matmul_bwd(float *din, float *dw, float *db, const float *dout, const float *in, const float *w, int T, int C,
                   int OC)
{
#ifdef TELLER_HAVE_CBLAS
    sgemm_fn g = blas();
    if (g) {
        if (din) /* din += dout . w^T */
            g(CblasRowMajor, CblasNoTrans, CblasTrans, T, C, OC, 1.0f, dout, OC, w, OC, 1.0f, din, C);
        /* dw += in^T . dout */
        g(CblasRowMajor, CblasTrans, CblasNoTrans, C, OC, T, 1.0f, in, C, dout, OC, 1.0f, dw, OC);
        if (db)
            for (int t = 0; t < T; t++)
                for (int o = 0; o < OC; o++)
                    db[o] += dout[t * OC + o];
        return;
    }
#endif
    for (int t = 0; t < T; t++)
        nn_linear_bwd(din ? din + (long)t * C : NULL, dw, db, dout + (long)t * OC, in + (long)t * C, w, C, OC);
}

void nn_layernorm_fwd(float *out, float *mean, float *rstd, const float *in, const float *g, const float *b, int C)
{
    float m = 0, v = 0;
    for (int c = 0; c < C; c++)
        m += in[c];
    m /= (float)C;
    for (int c = 0; c < C; c++)
        v += (in[c] - m) * (in[c] - m);
    v /= (float)C;
    float r = 1.0f / sqrtf(v + 1e-5f);
    for (int c = 0; c < C; c++)
        out[c] = (in[c] - m) * r * g[c] + b[c];
    *mean = m;
    *rstd = r;
}

void nn_layernorm_bwd(float *din, float *dg, float *db, const float *dout, const float *in, float mean, float rstd,
                      const float *g, int C)
{
    /* dnorm = dout * g; din = rstd * (dnorm - mean(dnorm) - norm * mean(dnorm * norm)) */
    float dm = 0, dmn = 0;
    for (int c = 0; c < C; c++) {
        float n = (in[c] - mean) * rstd, dn = dout[c] * g[c];
        dm += dn;
        dmn += dn * n;
    }
    dm /= (float)C;
    dmn /= (float)C;
    for (int c = 0; c < C; c++) {
        float n = (in[c] - mean) * rstd, dn = dout[c] * g[c];
        dg[c] += dout[c] * n;
        db[c] += dout[c];
        din[c] += rstd * (dn - dm - n * dmn);
    }
}

#define GELU_K 0.7978845608f /* sqrt(2 / pi) */

void nn_gelu_fwd(float *out, const float *in, int n)
{
    for (int i = 0; i < n; i++) {
        float x = in[i];
        out[i] = 0.5f * x * (1.0f + tanhf(GELU_K * (x + 0.044715f * x * x * x)));
    }
}

void nn_gelu_bwd(float *din, const float *in, const float *dout, int n)
{
    for (int i = 0; i < n; i++) {
        float x = in[i], u = GELU_K * (x + 0.044715f * x * x * x), t = tanhf(u);
        float sech2 = 1.0f - t * t;
        float d = 0.5f * (1.0f + t) + 0.5f * x * sech2 * GELU_K * (1.0f + 3.0f * 0.044715f * x * x);
        din[i] += d * dout[i];
    }
}

void nn_softmax(float *p, const float *z, int n)
{
    float mx = z[0], s = 0;
    for (int i = 1; i < n; i++)
        if (z[i] > mx)
            mx = z[i];
    for (int i = 0; i < n; i++) {
        p[i] = expf(z[i] - mx);
        s += p[i];
    }
    for (int i = 0; i < n; i++)
        p[i] /= s;
}

void nn_attention_fwd(float *out, float *att, const float *qkv, const uint8_t *rel, const float *bias, int NB, int T,
                      int C, int NH)
{
    int hs = C / NH, C3 = 3 * C;
    float scale = 1.0f / sqrtf((float)hs);
    for (int h = 0; h < NH; h++)
        for (int t = 0; t < T; t++) {
            const float *q = qkv + (long)t * C3 + h * hs;
            float *a = att + ((long)h * T + t) * T;
            for (int u = 0; u < T; u++) {
                const float *k = qkv + (long)u * C3 + C + h * hs;
                float s = 0;
                for (int i = 0; i < hs; i++)
                    s += q[i] * k[i];
                a[u] = s * scale + (rel ? bias[h * NB + rel[(long)t * T + u]] : 0.0f);
            }
            nn_softmax(a, a, T);
            float *o = out + (long)t * C + h * hs;
            for (int i = 0; i < hs; i++)
                o[i] = 0;
            for (int u = 0; u < T; u++) {
                const float *v = qkv + (long)u * C3 + 2 * C + h * hs;
                for (int i = 0; i < hs; i++)
                    o[i] += a[u] * v[i];
            }
        }
}

void nn_attention_bwd(float *dqkv, float *dbias, float *scratch, const float *dout, const float *qkv, const float *att,
                      const uint8_t *rel, int NB, int T, int C, int NH)
{
    int hs = C / NH, C3 = 3 * C;
    float scale = 1.0f / sqrtf((float)hs);
    for (int h = 0; h < NH; h++)
        for (int t = 0; t < T; t++) {
            const float *a = att + ((long)h * T + t) * T, *dot = dout + (long)t * C + h * hs;
            /* d a[u] = dout . v_u; dv_u += a[u] dout */
            float *da = scratch, s = 0;
            for (int u = 0; u < T; u++) {
                const float *v = qkv + (long)u * C3 + 2 * C + h * hs;
                float *dv = dqkv + (long)u * C3 + 2 * C + h * hs;
                float d = 0;
                for (int i = 0; i < hs; i++) {
                    d += dot[i] * v[i];
                    dv[i] += a[u] * dot[i];
                }
                da[u] = d;
                s += d * a[u];
            }
            /* through the softmax, then the scaled dot product */
            const float *q = qkv + (long)t * C3 + h * hs;
            float *dq = dqkv + (long)t * C3 + h * hs;
            for (int u = 0; u < T; u++) {
                float dz = a[u] * (da[u] - s);
                if (rel)
                    dbias[h * NB + rel[(long)t * T + u]] += dz;
                dz *= scale;
                const float *k = qkv + (long)u * C3 + C + h * hs;
                float *dk = dqkv + (long)u * C3 + C + h * hs;
                for (int i = 0; i < hs; i++) {
                    dq[i] += dz * k[i];
                    dk[i] += dz * q[i];
                }
            }
        }
}
