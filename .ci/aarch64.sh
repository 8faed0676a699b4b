#!/usr/bin/env bash
# The test suite on 64-bit ARM Linux, under qemu-user: the code behind
# cfg(target_arch = "x86_64") takes its other branch there (the line
# writer's plain stores, the clock, prefetches), and ARM's weaker memory
# model is what the atomics are written for. Run by .ci/run; alone:
#
#   bash .ci/aarch64.sh
#
# Needs root (apt-get, and registering qemu with binfmt_misc so that tests
# that start their own binary again, as the checkpoint and failure tests
# do, can). Every emulated thread runs on one host core (`taskset -c 0`):
# QEMU 7.2 on an x86 host does not order an ARM store-release before a
# later load-acquire of another word, an order the ARM architecture
# guarantees and the threads transport's parking relies on (a raise
# stores the signal, then reads whether anyone sleeps), so with two host
# cores a wake can be lost and a barrier test hang. On one core the
# threads interleave but never see each other's stores out of order.
set -euo pipefail
cd "$(dirname "$0")/.."
TARGET=aarch64-unknown-linux-gnu
SYSROOT=/usr/aarch64-linux-gnu

need=()
command -v qemu-aarch64-static >/dev/null || need+=(qemu-user-static)
command -v aarch64-linux-gnu-gcc >/dev/null || need+=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross)
if [ "${#need[@]}" -gt 0 ]; then
    apt-get update -qq
    apt-get install -y -qq "${need[@]}" >/dev/null
fi
rustup target list --installed | grep -qx "$TARGET" || rustup target add "$TARGET"

BINFMT=/proc/sys/fs/binfmt_misc
[ -e "$BINFMT/register" ] || mount -t binfmt_misc binfmt_misc "$BINFMT"
if [ ! -e "$BINFMT/qemu-aarch64" ]; then
    # An ELF header of a 64-bit little-endian ARM executable; F: qemu is
    # opened now, so it is found inside any later mount namespace too.
    magic='\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00'
    mask='\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff'
    echo ":qemu-aarch64:M::$magic:$mask:$(command -v qemu-aarch64-static):F" >"$BINFMT/register"
fi

export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc
export QEMU_LD_PREFIX=$SYSROOT
# bsp-bsplib's C tests compile their programs with $CC.
export CC=aarch64-linux-gnu-gcc
export CARGO_TARGET_DIR=target/aarch64
cargo test --release --target "$TARGET" --workspace --no-run
taskset -c 0 cargo test --release --target "$TARGET" --workspace
rm -rf target/aarch64
