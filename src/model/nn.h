/*
 * nn.h - the layers of the root-cause model (model.c), forward and backward
 * side by side, plain loops over flat float arrays (llm.c style). Shapes
 * are in the comments; every backward adds into its gradients (+=), so
 * that a batch accumulates. Tested one by one against finite differences.
 */
#ifndef TELLER_NN_H
#define TELLER_NN_H

#include <stddef.h>
#include <stdint.h>

/* out[OC] = in[C] . w[C][OC] + b[OC] (b may be NULL), one row */
void nn_linear_fwd(float *out, const float *in, const float *w, const float *b, int C, int OC);
/* din[C] (may be NULL), dw[C][OC], db[OC] (may be NULL) += from dout[OC] */
void nn_linear_bwd(float *din, float *dw, float *db, const float *dout, const float *in, const float *w, int C, int OC);

/* The same over T rows at once: out[T][OC] = in[T][C] . w[C][OC] + b;
 * din[T][C] (may be NULL), dw, db (may be NULL) += from dout[T][OC].
 * cblas_sgemm when the build has OpenBLAS (TELLER_HAVE_CBLAS), else the
 * row functions above. */
void nn_matmul_fwd(float *out, const float *in, const float *w, const float *b, int T, int C, int OC);
void nn_matmul_bwd(float *din, float *dw, float *db, const float *dout, const float *in, const float *w, int T, int C,
                   int OC);

/* out[C] = (in - mean) * rstd * g + b, one row; mean and rstd kept for backward */
void nn_layernorm_fwd(float *out, float *mean, float *rstd, const float *in, const float *g, const float *b, int C);
void nn_layernorm_bwd(float *din, float *dg, float *db, const float *dout, const float *in, float mean, float rstd,
                      const float *g, int C);

/* GELU (tanh approximation), n values */
void nn_gelu_fwd(float *out, const float *in, int n);
void nn_gelu_bwd(float *din, const float *in, const float *dout, int n);

/* Bidirectional multi-head self-attention over T tokens: qkv[T][3C] (q, k,
 * v, each C = NH heads of C / NH), att[NH][T][T] the probabilities, out[T][C].
 * With rel (NULL: none), a learned bias by the pair's class: the score of
 * query t on key u is q.k / sqrt(C / NH) + bias[h][rel[t][u]], bias
 * [NH][NB], rel[T][T] classes below NB (the model's tree-relative bias). */
void nn_attention_fwd(float *out, float *att, const float *qkv, const uint8_t *rel, const float *bias, int NB, int T,
                      int C, int NH);
/* dqkv[T][3C] and, with rel, dbias[NH][NB] += from dout[T][C]; scratch[T] */
void nn_attention_bwd(float *dqkv, float *dbias, float *scratch, const float *dout, const float *qkv, const float *att,
                      const uint8_t *rel, int NB, int T, int C, int NH);

/* p[n] = softmax(z[n]) */
void nn_softmax(float *p, const float *z, int n);

/* The whole model, for its gradient test: the parameter count, the
 * parameters (one array), and one sample's loss (unit class weights) with
 * its gradient written into grad (NULL: the loss alone). */
struct teller_model;
struct teller_model_sample;
size_t nn_model_num_params(void);
/* The parameter tensors' offsets and sizes in that array (at most max);
 * returns their number. */
int nn_model_tensors(size_t *off, size_t *n, int max);
float *nn_model_weights(struct teller_model *m);
double nn_model_loss_grad(const struct teller_model *m, const struct teller_model_sample *s, float *grad);

#endif
