#!/usr/bin/env bash
# Runs tests many times under the race detector while a second go test loads
# the machine, so that a test depending on timing fails here rather than one
# CI run in a hundred. Usage: test/stress.sh COUNT PKG...
# Environment: STRESS_FLAGS (default -short: without the slow crash and
# end-to-end suites; set it empty to include them), STRESS_LOAD (the
# packages the loader tests, default the same packages).
set -euo pipefail
count=${1:?count}
shift
pkgs=("$@")
[ ${#pkgs[@]} -gt 0 ] || pkgs=(./...)
flags=${STRESS_FLAGS--short}
run=${STRESS_RUN:-.}
timeout=${STRESS_TIMEOUT:-60m}
read -r -a load <<<"${STRESS_LOAD:-${pkgs[*]}}"

# The loader: go test in a loop until the stress run ends.
(
	trap 'exit 0' TERM
	while :; do go test -race -short -count=1 "${load[@]}" >/dev/null 2>&1 || true; done
) &
loader=$!
trap 'kill -- -$loader 2>/dev/null || kill $loader 2>/dev/null || true; pkill -P $loader 2>/dev/null || true' EXIT

echo "stress: go test -race $flags -run '$run' -count=$count ${pkgs[*]} (loaded by a second go test)" >&2
# shellcheck disable=SC2086
go test -race $flags -run "$run" -count="$count" -timeout "$timeout" "${pkgs[@]}"
