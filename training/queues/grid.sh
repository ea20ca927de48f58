#!/usr/bin/env bash
# Issue 14's grid: every method on every corpus, cheapest missing cells first (seed 0 everywhere, then seeds 1-2 on
# StackOverflow / SearchSnippets / Biomedical / Tweet). Resumable: each command skips the rows docs/results.json
# already has.   nohup bash training/queues/grid.sh > grid-queue.log 2>&1 &
# Times of one run on a 2-core AVX2 EPYC (fp32), cpu recipes: SCCL / DEC-MLM ~8-15 min, DEC-CRL ~20-40 min,
# AECL ~20 min, ClusterBERT ~30-60 min (the per-method queues hold the ablations).
set -u
cd "$(dirname "$0")/../.."
PY=${PY:-.venv/bin/python}
B="$PY -m training.bench"
GN=(googlenews_ts googlenews_t googlenews_s)
$B sccl --skip-done --datasets "${GN[@]}" --seeds 0
# seed 1 of DEC-CRL on StackOverflow also stores the topics of the paper's Table 4
$B deccrl --skip-done --datasets stackoverflow --seeds 1
$B aecl --skip-done --datasets biomedical tweet --seeds 0
$B clusterbert --skip-done --datasets biomedical --seeds 0
$B decmlm --skip-done --datasets "${GN[@]}" --seeds 0
$B deccrl --skip-done --datasets searchsnippets tweet --seeds 0
$B clusterbert --skip-done --datasets tweet agnews googlenews_ts --seeds 0
$B aecl --skip-done --datasets agnews "${GN[@]}" --seeds 0
$B deccrl --skip-done --datasets "${GN[@]}" --seeds 0
$B clusterbert --skip-done --datasets googlenews_t googlenews_s --seeds 0
for m in deccrl aecl clusterbert; do
  $B $m --skip-done --datasets stackoverflow searchsnippets biomedical tweet --seeds 1 2
done
# A stronger encoder (needs the mpnet-encoder extra; ~5x the time per step): two methods on StackOverflow and
# SearchSnippets
$B sccl --skip-done --datasets stackoverflow searchsnippets --encoder sentence-transformers/all-mpnet-base-v2 --seeds 0  # done 2026-11-24
$B aecl --skip-done --datasets stackoverflow searchsnippets --encoder sentence-transformers/all-mpnet-base-v2 --seeds 0  # done 2026-11-24
