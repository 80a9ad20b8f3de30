/*
 * bench_model.c - the root-cause model's matrix products (docs/MODEL.md):
 * the plain loops of src/model/nn.c against OpenBLAS's cblas_sgemm at the
 * model's shapes (a step is T <= 23 token rows of width 64; forward and
 * the two backward products), and OpenMP over the samples of a training
 * batch and over the steps of a diagnosis, against one thread.
 *   bench_model [REPEATS]
 * Built only when OpenBLAS (libopenblas-dev) and OpenMP are found.
 */
#include <cblas.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model/nn.h"
#include "teller/model.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t rs = 7;
static float urand(void)
{
    rs = rs * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((rs >> 40) & 0xffffff) / 16777216.0f * 2.0f - 1.0f;
}

static void fill(float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x[i] = urand();
}

static volatile float sink;

/* one product out[T][OC] = in[T][C] . w[C][OC] + b, and its backward
 * (din[T][C] += dout . w^T, dw[C][OC] += in^T . dout, db += dout), with the
 * plain loops and with cblas_sgemm; µs per call */
static void product(int T, int C, int OC, int reps)
{
    float *in = malloc(sizeof(float) * (size_t)T * C), *w = malloc(sizeof(float) * (size_t)C * OC);
    float *b = malloc(sizeof(float) * (size_t)OC), *out = malloc(sizeof(float) * (size_t)T * OC);
    float *dout = malloc(sizeof(float) * (size_t)T * OC), *din = calloc((size_t)T * C, sizeof(float));
    float *dw = calloc((size_t)C * OC, sizeof(float)), *db = calloc((size_t)OC, sizeof(float));
    fill(in, (size_t)T * C), fill(w, (size_t)C * OC), fill(b, (size_t)OC), fill(dout, (size_t)T * OC);
    double t0 = now();
    for (int r = 0; r < reps; r++)
        for (int t = 0; t < T; t++)
            nn_linear_fwd(out + t * OC, in + t * C, w, b, C, OC);
    double t1 = now();
    for (int r = 0; r < reps; r++) {
        for (int t = 0; t < T; t++)
            memcpy(out + t * OC, b, sizeof(float) * (size_t)OC);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, OC, C, 1.0f, in, C, w, OC, 1.0f, out, OC);
    }
    double t2 = now();
    for (int r = 0; r < reps; r++)
        for (int t = 0; t < T; t++)
            nn_linear_bwd(din + t * C, dw, db, dout + t * OC, in + t * C, w, C, OC);
    double t3 = now();
    for (int r = 0; r < reps; r++) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, C, OC, 1.0f, dout, OC, w, OC, 1.0f, din, C);
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, C, OC, T, 1.0f, in, C, dout, OC, 1.0f, dw, OC);
        for (int t = 0; t < T; t++)
            for (int o = 0; o < OC; o++)
                db[o] += dout[t * OC + o];
    }
    double t4 = now();
    sink = out[0] + din[0] + dw[0] + db[0];
    double u = 1e6 / reps;
    printf("| %d x %d -> %d | %.2f | %.2f | %.2f | %.2f |\n", T, C, OC, (t1 - t0) * u, (t2 - t1) * u, (t3 - t2) * u,
           (t4 - t3) * u);
    free(in), free(w), free(b), free(out), free(dout), free(din), free(dw), free(db);
}

/* a step of the model's input: nc candidates, two log lines, labelled */
static void sample(teller_model_sample *s, int nc)
{
    memset(s, 0, sizeof *s);
    for (int j = 0; j < TELLER_MODEL_STEP_FEATURES; j++)
        s->step[j] = urand();
    s->ncands = (uint32_t)nc;
    for (int i = 0; i < nc; i++) {
        for (int j = 0; j < TELLER_CAND_FEATURES; j++)
            s->feat[i][j] = urand();
        s->det[i] = (uint8_t)(1 + i % 13);
        s->layer[i] = (uint8_t)(i % TELLER_LAYER_COUNT);
    }
    s->nlogs = 2;
    s->log[0] = 3, s->log[1] = 90;
    s->abnormal = 1;
    s->kind = 4;
    s->root = 0;
}

int main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 2000;
    if (reps < 1)
        reps = 1;
    openblas_set_num_threads(1);
    printf("OpenBLAS %s, %d OpenMP threads at most\n\n", OPENBLAS_VERSION, omp_get_max_threads());
    printf("µs per product, one thread (T token rows; forward, and backward: din, dW, db)\n\n");
    printf("| rows x in -> out | loops fwd | sgemm fwd | loops bwd | sgemm bwd |\n|---|---|---|---|---|\n");
    static const int shapes[][2] = {{64, 192}, {64, 64}, {64, 128}, {128, 64}};
    for (int T = 8; T <= 23; T += 15)
        for (int i = 0; i < 4; i++)
            product(T, shapes[i][0], shapes[i][1], reps);
    product(16 * 23, 64, 192, reps / 16 > 0 ? reps / 16 : 1); /* a whole batch stacked */

    /* the whole model: inference per step; training per batch of 16 steps
     * (forward + backward of each), one thread and OpenMP over the steps,
     * each thread with its own gradient, summed in a fixed order */
    teller_model *m = teller_model_create(1);
    size_t np = nn_model_num_params();
    enum { B = 16 };
    teller_model_sample s[B];
    for (int i = 0; i < B; i++)
        sample(&s[i], 1 + i % 16);
    teller_model_out o;
    int steps = reps * 4;
    double t0 = now();
    for (int r = 0; r < steps; r++)
        teller_model_predict(m, &s[r % B], &o);
    double t1 = now();
    printf("\nwhole model, one thread: inference %.1f µs a step (1-16 candidates, 2 log lines)\n",
           (t1 - t0) * 1e6 / steps);
    int nb = reps / 8 > 0 ? reps / 8 : 1;
    for (int th = 1; th <= omp_get_num_procs() && th <= 4; th *= 2) {
        float *g = calloc(np * (size_t)th, sizeof(float)), *sum = calloc(np, sizeof(float));
        double a = now(), loss = 0;
        for (int r = 0; r < nb; r++) {
            memset(g, 0, np * (size_t)th * sizeof(float));
#pragma omp parallel for num_threads(th) schedule(static) reduction(+ : loss)
            for (int i = 0; i < B; i++) {
                float *gi = g + (size_t)omp_get_thread_num() * np, *tmp = malloc(np * sizeof(float));
                loss += nn_model_loss_grad(m, &s[i], tmp);
                for (size_t k = 0; k < np; k++)
                    gi[k] += tmp[k];
                free(tmp);
            }
            for (int t = 0; t < th; t++)
                for (size_t k = 0; k < np; k++)
                    sum[k] += g[(size_t)t * np + k];
        }
        double b = now();
        double inf0 = now();
#pragma omp parallel for num_threads(th) schedule(static)
        for (int r = 0; r < steps; r++) {
            teller_model_out oo;
            teller_model_predict(m, &s[r % B], &oo);
        }
        double inf1 = now();
        sink = (float)loss + sum[0];
        printf("%d thread%s: training %.0f µs a batch of %d steps; inference %.1f µs a step\n", th, th > 1 ? "s" : "",
               (b - a) * 1e6 / nb, B, (inf1 - inf0) * 1e6 / steps);
        free(g), free(sum);
    }
    teller_model_free(m);
    return 0;
}
