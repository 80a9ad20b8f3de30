/*
 * gemm_app.c - a small CUDA workload for the GPU check (scripts/gpu-check.sh):
 * bf16 GEMMs through cuBLAS in NVTX-annotated steps, timed on the host. Few
 * large GEMMs a step are a prefill's matmuls; thousands of small ones (n of
 * a few hundred, a few microseconds each) a decode step's, where tracing
 * costs the most. With graph 1 each step's GEMMs are captured once into a
 * CUDA graph and each step launches the graph, as vLLM's decode does. It
 * needs a GPU; without one it says so and exits 2. Built only when the CUDA
 * toolkit with cuBLAS is present.
 *   gemm_app [steps] [n] [gemms] [graph]   (defaults 200 steps, n = 4096, 4 GEMMs a step, no graph)
 */
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    int steps = argc > 1 ? atoi(argv[1]) : 200, n = argc > 2 ? atoi(argv[2]) : 4096;
    int gemms = argc > 3 ? atoi(argv[3]) : 4, graph = argc > 4 ? atoi(argv[4]) : 0;
    if (steps < 1 || n < 64 || gemms < 1 || (graph != 0 && graph != 1)) {
        fprintf(stderr, "usage: gemm_app [steps >= 1] [n >= 64] [gemms >= 1] [graph 0|1]\n");
        return 2;
    }
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        fprintf(stderr, "gemm_app: no CUDA device\n");
        return 2;
    }
    size_t bytes = (size_t)n * (size_t)n * 2;
    void *a, *b, *c;
    if (cudaMalloc(&a, bytes) || cudaMalloc(&b, bytes) || cudaMalloc(&c, bytes)) {
        fprintf(stderr, "gemm_app: cudaMalloc failed\n");
        return 1;
    }
    cudaMemset(a, 0, bytes);
    cudaMemset(b, 0, bytes);
    cublasHandle_t h;
    if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) {
        fprintf(stderr, "gemm_app: cublasCreate failed\n");
        return 1;
    }
    cudaStream_t stream;
    void *ws;
    size_t ws_bytes = (size_t)32 << 20; /* a workspace of its own: cuBLAS under stream capture allocates none */
    if (cudaStreamCreate(&stream) || cudaMalloc(&ws, ws_bytes) || cublasSetStream(h, stream) ||
        cublasSetWorkspace(h, ws, ws_bytes)) {
        fprintf(stderr, "gemm_app: stream or workspace setup failed\n");
        return 1;
    }
    float alpha = 1.0f, beta = 0.0f;
#define GEMM()                                                                                                 \
    cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, a, CUDA_R_16BF, n, b, CUDA_R_16BF, n, &beta, c, \
                 CUDA_R_16BF, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT)
    /* warm-up: module loading and heuristics outside the timing */
    if (GEMM() != CUBLAS_STATUS_SUCCESS) {
        fprintf(stderr, "gemm_app: cublasGemmEx failed\n");
        return 1;
    }
    cudaStreamSynchronize(stream);
    cudaGraphExec_t exec = NULL;
    if (graph) {
        cudaGraph_t g;
        if (cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal)) {
            fprintf(stderr, "gemm_app: stream capture failed\n");
            return 1;
        }
        for (int l = 0; l < gemms; l++)
            GEMM();
        if (cudaStreamEndCapture(stream, &g) || cudaGraphInstantiate(&exec, g, 0)) {
            fprintf(stderr, "gemm_app: graph capture failed\n");
            return 1;
        }
        cudaGraphDestroy(g);
        cudaGraphLaunch(exec, stream); /* the graph's first launch uploads it */
        cudaStreamSynchronize(stream);
    }
    double t0 = now_s();
    for (int s = 0; s < steps; s++) {
        char name[32];
        snprintf(name, sizeof name, "ProfilerStep#%d", s);
        nvtxRangePushA(name);
        if (exec)
            cudaGraphLaunch(exec, stream);
        else
            for (int l = 0; l < gemms; l++) {
                nvtxRangePushA("aten::mm");
                GEMM();
                nvtxRangePop();
            }
        cudaStreamSynchronize(stream);
        nvtxRangePop();
    }
    double dt = now_s() - t0;
    cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) {
        fprintf(stderr, "gemm_app: %s\n", cudaGetErrorString(err));
        return 1;
    }
    double tflops = 2.0 * n * (double)n * n * gemms * steps / dt / 1e12;
    printf("steps %d n %d gemms %d graph %d seconds %.4f steps_per_s %.2f tflops %.1f\n", steps, n, gemms, graph, dt,
           steps / dt, tflops);
    if (exec)
        cudaGraphExecDestroy(exec);
    cudaStreamDestroy(stream);
    cudaFree(ws);
    cublasDestroy(h);
    cudaFree(a);
    cudaFree(b);
    cudaFree(c);
    return 0;
}
