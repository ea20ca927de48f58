"""The benchmark: methods x corpora x seeds, baselines, speed and scale; writes docs/results.md and README's
leaderboard-in-short table from docs/results.json (never edit them by hand).

    python -m training.bench baselines --datasets all --seeds 0 1 2
    python -m training.bench <method> --datasets stackoverflow searchsnippets --seeds 0 1 2 --skip-done
    python -m training.bench decmlm ... --config mlm_loss_weight=0 --variant "w/o MLM"   # the paper's ablation
    python -m training.bench speed
    python -m training.bench authors-sccl --from side_by_side.jsonl   # timings of the authors' code, run outside
    python -m training.bench auto-k --datasets all --seeds 0          # choosing K without labels
    python -m training.bench render                                   # re-write docs/results.md from docs/results.json

<method> is any registered method (hf_textcluster.models.METHODS: sccl, decmlm, ...); its paper's numbers and display
name come from the registry. One module per section (``add_arguments``, ``run``, ``render``); ``store`` keeps the rows
(keyed by section / method / dataset / seed / variant, with the exact command, package versions and machine) and
every save re-renders the page, so sections can be re-run independently and a stopped run resumes (``--skip-done``).
Ratios are measured side by side in one process; absolute times on a shared machine are noisy.
"""
