#!/usr/bin/env bash
# `npm run test:kubernetes [-- [--keep] [vitest's arguments, e.g. a file]]`: the Kubernetes suite
# (test/kubernetes, vitest's project "kubernetes") against the real test cluster.
# - A cluster that already answers in $DEVBOX_TEST_CLUSTER_DIR is reused and left running.
# - Otherwise the cluster is built when its binaries are not cached (scripts/test-cluster.sh
#   build: 7 to 15 minutes cold, seconds when cached), started, and stopped again afterwards
#   however the run ends; `--keep` leaves it running for the next run.
# Needs root, as the cluster does. Bash, because it drives other programs (the cluster's
# script, vitest) and must stop what it started whatever happens in between.
set -euo pipefail

cd "$(dirname "$0")/.."
# The project's Node.js and vitest, as `npm run` finds them, also when this script is run directly.
PATH="$PWD/node_modules/.bin:$PATH"
run_dir=${DEVBOX_TEST_CLUSTER_DIR:-/tmp/devbox-test-cluster}

say() { echo "[test:kubernetes] $*" >&2; }

keep=0
vitest_args=()
for arg in "$@"; do
  if [ "$arg" = --keep ]; then keep=1; else vitest_args+=("$arg"); fi
done

if [ "$(id -u)" != 0 ]; then
  say "needs root: the test cluster's containerd, runc and kubelet run as root, and its kubeconfig is root's."
  say "Run it as root. Plain \`npm test\` runs without root and skips the Kubernetes suite when no cluster answers."
  exit 1
fi

# started: this run started the cluster, so it stops it. up_done: `up` finished (a half-started
# cluster is stopped even with --keep).
started=0 up_done=0 reused=0
finish() {
  local status=$?
  if [ "$started" = 1 ] && [ "$keep" = 1 ] && [ "$up_done" = 1 ]; then
    say "left the test cluster running (--keep): the next run reuses it; stop it with scripts/test-cluster.sh down"
  elif [ "$started" = 1 ]; then
    say "stopping the test cluster this run started (--keep leaves it running)"
    scripts/test-cluster.sh down || { say "scripts/test-cluster.sh down failed: run it again"; [ "$status" = 0 ] && status=1; }
  elif [ "$reused" = 1 ]; then
    say "the test cluster was running before this run: left running"
  fi
  exit "$status"
}
trap finish EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Whether a cluster runs in $run_dir and its API server answers.
cluster_answers() {
  local status
  status=$(scripts/test-cluster.sh status 2>/dev/null) || return 1
  grep -q '^apiserver[[:space:]]\+ready' <<<"$status"
}

if cluster_answers; then
  reused=1
  say "reusing the test cluster running in $run_dir"
elif [ -e "$run_dir" ]; then
  scripts/test-cluster.sh status >&2 || true
  say "$run_dir exists but its API server does not answer: a cluster still starting, or one left over."
  say "Wait for it, or stop it with scripts/test-cluster.sh down, then run this again."
  exit 1
else
  scripts/test-cluster.sh build
  started=1
  say "starting the test cluster in $run_dir"
  scripts/test-cluster.sh up >/dev/null   # its progress goes to stderr; stdout is the kubeconfig's path
  up_done=1
fi

# DEVBOX_REQUIRE_TEST_CLUSTER: the suite fails instead of skipping should the cluster not answer.
DEVBOX_REQUIRE_TEST_CLUSTER=1 vitest run --project kubernetes "${vitest_args[@]}"
