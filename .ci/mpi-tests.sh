#!/usr/bin/env bash
# MPI part of CI, called by .ci/run: installs OpenMPI when
# missing, builds with --features mpi, runs the MPI tests (the failure and
# determinism tests spawn mpirun themselves; the shared-harness tests run
# as ranks under mpirun) and every example under mpirun -np 2 and -np 3.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v mpirun >/dev/null || ! command -v mpicc >/dev/null; then
    SUDO=""
    [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update
    $SUDO DEBIAN_FRONTEND=noninteractive apt-get install -y openmpi-bin libopenmpi-dev libclang-dev
fi

ROOT=()
[ "$(id -u)" -eq 0 ] && ROOT=(--allow-run-as-root)
LIMIT=${BSP_MPI_TIMEOUT:-600}
CORES=$(nproc)
START=$SECONDS

# run_np NP PROGRAM ARGS...: mpirun with a time limit. --oversubscribe only
# when NP exceeds the cores: it makes OpenMPI yield in its progress loop,
# which slows the np <= cores case (BENCHMARKS.md, section 4).
run_np() {
    local np=$1
    shift
    local extra=()
    [ "$np" -gt "$CORES" ] && extra=(--oversubscribe)
    timeout "$LIMIT" mpirun "${ROOT[@]}" "${extra[@]}" -np "$np" "$@"
}

echo "== build (--features mpi)"
cargo build --workspace --all-targets --features mpi
cargo build --release --workspace --examples --features mpi

START=$SECONDS
echo "== tests (threads side, and the mpirun-spawning MPI tests; bsp-bsplib's C tests also as MPI ranks)"
cargo test --workspace --features mpi

echo "== test binaries as MPI ranks"
# Every integration-test binary, run as the ranks of one job: the shared
# harness (tests/tests/support) switches to the MPI world; tests that spawn
# mpirun themselves skip inside a job.
mapfile -t TESTS < <(cargo test -p bsp-tests --features mpi --tests --no-run --message-format=json 2>/dev/null |
    python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["kind"] == ["test"] and m["target"]["src_path"].endswith(tuple(["/tests/" + m["target"]["name"] + ".rs"])):
        print(m["executable"])')
for np in 1 2 3 4; do
    for t in "${TESTS[@]}"; do
        echo "-- mpirun -np $np $(basename "$t")"
        run_np "$np" "$t" --test-threads=1 -q
    done
done

echo "== the transport conformance suite (bsp-core's unit tests) as MPI ranks"
CORE_TESTS=$(cargo test -p bsp-core --features mpi --lib --no-run --message-format=json 2>/dev/null |
    python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "bsp_core":
        print(m["executable"])')
for np in 2 3; do
    echo "-- mpirun -np $np bsp_core transport::conformance"
    run_np "$np" "$CORE_TESTS" transport::conformance --test-threads=1 -q
done

# with_setting VAR=VALUE [NAME...]: the test binaries named NAME-* (all of
# them without NAMEs) under mpirun -np 2 and 3, with VAR=VALUE on every rank.
with_setting() {
    local setting=$1
    shift
    for np in 2 3; do
        for t in "${TESTS[@]}"; do
            local name keep=$(($# == 0))
            name=$(basename "$t")
            for want in "$@"; do
                [[ $name == "$want"-* ]] && keep=1
            done
            [ "$keep" -eq 1 ] || continue
            echo "-- $setting mpirun -np $np $name"
            (export "${setting?}" && run_np "$np" -x "${setting%%=*}" "$t" --test-threads=1 -q)
        done
    done
}

echo "== the transport and routing tests, blocks over 700 bytes cut into pieces (as those over 2 GiB are)"
with_setting BSP_MPI_PIECE=700 mpi_transport core_routing

echo "== the routing and semantics tests, every put payload placed straight into its coarray"
with_setting BSP_MPI_RECEIVE=placed mpi_transport core_routing core_semantics core_failures

echo "== the transport and routing tests with the sync rows as MPI_Put + MPI_Win_fence (the way across nodes)"
with_setting BSP_MPI_SYNC=put mpi_transport core_routing core_semantics core_failures

echo "== the transport and routing tests with the sync rows through MPI_Allgather"
with_setting BSP_MPI_SYNC=allgather mpi_transport core_routing

echo "== examples under mpirun (quick arguments; each checks its own answer)"
# The examples' defaults are sized for benchmarking (GiBs, 2^26 keys): give
# each one quick arguments here. An example without a case below is only
# checked to start (--help) and flagged, until it gets one.
for src in examples/*.rs benchmarks/examples/*.rs; do
    name=$(basename "$src" .rs)
    case "$name" in
        hello | tour) args=() ;;
        bspbench) args=(--max-kib 256) ;;
        bench_router) args=(--mib 8 --reps 1 --rounds 1) ;;
        bench_collectives) args=(--bytes 8,4096 --reps 2) ;;
        bench_mpi) args=(--quick) ;;
        bench_one_sided) args=(--rounds 1) ;;
        bench_access) args=(--n 100000 --reps 1) ;;
        bench_k_level) args=(--bytes 8,5000 --reps 1) ;;
        histogram) args=(--n 1000000 --bins 1000 --dist zipf --reps 1) ;;
        radix_sort) args=(--n 2000003 --dist R --bits 64 --rounds 2) ;;
        nas_is) args=(--class S) ;;
        prefix_sum) args=(--n 100003) ;;
        word_count) args=(--words 100000) ;;
        bfs) args=(--n 100000) ;;
        jacobi) args=(--n 100000 --iterations 200) ;;
        bench_procs)
            echo "-- skipping bench_procs under MPI: it measures large p on threads"
            continue
            ;;
        bench_floor)
            echo "-- skipping bench_floor under MPI: it measures threads against an OpenMP program"
            continue
            ;;
        bench_sort)
            echo "-- skipping bench_sort under MPI: its peers (std, rayon, ...) run on threads only; CI runs it on threads"
            continue
            ;;
        *)
            echo "-- WARNING: no quick MPI arguments for example $name in .ci/mpi-tests.sh; checking --help only"
            run_np 2 "target/release/examples/$name" --help >/dev/null
            continue
            ;;
    esac
    for np in 2 3; do
        echo "-- mpirun -np $np $name ${args[*]}"
        run_np "$np" "target/release/examples/$name" "${args[@]}"
    done
done
echo "== the tour and the lessons print once under mpirun -np 3, as on threads"
out=$(run_np 3 target/release/examples/tour)
[ "$out" = "3 processors each received 30" ] || { echo "tour under mpirun -np 3 printed: $out"; exit 1; }
for lesson in "prefix_sum --n 100003" "word_count --words 100000" "bfs --n 100000"; do
    read -r -a cmd <<<"$lesson"
    threads=$(BSP_PROCS=3 "target/release/examples/${cmd[0]}" "${cmd[@]:1}" --json)
    mpi=$(run_np 3 "target/release/examples/${cmd[0]}" "${cmd[@]:1}" --json)
    lines=$(printf '%s\n' "$mpi" | wc -l)
    [ "$lines" -eq 1 ] || { echo "${cmd[0]} printed $lines lines under mpirun -np 3:"; echo "$mpi"; exit 1; }
    # The same answer on both transports: the JSON line less its transport and times.
    strip() { python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); [d.pop(k, None) for k in list(d) if k in ("backend","transport") or "seconds" in k or k.endswith("_s") or "time" in k]; print(json.dumps(d, sort_keys=True))'; }
    [ "$(strip <<<"$threads")" = "$(strip <<<"$mpi")" ] || { echo "${cmd[0]}: threads and MPI disagree:"; echo "$threads"; echo "$mpi"; exit 1; }
done
echo "== checkpoint and restart under mpirun -np 3: rank 1 is killed (SIGKILL), the job resumes"
CKPT_TMP=$(mktemp -d)
if run_np 3 target/release/examples/jacobi --checkpoint-dir "$CKPT_TMP/rod" --checkpoint-every 50 --die-at 120 >/dev/null 2>&1; then
    echo "jacobi --die-at 120 did not die under mpirun"; exit 1
fi
run_np 3 target/release/examples/jacobi --checkpoint-dir "$CKPT_TMP/rod" --checkpoint-every 50 --json | tee /dev/stderr | grep -q '"resumed_from":100'
echo "== BSPlib layer: a C program built with bspcc, as MPI ranks"
cargo build --release -p bsp-bsplib --features mpi
BSPLIB_TMP=$(mktemp -d)
bsp-bsplib/bspcc -std=c99 -Wall -Werror -O2 bsp-bsplib/tests/c/drma.c -o "$BSPLIB_TMP/drma"
bsp-bsplib/bspcc -std=c99 -Wall -Werror -O2 bsp-bsplib/tests/c/spmd_init.c -o "$BSPLIB_TMP/spmd_init"
bsp-bsplib/bspcc -std=c99 -Wall -Werror -O2 bsp-bsplib/benches/put_rate.c -o "$BSPLIB_TMP/put_rate"
for np in 2 3; do
    run_np "$np" "$BSPLIB_TMP/drma"
    run_np "$np" "$BSPLIB_TMP/spmd_init"
done
run_np 2 "$BSPLIB_TMP/put_rate"
echo "== MPI: all passed in $((SECONDS - START)) s (after the build)"
