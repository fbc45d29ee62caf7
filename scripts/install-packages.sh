#!/usr/bin/env bash
# Installs the Debian packages the local cluster (operator/internal/localcluster) runs at run time, and only
# those that are missing, so that running it again costs nothing:
#   nftables  - the nft command that kube-proxy (nftables mode) programs Service rules with
#   iproute2  - ip: network namespaces, bridges, veth pairs and routes
#   procps    - sysctl: enables forwarding inside the cluster's namespace (never on the machine itself)
# kube-proxy clears conntrack entries over netlink, so the conntrack command is not needed.
set -euo pipefail

declare -A needed=([nft]=nftables [ip]=iproute2 [sysctl]=procps)

missing=()
for cmd in "${!needed[@]}"; do
  # Root's PATH may lack /usr/sbin under some sudo setups; look there too.
  if ! command -v "$cmd" >/dev/null 2>&1 && [[ ! -x /usr/sbin/$cmd && ! -x /sbin/$cmd ]]; then
    missing+=("${needed[$cmd]}")
  fi
done
if ((${#missing[@]} == 0)); then
  exit 0
fi

if [[ $(id -u) -ne 0 ]]; then
  echo "install-packages: missing ${missing[*]}; run this script as root (the local cluster needs root anyway)" >&2
  exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-packages: missing ${missing[*]} and no apt-get to install them: install them by hand" >&2
  exit 1
fi

echo "install-packages: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
# A fresh machine (CI) may have no package lists yet; update once, and only when installing.
apt-get update -qq >/dev/null
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
