#!/usr/bin/env bash
# Runs every cargo-fuzz target (`make fuzz`): 10 million executions or 30 minutes each.
# Needs: a nightly toolchain (rustup toolchain install nightly) and cargo-fuzz
# (cargo install cargo-fuzz --locked); both are installed here when missing.
# Corpora grow in fuzz/corpus/<target> (git-ignored), seeded from fuzz/seeds/<target>;
# a crash leaves its input in fuzz/artifacts/<target> and makes this script fail.
set -euo pipefail
cd "$(dirname "$0")/.."

# Each target runs FUZZ_RUNS executions (default 10 million) or FUZZ_SECONDS (default 30 min),
# whichever comes first.
FUZZ_SECONDS="${FUZZ_SECONDS:-1800}"
FUZZ_RUNS="${FUZZ_RUNS:-10000000}"
TARGETS="${FUZZ_TARGETS:-wire_decode hello_reply connection_string compressed executor_reply}"

if ! rustup run nightly rustc --version >/dev/null 2>&1; then
    echo "fuzz: installing the nightly toolchain (cargo-fuzz needs it for -Zsanitizer)"
    rustup toolchain install nightly --profile minimal || {
        echo "fuzz: no nightly toolchain and none could be installed; cargo-fuzz needs one" >&2
        exit 2
    }
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "fuzz: installing cargo-fuzz"
    cargo install cargo-fuzz --locked
fi

status=0
for target in $TARGETS; do
    mkdir -p "fuzz/corpus/$target"
    echo "fuzz: $target for ${FUZZ_SECONDS}s"
    # -rss_limit_mb: the decoder must never buffer more than the frame size limit.
    if ! cargo +nightly fuzz run "$target" "fuzz/corpus/$target" "fuzz/seeds/$target" -- \
        -max_total_time="$FUZZ_SECONDS" -runs="$FUZZ_RUNS" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1; then
        echo "fuzz: $target FAILED (input in fuzz/artifacts/$target)"
        status=1
    fi
done
exit $status
