#!/usr/bin/env bash
# The DEC-CRL benchmark queue (issue 11), most informative runs first. Resumable: each command skips the
# (dataset, seed, variant) rows docs/results.json already has, so re-running it continues where it stopped.
#   nohup bash training/queues/deccrl.sh > deccrl-queue.log 2>&1 &
# One run of the cpu recipe (300 x 64) takes ~19 min on a 2-core AVX2 EPYC (fp32), ~6 min with native bf16.
set -u
cd "$(dirname "$0")/../.."
PY=${PY:-.venv/bin/python}
B="$PY training/bench.py deccrl --skip-done"
LSR=(--config reconstruction_module='"lsr"' --variant "w/o CRL w LSR")
NOCRL=(--config reconstruction_loss_weight=0 --variant "w/o CRL")
$B --datasets agnews biomedical --seeds 0
$B --datasets stackoverflow "${LSR[@]}" --seeds 0
$B --datasets agnews "${NOCRL[@]}" --seeds 0
$B --datasets agnews "${LSR[@]}" --seeds 0
$B --datasets stackoverflow --held-out --seeds 0
$B --datasets searchsnippets tweet --seeds 0
$B --datasets biomedical "${NOCRL[@]}" --seeds 0
$B --datasets biomedical "${LSR[@]}" --seeds 0
$B --datasets agnews biomedical --held-out --seeds 0
$B --datasets stackoverflow agnews biomedical searchsnippets tweet --seeds 1 2
$B --datasets stackoverflow agnews biomedical "${NOCRL[@]}" --seeds 1 2
$B --datasets stackoverflow agnews biomedical "${LSR[@]}" --seeds 1 2
$B --datasets stackoverflow agnews biomedical --held-out --seeds 1 2
