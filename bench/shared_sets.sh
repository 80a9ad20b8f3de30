# The shared real trace sets with step annotations, for the perturbed
# corpora (bench/perturb_corpus.sh, bench/baseline_eval.sh): SETS, one
# "name|inputs" each (one run: several ranks are one entry). Sourced.
D="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/../shared/data/traces"
# name|inputs (one run: several ranks are one entry)
SETS=(
  "tracelens_b200_vllm|$D/tracelens/b200/eager_trace.json.gz"
  "tracelens_h100_hf|$D/tracelens/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"
  "tracelens_mi300_hf|$D/tracelens/mi300/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"
  "tracelens_sglang_decode|$D/tracelens/inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz"
  "tracelens_sglang_prefilldecode|$D/tracelens/inference/sglang_prefilldecode/sglang_Qwen3-8B_prefilldecode.json.gz"
  "tracelens_vllm_graph|$D/tracelens/inference/vllm_decode_full/graph_execution.json.gz"
  "hta_nccl_a100|$D/hta/nccl_parser_config/nccl_data.json.gz"
  "hta_ns_resolution|$D/hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"
  "hta_two_ranks|$D/hta/trace_filter/sampled_rank-0.json.gz $D/hta/trace_filter/sampled_rank-1.json.gz"
  "hta_mi250|$D/hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz"
  "hta_trace_compare|$D/hta/trace_compare/base/base.json.gz"
  "hta_trace_compare_test|$D/hta/trace_compare/test/test.json.gz"
  "hta_event_sync|$D/hta/critical_path/cuda_event_sync/event_sync_trace.json.gz"
  "hta_triton|$D/hta/triton_example/triton_example.json.gz"
)
