#!/usr/bin/env bash
# SCCL's rows on AgNews and Biomedical come from the 200-step recipe of 2026-11-22 and have no UMAP k-means after
# (StackOverflow, SearchSnippets and Tweet were rerun on 2026-11-24: StackOverflow reached 87.1 with it, 3 seeds).
# These commands replace those rows with today's recipe: NOT resumable by --skip-done (a rerun replaces a row), so
# delete a line once it has run. ~5 min a run on a 2-core Xeon with AMX (bf16), ~4x that in fp32 on AVX2.
# Then the older kept models get the UMAP column (rescore skips the rows that have it).
#   nohup bash training/queues/sccl.sh > sccl-queue.log 2>&1 &
set -u
cd "$(dirname "$0")/../.."
PY=${PY:-.venv/bin/python}
B="$PY -m training.bench"
$B sccl --datasets agnews biomedical --seeds 0 1 2
$B rescore --datasets stackoverflow searchsnippets biomedical tweet agnews googlenews_ts googlenews_t googlenews_s --seeds 0 1 2
