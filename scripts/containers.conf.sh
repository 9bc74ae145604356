#!/usr/bin/env bash
# Writes podman's settings for machines like the build machines (rootful, hybrid
# cgroups, limits root may not raise) under the cache folder, and prints its path:
# runc (crun refuses hybrid cgroups), cgroupfs, file events, and default ulimits no
# higher than this shell's hard limits. Used as CONTAINERS_CONF by scripts/image and
# the image tests.
set -euo pipefail
folder="${XDG_CACHE_HOME:-$HOME/.cache}/agentprocess"
mkdir -p "$folder"
conf="$folder/containers.conf"
files=$(ulimit -Hn)
cat >"$conf.new" <<CONF
[containers]
default_ulimits = ["nofile=$files:$files", "nproc=32768:32768"]

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
CONF
mv "$conf.new" "$conf"
echo "$conf"
