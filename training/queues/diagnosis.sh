#!/usr/bin/env bash
# Issue 14: why training hurts Biomedical and gains nothing on Tweet, and the stronger pip-shipped encoder.
# Most informative first; method runs skip rows docs/results.json already has.
#   nohup bash training/queues/diagnosis.sh > diagnosis-queue.log 2>&1 &
# Budget on a 2-core AVX2 EPYC (fp32): augmentation ~3 min a corpus; SCCL 200 x 64 ~14 min (Biomedical), ~5 min
# (Tweet); all-mpnet-base-v2 ~5x MiniLM's time. Done on 2026-11-23: steps 1, 2 (contrast only) and the dropout views.
set -u
cd "$(dirname "$0")/../.."
PY=${PY:-.venv/bin/python}
B="$PY -m training.bench"
# 1. Do the SCCL authors' augmented views keep each corpus's classes apart (pretrained MiniLM)?
$B augmentation --datasets biomedical stackoverflow tweet --seeds 0
# 2. Which SCCL term hurts Biomedical: the instance contrast alone, the clustering (DEC) alone, or the views?
$B sccl --skip-done --datasets biomedical tweet --seeds 0 --max-steps 200 --config cluster_loss_weight=0 --variant "contrast only"
$B sccl --skip-done --datasets biomedical tweet --seeds 0 --max-steps 200 --config eta=0 --variant "clustering only"
# 3. all-mpnet-base-v2 (the mpnet-encoder extra) + k-means beside MiniLM + k-means
$B baselines --encoder sentence-transformers/all-mpnet-base-v2 --datasets stackoverflow searchsnippets --seeds 0 1 2
# 4. the rest
$B sccl --skip-done --datasets biomedical --seeds 0 --max-steps 200 --augmentation virtual --variant "dropout views"
$B augmentation --datasets searchsnippets agnews --seeds 0
$B baselines --encoder sentence-transformers/all-mpnet-base-v2 --datasets biomedical tweet --seeds 0 1 2
$B sccl --skip-done --datasets stackoverflow searchsnippets --seeds 0 --max-steps 200 --encoder sentence-transformers/all-mpnet-base-v2
# 5. The k-means start (kmeans_init): k-means++ vs UMAP-seeded on the pretrained MiniLM, then SCCL from the UMAP start
$B kmeans-init --datasets googlenews_ts stackoverflow biomedical tweet --seeds 0
$B sccl --skip-done --datasets googlenews_ts --seeds 0 --training kmeans_init='"umap"' --variant "UMAP k-means init"
$B kmeans-init --datasets searchsnippets agnews googlenews_t googlenews_s --seeds 0
$B sccl --skip-done --datasets stackoverflow searchsnippets --seeds 0 --training kmeans_init='"umap"' --variant "UMAP k-means init"
