#!/usr/bin/env bash
# Removes network namespaces left by operator/internal/localcluster when both the test process and its
# watchdog died without cleaning up (for example kill -9 of every process at once). Namespaces are named
# localcluster-<pid>-<random>; one whose creating pid is still alive belongs to a running cluster and is
# left alone. Usage: sudo scripts/localcluster-cleanup.sh [-n]   (-n: only list what would be removed)
set -euo pipefail
dry=false
[[ ${1:-} == -n ]] && dry=true
for ns in $(ip netns list | awk '{print $1}' | grep -E '^localcluster-[0-9]+-[0-9a-f]+(-.+)?$' || true); do
  pid=${ns#localcluster-}; pid=${pid%%-*}
  if kill -0 "$pid" 2>/dev/null; then
    echo "keep $ns (pid $pid alive)"
    continue
  fi
  echo "remove $ns"
  $dry && continue
  for p in $(ip netns pids "$ns"); do kill -9 "$p" 2>/dev/null || true; done
  ip netns delete "$ns"
done
