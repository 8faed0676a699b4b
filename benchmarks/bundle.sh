#!/usr/bin/env bash
# Builds here everything benchmarks/scaling.sh runs, for a bare many-core
# machine (no Rust toolchain, no MPI, no network) that gets the working
# tree plus a few carried paths:
#
#   bash benchmarks/bundle.sh [OUT_DIR]   # default: .scaling_bin at the repository root
#
# OUT_DIR/                 threads harnesses of bsp-benchmarks (bench_floor,
#                          bspbench, bench_router, bench_sort, bench_collectives,
#                          ...) and the examples nas_is and radix_sort, statically
#                          linked and stripped; omp_barrier, the OpenMP floor
#                          program (benchmarks/floor/), also static.
# OUT_DIR/mpi/             only where mpicc and mpirun exist: bspbench,
#                          bench_router and bench_mpi built with --features mpi
#                          (dynamically linked), Open MPI's launcher, the shared
#                          libraries they load apart from glibc's, Open MPI's and
#                          PMIx's plugins and help files, and `run`, which
#                          starts mpirun from the bundle:
#                            OUT_DIR/mpi/run -np 4 OUT_DIR/mpi/bspbench --json
#
# Anything else in OUT_DIR (NPB's is.B.x, say) is left alone. At the end
# the script checks that every MPI library resolves inside the bundle,
# runs a 2-rank bspbench through OUT_DIR/mpi/run with a bare environment,
# and prints the sizes (the carried paths may take 64 MiB in all).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:-$ROOT/.scaling_bin}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
cd "$ROOT"
TRIPLE=x86_64-unknown-linux-gnu
TARGET_DIR=$(cargo metadata --format-version 1 --no-deps |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')

echo "== threads harnesses, statically linked (target $TRIPLE)"
# --target keeps build scripts and proc macros dynamic, as they must be.
RUSTFLAGS="-C target-feature=+crt-static" cargo build --release --target "$TRIPLE" \
    -p bsp-benchmarks --examples
RUSTFLAGS="-C target-feature=+crt-static" cargo build --release --target "$TRIPLE" \
    -p bsp --example nas_is --example radix_sort
STATIC=()
for src in benchmarks/examples/*.rs; do
    name=$(basename "$src" .rs)
    # bench_mpi needs the mpi feature: it is in the MPI bundle instead.
    [ "$name" = bench_mpi ] || STATIC+=("$name")
done
STATIC+=(nas_is radix_sort)
for name in "${STATIC[@]}"; do
    install -m 755 "$TARGET_DIR/$TRIPLE/release/examples/$name" "$OUT/$name"
    strip "$OUT/$name"
done

echo "== the OpenMP floor program, statically linked"
# (The linker warns about dlopen in libgomp: only offloading calls it.)
gcc -O2 -fopenmp -static benchmarks/floor/omp_barrier.c -o "$OUT/omp_barrier"
strip "$OUT/omp_barrier"
gcc -O3 -fopenmp -static benchmarks/floor/nas_is_floor.c -o "$OUT/nas_is_floor"
strip "$OUT/nas_is_floor"

for name in "${STATIC[@]}" omp_barrier nas_is_floor; do
    if ldd "$OUT/$name" 2>&1 | grep -q "=>"; then
        echo "bundle.sh: $OUT/$name is dynamically linked" >&2
        exit 1
    fi
done

rm -rf "$OUT/mpi"
if ! command -v mpicc >/dev/null || ! command -v mpirun >/dev/null; then
    echo "== no mpicc or mpirun here: no MPI bundle (scaling.sh skips its MPI steps)"
else
    echo "== MPI harnesses (--features mpi)"
    MPI_BINS=(bspbench bench_router bench_mpi)
    cargo build --release -p bsp-benchmarks --features mpi \
        "${MPI_BINS[@]/#/--example=}"
    M=$OUT/mpi
    mkdir -p "$M/bin" "$M/lib" "$M/share" "$M/etc"
    for name in "${MPI_BINS[@]}"; do
        install -m 755 "$TARGET_DIR/release/examples/$name" "$M/$name"
        strip "$M/$name"
    done

    echo "== the Open MPI runtime"
    # The install directories as this Open MPI reports them (Debian:
    # plugins in .../openmpi/lib/openmpi3, help files in /usr/share/openmpi).
    ompi_dir() { ompi_info --path "$1" --parsable | sed -n "s/^path:$1://p"; }
    PKGLIB=$(ompi_dir pkglibdir)
    PKGDATA=$(ompi_dir pkgdatadir)
    SYSCONF=$(ompi_dir sysconfdir)
    LAUNCHER=$(readlink -f "$(command -v mpirun)")
    install -m 755 "$LAUNCHER" "$M/bin/orterun"
    install -m 755 "$LAUNCHER" "$M/bin/mpirun"
    ORTED=$(command -v orted || true)
    [ -n "$ORTED" ] && install -m 755 "$(readlink -f "$ORTED")" "$M/bin/orted"
    cp -r "$PKGLIB" "$M/lib/openmpi3"
    cp -r "$PKGDATA" "$M/share/openmpi"
    # The compiler wrappers' settings (links, some named mpic++...): no
    # compiler runs there.
    rm -f "$M/share/openmpi/"*wrapper-data*
    # Debian's site settings (which transports to leave out), if any.
    [ -f "$SYSCONF/openmpi-mca-params.conf" ] && cp "$SYSCONF/openmpi-mca-params.conf" "$M/etc/"
    # PMIx, when Open MPI uses an external one: its plugins and help files
    # live beside the library.
    PMIX_LIB=$(ldd "$M/lib/openmpi3"/mca_pmix_ext*.so 2>/dev/null | awk '/libpmix/ {print $3; exit}')
    if [ -n "$PMIX_LIB" ]; then
        PMIX_HOME=$(dirname "$(dirname "$(readlink -f "$PMIX_LIB")")")
        [ -d "$PMIX_HOME/lib/pmix" ] && cp -r "$PMIX_HOME/lib/pmix" "$M/lib/pmix"
        [ -d "$PMIX_HOME/share/pmix" ] && cp -r "$PMIX_HOME/share/pmix" "$M/share/pmix"
    fi

    # Every shared library that the bundle's programs and plugins load,
    # and the ones those load, apart from glibc's own (a bare system has
    # those, and they must match its loader).
    is_glibc() {
        case "$1" in
        ld-linux*.so* | libc.so* | libm.so* | libmvec.so* | libpthread.so* | libdl.so* | librt.so* | \
            libutil.so* | libresolv.so* | libanl.so* | libnsl.so* | libnss_*.so* | libBrokenLocale.so*)
            return 0 ;;
        esac
        return 1
    }
    todo=("$M"/bench* "$M"/bspbench "$M/bin/orterun" "$M/bin"/orted)
    while IFS= read -r -d '' so; do todo+=("$so"); done < <(find "$M/lib" -name '*.so*' -print0)
    declare -A seen=()
    while [ "${#todo[@]}" -gt 0 ]; do
        elf=${todo[0]}
        todo=("${todo[@]:1}")
        [ -e "$elf" ] || continue
        while read -r name path; do
            if is_glibc "$name" || [ -n "${seen[$name]:-}" ]; then
                continue
            fi
            seen[$name]=1
            if [ ! -e "$M/lib/$name" ]; then
                cp -L "$path" "$M/lib/$name"
                chmod 644 "$M/lib/$name"
                todo+=("$M/lib/$name")
            fi
        done < <(ldd "$elf" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}')
    done
    find "$M/lib" -name '*.so*' -type f -exec strip --strip-unneeded {} + 2>/dev/null || true
    # Plain files only: the copy to the lent machine may not keep links.
    if [ -n "$(find "$M" -type l)" ]; then
        echo "bundle.sh: links left in the bundle:" >&2
        find "$M" -type l >&2
        exit 1
    fi

    cat >"$M/run" <<'RUN'
#!/bin/sh
# mpirun from this bundle (benchmarks/bundle.sh), for a machine without
# Open MPI: `run -np 4 PROGRAM ARGS...`. Points Open MPI and PMIx at the
# bundle's plugins, help files and settings, puts its libraries first on
# the search path, and allows a run as root.
case $0 in
*/*) B=$(cd "${0%/*}" && pwd) ;;
*) echo "run: start me by a path (./run, .../mpi/run)" >&2; exit 2 ;;
esac
export OPAL_PREFIX="$B" OPAL_EXEC_PREFIX="$B" OPAL_BINDIR="$B/bin" OPAL_SBINDIR="$B/bin"
export OPAL_LIBDIR="$B/lib" OPAL_PKGLIBDIR="$B/lib/openmpi3"
export OPAL_DATAROOTDIR="$B/share" OPAL_DATADIR="$B/share" OPAL_PKGDATADIR="$B/share/openmpi"
export OPAL_SYSCONFDIR="$B/etc"
export PMIX_PKGLIBDIR="$B/lib/pmix" PMIX_PKGDATADIR="$B/share/pmix"
export PMIX_MCA_mca_base_component_path="$B/lib/pmix"
# One node, and maybe no ssh or rsh to find: the launcher that starts
# local processes only.
export OMPI_MCA_plm="${OMPI_MCA_plm:-isolated}"
# hwloc's optional plugins (GL, OpenCL, PCI, XML) from the bundle only:
# there are none, so a machine with hwloc installed behaves as a bare one.
export HWLOC_PLUGINS_PATH="$B/lib/hwloc"
export LD_LIBRARY_PATH="$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="$B/bin:${PATH:-/usr/bin:/bin}"
exec "$B/bin/orterun" --allow-run-as-root "$@"
RUN
    chmod 755 "$M/run"

    echo "== checking the MPI bundle"
    bad=0
    for elf in "$M"/bench* "$M"/bspbench "$M"/bin/orte* $(find "$M/lib" -name '*.so*' -type f); do
        while read -r name path; do
            case "$path" in
            "$M"/*) ;;
            *) is_glibc "$name" || { echo "  $elf: $name resolves to $path" >&2; bad=1; } ;;
            esac
        done < <(LD_LIBRARY_PATH="$M/lib" ldd "$elf" 2>/dev/null |
            awk '$2 == "=>" {print $1, ($3 ~ /^\// ? $3 : "not-found")}')
    done
    if [ "$bad" -ne 0 ]; then
        echo "bundle.sh: some libraries resolve outside the bundle (above)" >&2
        exit 1
    fi
    echo "   every library resolves inside $M (or is glibc's)"
    # A run with nothing of this shell's environment, not even a PATH
    # that leads to the system's mpirun.
    if ! timeout 60 env -i PATH=/nonexistent HOME="${HOME:-/root}" \
        "$M/run" -np 2 "$M/bspbench" --max-kib 16; then
        echo "bundle.sh: $M/run -np 2 $M/bspbench failed" >&2
        exit 1
    fi
fi

echo "== sizes"
du -sh "$OUT"/* | sort -h
if [ -d "$OUT/mpi" ]; then
    du -sh "$OUT/mpi"/* | sort -h | tail -4
fi
du -sh "$OUT"
