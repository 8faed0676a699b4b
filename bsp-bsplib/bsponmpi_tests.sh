#!/usr/bin/env bash
# BSPonMPI's own API tests against bsp-bsplib: every test its CMakeLists.txt
# declares with add_mpi_test (name and process count), compiled with bspcc,
# run on threads (BSP_PROCS=P) and as MPI ranks (mpirun -np P), each judged
# by the outcome it declares: success, or an abort whose message starts
# with the given text.
#
#   bash bsp-bsplib/bsponmpi_tests.sh BSPONMPI_DIR [--threads | --mpi] [--skip-large] [TEST...]
#
# BSPONMPI_DIR is a checkout of wijnand-suijlen/bsponmpi, kept outside this
# repository (this script only compiles its test/ directory). Without TEST
# names, all of them run, hpput_one_int_max_size_msg (a 2 GiB put, about
# 8 GiB of memory and minutes on 2 cores) included unless --skip-large.
# The library is built here with --features mpi when mpirun and mpicc are
# installed (threads and ranks then use the same library), else for
# threads only. Prints one line per test and the totals; each run's output
# is kept in $BSPONMPI_OUT (default: a new temporary directory).
#
# BSPonMPI's test.h calls two hooks of its own library,
# bsp_intern_expect_success and bsp_intern_expect_abort; the shim written
# below defines them to print the expectation, which this script then
# checks against the exit status and the `bsp: ` line.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=${1:?usage: bsponmpi_tests.sh BSPONMPI_DIR [--threads | --mpi] [--skip-large] [TEST...]}
shift
src=$(cd "$src" && pwd)
[ -f "$src/test/test.h" ] && [ -f "$src/CMakeLists.txt" ] || {
    echo "$src: not a BSPonMPI checkout (no test/test.h)" >&2
    exit 2
}
ways="threads mpi"
large=yes
only=()
for arg in "$@"; do
    case "$arg" in
        --threads) ways=threads ;;
        --mpi) ways=mpi ;;
        --skip-large) large=no ;;
        *) only+=("$arg") ;;
    esac
done
have_mpi=no
command -v mpirun >/dev/null && command -v mpicc >/dev/null && have_mpi=yes
if [ "$have_mpi" = no ]; then
    case "$ways" in *mpi*) echo "note: no mpirun/mpicc; running on threads only" >&2 ;; esac
    ways=threads
fi

cd "$here/.."
if [ "$have_mpi" = yes ]; then
    cargo build --release -p bsp-bsplib --features mpi >&2
else
    cargo build --release -p bsp-bsplib >&2
fi

out=${BSPONMPI_OUT:-$(mktemp -d)}
mkdir -p "$out/shim" "$out/bin" "$out/log"
cat >"$out/shim/dllexport.h" <<'EOF'
#define DLL_PUBLIC
EOF
cat >"$out/shim/expect.c" <<'EOF'
/* BSPonMPI's test hooks, for bsponmpi_tests.sh: print the expectation. */
#include <stdio.h>
void bsp_intern_expect_success(void) {}
void bsp_intern_expect_abort(const char *message)
{
    printf("bsponmpi-test expects an abort: %s\n", message);
    fflush(stdout);
}
EOF

# The tests and their process counts, in CMakeLists.txt's order.
mapfile -t tests < <(sed -n 's/^ *add_mpi_test( *\([A-Za-z0-9_]*\) *\([0-9]*\) *).*/\1 \2/p' "$src/CMakeLists.txt")
root=()
[ "$(id -u)" -eq 0 ] && root=(--allow-run-as-root)
cores=$(nproc)

# judge STATUS LOG: whether the run passed, by the expectation it printed.
judge() {
    local status=$1 log=$2 want
    [ "$status" -eq 124 ] && return 1 # timed out
    want=$(sed -n 's/^bsponmpi-test expects an abort: //p' "$log" | head -n 1)
    if [ -z "$want" ]; then
        [ "$status" -eq 0 ] && ! grep -q "TEST FAILED" "$log"
    else
        [ "$status" -ne 0 ] && grep '^bsp: ' "$log" | grep -qF -- "$want"
    fi
}

declare -A passed=([threads]=0 [mpi]=0) failed=([threads]=0 [mpi]=0)
declare -A failures=([threads]="" [mpi]="")
count=0
for entry in "${tests[@]}"; do
    read -r name np <<<"$entry"
    if [ "${#only[@]}" -gt 0 ]; then
        printf '%s\n' "${only[@]}" | grep -qx "$name" || continue
    elif [ "$name" = hpput_one_int_max_size_msg ] && [ "$large" = no ]; then
        continue
    fi
    count=$((count + 1))
    cc=()
    if grep -q '#include *<mpi.h>' "$src/test/$name.c"; then
        [ "$have_mpi" = yes ] && cc=(--mpi)
    fi
    limit=60
    [ "$name" = hpput_one_int_max_size_msg ] && limit=900
    line=$(printf '%-36s p=%-2s' "$name" "$np")
    if ! "$here/bspcc" "${cc[@]}" -std=gnu99 -O2 -I "$out/shim" -I "$src/test" \
        "$src/test/$name.c" "$out/shim/expect.c" -o "$out/bin/$name" >"$out/log/$name.build" 2>&1; then
        for way in $ways; do
            failed[$way]=$((failed[$way] + 1))
            failures[$way]+=" $name"
        done
        echo "$line  does not compile (see $out/log/$name.build)"
        continue
    fi
    for way in $ways; do
        log="$out/log/$name.$way"
        extra=()
        [ "$np" -gt "$cores" ] && extra=(--oversubscribe)
        # In a subshell, so that the shell's note on a program killed by a
        # signal goes to the log too.
        set +e
        (
            if [ "$way" = threads ]; then
                BSP_PROCS=$np timeout "$limit" "$out/bin/$name"
            else
                timeout "$limit" mpirun "${root[@]}" "${extra[@]}" -np "$np" "$out/bin/$name"
            fi
        ) >"$log" 2>&1
        status=$?
        set -e
        if judge "$status" "$log"; then
            passed[$way]=$((passed[$way] + 1))
            line+="  $way: pass"
        else
            failed[$way]=$((failed[$way] + 1))
            failures[$way]+=" $name"
            line+="  $way: FAIL (exit $status)"
        fi
    done
    echo "$line"
done
for way in $ways; do
    echo "$way: ${passed[$way]} of $count passed${failures[$way]:+; failed:${failures[$way]}}"
done
echo "logs: $out/log"
