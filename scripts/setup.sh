#!/usr/bin/env bash
# Installs every system package precisionprobe needs to build, test and run its main job.
# Idempotent: packages already present are skipped, so both README commands can call it every time.
set -euo pipefail

packages=(
  build-essential cmake pkg-config clang libclang-rt-14-dev
  sqlite3 libsqlite3-dev
  libcurl4-openssl-dev nlohmann-json3-dev libre2-dev libeigen3-dev
  googletest libgtest-dev
  prometheus victoria-metrics
  python3 python3-pytest python3-torch python3-numpy python3-matplotlib python3-pandas
  python3-nbconvert python3-ipykernel jupyter-nbconvert
  # the wheel, offline (scripts/build_wheel.sh) and its test's venv; the Debian package (CPack
  # runs dpkg-shlibdeps and file on the module)
  python3-pip python3-setuptools python3-wheel python3-venv dpkg-dev file
)

# One dpkg-query for all of them (every script runs this first; one query per package took 1.5 s
# on a busy 2-core machine). Packages dpkg does not know are missing from its answer.
status=$'\n'$(dpkg-query -W -f='${Package} ${Status}\n' "${packages[@]}" 2>/dev/null || true)$'\n'
missing=()
for p in "${packages[@]}"; do
  [[ $status == *$'\n'"$p install ok installed"$'\n'* ]] || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "setup: installing ${missing[*]}" >&2
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
# Never start the Debian services (prometheus, victoria-metrics) on install: tests start their own
# instances on free loopback ports with temporary storage.
if [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\nexit 101\n' | "${sudo_cmd[@]}" tee /usr/sbin/policy-rc.d >/dev/null
  "${sudo_cmd[@]}" chmod +x /usr/sbin/policy-rc.d
  remove_policy=1
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
if [ "${remove_policy:-0}" = 1 ]; then "${sudo_cmd[@]}" rm -f /usr/sbin/policy-rc.d; fi
