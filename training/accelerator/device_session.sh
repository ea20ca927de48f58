#!/usr/bin/env bash
# One device session's checks: the GPU tests, SCCL's paper recipe on StackOverflow (batch 400, 3,000 steps, scored)
# and the pipeline's speed on the GPU. Two calls, each with its own carry (both do not fit in one call's 64 MiB):
#
#   bash training/accelerator/device_session.sh tests        # carry runs/carry-tests, timeout_s 300
#   bash training/accelerator/device_session.sh paper speed  # carry runs/carry, timeout_s 600
#   bash training/accelerator/device_session.sh --dry-run    # here, on the CPU: every part shrunk
#
# Built here beforehand (training/accelerator/README.md):
#   .venv/bin/python training/accelerator/carry.py --wheels-only --extra-wheels gensim smart_open \
#       --python-version 3.12 --transformers --out runs/carry-tests
#   .venv/bin/python training/accelerator/carry.py --corpora stackoverflow --methods sccl --python-version 3.12
#
# Each part runs under its own time limit, in the order given, so that "paper speed" ends within a 600 s call:
# tests 240 s, paper 500 s (about 420 s of training at 0.13 s a step on an H200, then the scores; the candidate
# partitions are not scored), speed 80 s. A part that fails or runs out of time does not stop the next one; the exit
# status is the last failure's. Everything comes back under $OUT: <part>.log, tests.xml, and results.json (a copy of
# docs/results.json with the paper row and the speed rows; merge it here with run_paper.py --merge).
#
# --dry-run checks the same commands on the CPU: the CUDA tests skip, the paper recipe trains 2 steps of 16 texts on
# a 400-text sample of StackOverflow (every 50th text, all 20 classes) carried without wheels, and speed times the
# pipeline on that sample on the CPU (once), each under a longer limit.
set -u
cd "$(dirname "$0")/../.."
PYTHON=${PYTHON:-python}
OUT=${OUT:-runs/device-session}
DRY_RUN=0
PARTS=()
for arg in "$@"; do
    case "$arg" in
        --dry-run) DRY_RUN=1 ;;
        tests | paper | speed) PARTS+=("$arg") ;;
        *) echo "error: unknown argument '$arg': give parts (tests, paper, speed) and/or --dry-run." >&2; exit 2 ;;
    esac
done
[ ${#PARTS[@]} -eq 0 ] && PARTS=(tests paper speed)
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

TESTS_CARRY=runs/carry-tests
PAPER_CARRY=runs/carry
PAPER_ARGS=(--no-partitions)
SPEED_ARGS=(--parts pipeline --device cuda)
LIMITS=(240 500 80)  # tests, paper, speed (seconds)
if [ "$DRY_RUN" = 1 ]; then
    dry=$(mktemp -d)
    trap 'rm -rf "$dry"' EXIT
    data=${HF_TEXTCLUSTER_DATA_DIR:-../shared/data}
    mkdir -p "$dry/data/augmented/sccl_contextual"
    for csv in stackoverflow.csv augmented/sccl_contextual/stackoverflow.csv; do
        awk 'NR == 1 || NR % 50 == 2' "$data/$csv" >"$dry/data/$csv"
    done
    "$PYTHON" training/accelerator/carry.py --no-wheels --corpora stackoverflow --methods sccl \
        --data-dir "$dry/data" --out "$dry/carry" >"$OUT/carry.log" 2>&1 || { cat "$OUT/carry.log"; exit 1; }
    TESTS_CARRY=$dry/carry
    PAPER_CARRY=$dry/carry
    PAPER_ARGS+=(--max-steps 2 --training per_device_train_batch_size=16)
    SPEED_ARGS=(--parts pipeline --device cpu --pipeline-repeats 1)
    LIMITS=(240 600 300)  # two shared CPU cores are slower than the GPU machine
fi

{
    date -u
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null || echo "no GPU"
    "$PYTHON" -c "import sys, torch; print(sys.version.split()[0], 'torch', torch.__version__)"
} >"$OUT/session.txt" 2>&1

status=0
run_part() {  # run_part NAME SECONDS COMMAND...
    local name=$1 limit=$2 start=$SECONDS code
    shift 2
    echo "== $name (at most ${limit}s): $*"
    timeout -k 10 "$limit" "$@" >"$OUT/$name.log" 2>&1
    code=$?
    tail -n 15 "$OUT/$name.log"
    echo "== $name: exit $code after $((SECONDS - start))s"
    [ "$code" -ne 0 ] && status=$code
}

for part in "${PARTS[@]}"; do
    case "$part" in
        tests)
            run_part tests "${LIMITS[0]}" "$PYTHON" training/accelerator/run_paper.py --tests --carry "$TESTS_CARRY" \
                -- -rs --junitxml "$OUT/tests.xml"
            ;;
        paper)
            run_part paper "${LIMITS[1]}" "$PYTHON" training/accelerator/run_paper.py --method sccl --corpus stackoverflow \
                --carry "$PAPER_CARRY" --out "$OUT" --without-umap -- "${PAPER_ARGS[@]}"
            ;;
        speed)
            run_part speed "${LIMITS[2]}" "$PYTHON" training/accelerator/run_paper.py --bench speed \
                --carry "$PAPER_CARRY" --out "$OUT" -- "${SPEED_ARGS[@]}"
            ;;
    esac
done
exit $status
