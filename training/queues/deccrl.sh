#!/usr/bin/env bash
# Issue 11's runs: DEC-CRL on the paper's three corpora and SearchSnippets / Tweet (3 seeds), then the paper's
# ablations (λ_r = 0 "w/o CRL", the latent autoencoder "w/o CRL w LSR") and the held-out splits of its Table 2;
# cheapest first. Measured on 2 AVX2 cores, fp32: Tweet ~14 min, StackOverflow ~20, SearchSnippets ~23-27, AgNews and
# Biomedical ~34-42 (~6 min with native bf16); anything else on the CPU inflates that several times.
# Resumable: each command skips the rows docs/results.json already has.
#   nohup bash training/queues/deccrl.sh > deccrl.log 2>&1 &
set -u
cd "$(dirname "$0")/../.."
PY=${PY:-.venv/bin/python}
B="$PY -m training.bench deccrl --skip-done"
LSR=(--config reconstruction_module='"lsr"' --variant "w/o CRL w LSR")
NOCRL=(--config reconstruction_loss_weight=0 --variant "w/o CRL")
PCA=(--config latent_init='"pca"' --variant "latent_init pca")  # FC_e's start (not the paper's; see the card)
# a queue restarted while one of its runs is still going waits for it rather than racing it
while pgrep -f "training.bench deccrl" > /dev/null; do sleep 30; done
$B --datasets stackoverflow tweet searchsnippets agnews biomedical --seeds 0
$B --datasets stackoverflow searchsnippets biomedical "${PCA[@]}" --seeds 0  # does the PCA start close the gap?
# seed 0 said yes on SearchSnippets / Biomedical (head +5 / +15 ACC): these decide whether it becomes the default
$B --datasets tweet searchsnippets biomedical stackoverflow "${PCA[@]}" --seeds 1 2
$B --datasets tweet agnews "${PCA[@]}" --seeds 0
$B --datasets stackoverflow tweet searchsnippets --seeds 1 2
$B --datasets stackoverflow "${LSR[@]}" --seeds 0
$B --datasets stackoverflow --held-out --seeds 0
$B --datasets agnews biomedical --seeds 1 2
$B --datasets agnews biomedical "${NOCRL[@]}" --seeds 0
$B --datasets agnews biomedical "${LSR[@]}" --seeds 0
$B --datasets agnews biomedical --held-out --seeds 0
$B --datasets stackoverflow agnews biomedical "${NOCRL[@]}" --seeds 1 2
$B --datasets stackoverflow agnews biomedical "${LSR[@]}" --seeds 1 2
$B --datasets stackoverflow agnews biomedical --held-out --seeds 1 2
