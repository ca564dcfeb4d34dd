#!/usr/bin/env bash
# A one-node Kubernetes 1.20.2 for the project's tests, built from Debian's own packages (no
# prebuilt Kubernetes can be had on the test machines). Bash, because every step drives other
# programs (apt, go, openssl, containerd, iptables).
#
#   scripts/test-cluster.sh build    fetch Debian's source package and build the binaries (cached)
#   scripts/test-cluster.sh up       start etcd, the control plane, containerd, a kubelet and the
#                                    volume provisioner
#   scripts/test-cluster.sh down     stop all of it and undo what it changed on the machine
#   scripts/test-cluster.sh status   what is running, and whether the API and the node are ready
#
# Faults, for tests (on a running cluster):
#   scripts/test-cluster.sh kill COMPONENT     SIGKILL one of: etcd kube-apiserver
#                                              kube-controller-manager kube-scheduler provisioner
#                                              containerd kubelet
#   scripts/test-cluster.sh start COMPONENT    start it again with up's flags; returns once ready
#   scripts/test-cluster.sh kill-container ID  SIGKILL a container's task through containerd
#
#   scripts/test-cluster.sh images   build and import the local images into a running cluster
#                                    (`up` does it; for a cluster started before one was added)
#
# Binaries are cached in ${DEVBOX_CACHE_DIR:-~/.cache/devbox-controller}/kubernetes-1.20.2 (like
# the editor cache); a running cluster lives in ${DEVBOX_TEST_CLUSTER_DIR:-/tmp/devbox-test-cluster}.
# See docs/kubernetes-test-cluster.md. Needs root (containerd, runc, the kubelet, iptables).
set -euo pipefail

K8S_VERSION=1.20.2
CACHE_DIR="${DEVBOX_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/devbox-controller}/kubernetes-$K8S_VERSION"
BIN_DIR="$CACHE_DIR/bin"
SRC_ROOT="$CACHE_DIR/src"
RUN_DIR="${DEVBOX_TEST_CLUSTER_DIR:-/tmp/devbox-test-cluster}"
BINARIES=(kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl)
# Bumped whenever the way the binaries are built changes, so a cache from an older recipe is rebuilt.
BUILD_RECIPE=1

# Addresses and ports: everything on loopback except the pods' bridge, which is the cluster's
# own, on a private subnet that exists only on this machine. The API server and the kubelet
# listen on the bridge's address (HOST_IP): the machine reaches it, and so do Pods (a controller
# run in the cluster), which cannot reach loopback, nor the `kubernetes` Service's ClusterIP
# without a kube-proxy.
ETCD_PORT=${DEVBOX_K8S_ETCD_PORT:-23790}
API_PORT=${DEVBOX_K8S_API_PORT:-16443}
CM_PORT=${DEVBOX_K8S_CM_PORT:-10357}
SCHED_PORT=${DEVBOX_K8S_SCHED_PORT:-10359}
KUBELET_PORT=${DEVBOX_K8S_KUBELET_PORT:-10350}
KUBELET_HEALTHZ_PORT=${DEVBOX_K8S_KUBELET_HEALTHZ_PORT:-10348}
POD_SUBNET_PREFIX=${DEVBOX_K8S_POD_SUBNET_PREFIX:-10.233.77}   # a /24
SERVICE_RANGE=${DEVBOX_K8S_SERVICE_RANGE:-10.233.78.0/24}
BRIDGE=devboxk8s0
HOST_IP="$POD_SUBNET_PREFIX.1"
NODE_NAME=devbox-node
PAUSE_IMAGE=devbox.local/pause:1
BUSYBOX_IMAGE=devbox.local/busybox:1
TOOLCHAIN_IMAGE=devbox.local/toolchain:1
STORAGE_CLASS=devbox-local
# The volume provisioner is plain JavaScript: the project's Node.js when installed, else the machine's.
REPO_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PROVISIONER="$REPO_DIR/scripts/test-cluster-provisioner.mjs"

# What the kubelet (and the CNI bridge plugin, which turns on forwarding) change on the machine,
# saved by `up` and put back by `down` in this order: writing ip_forward resets every interface's
# forwarding, and turning forwarding on had turned accept_redirects off.
SYSCTLS=(vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops
  kernel.keys.root_maxkeys kernel.keys.root_maxbytes net.ipv4.ip_forward
  net.ipv4.conf.all.forwarding net.ipv4.conf.default.forwarding
  net.ipv4.conf.all.accept_redirects net.ipv4.conf.default.accept_redirects)
# Folders the kubelet and containerd create at fixed places whatever their flags say; `down`
# removes those that did not exist before `up`.
FIXED_DIRS=(/var/lib/kubelet /var/log/pods /var/log/containers /var/lib/cni /run/containerd /opt/containerd)

log() { echo "[test-cluster] $*" >&2; }
die() { log "error: $*"; exit 1; }
need_root() { [ "$(id -u)" = 0 ] || die "$1 needs root (containerd, runc and the kubelet run as root)"; }

# ---------------------------------------------------------------------------------------------
# build
# ---------------------------------------------------------------------------------------------

# Debian packages the build and the cluster use, installed only when missing (Kubernetes' build
# copies its outputs with rsync).
PACKAGES=(golang-go golang-github-modern-go-reflect2-dev dpkg-dev etcd-server containerd runc
  containernetworking-plugins busybox-static openssl iptables iproute2 curl rsync)

install_packages() {
  local missing=() p
  for p in "${PACKAGES[@]}"; do
    [ "$(dpkg-query -W -f '${Status}' "$p" 2>/dev/null)" = "install ok installed" ] || missing+=("$p")
  done
  [ "${#missing[@]}" = 0 ] && return
  need_root "installing ${missing[*]}"
  log "installing Debian packages: ${missing[*]}"
  # Installing containerd must not start the machine's own containerd: where there is no init
  # system (as on the test machines) nothing starts; elsewhere policy-rc.d decides, as always.
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" </dev/null \
    || { apt-get update -q </dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" </dev/null; }
}

# `deb-src` lines for Debian's bookworm archive, derived from the machine's own `deb` lines
# (one-line and deb822 formats), so the source comes from the same mirror the machine uses.
debian_src_lines() {
  local f
  {
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
      [ -f "$f" ] || continue
      # deb [options] uri suite components...
      sed -n 's/^[[:space:]]*deb[[:space:]]\+/deb-src /p' "$f"
    done
    for f in /etc/apt/sources.list.d/*.sources; do
      [ -f "$f" ] || continue
      # One stanza per blank-line-separated block; only the fields a source line needs.
      awk '
        function flush() {
          if (types ~ /(^| )deb( |$)/ && uris != "" && (enabled == "" || enabled == "yes")) {
            n = split(uris, u, " "); m = split(suites, s, " ")
            opt = (signed != "") ? "[signed-by=" signed "] " : ""
            for (i = 1; i <= n; i++) for (j = 1; j <= m; j++) print "deb-src " opt u[i] " " s[j] " " comps
          }
          types = uris = suites = comps = signed = enabled = ""
        }
        /^[[:space:]]*#/ { next }
        /^[[:space:]]*$/ { flush(); next }
        { key = tolower($1); sub(/:$/, "", key); $1 = ""; sub(/^ +/, "") }
        key == "types" { types = $0 } key == "uris" { uris = $0 } key == "suites" { suites = $0 }
        key == "components" { comps = $0 } key == "signed-by" { signed = $0 } key == "enabled" { enabled = $0 }
        END { flush() }
      ' "$f"
    done
  } | awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^bookworm(-updates|-security)?$/) { print; next } }' | sort -u
}

# Debian's kubernetes source package, unpacked (with Debian's patches) into $SRC_ROOT. The apt
# configuration is private (its own source list and lists folder; no package caches written), so
# the machine's apt sources and state stay as they were.
fetch_source() {
  if [ -n "$(find_source_tree)" ]; then return; fi
  local apt_dir="$CACHE_DIR/apt"
  rm -rf "$apt_dir" "$SRC_ROOT"
  mkdir -p "$apt_dir/lists/partial" "$SRC_ROOT"
  debian_src_lines >"$apt_dir/sources.list"
  [ -s "$apt_dir/sources.list" ] || die "found no Debian bookworm 'deb' line in /etc/apt to derive a 'deb-src' line from"
  log "fetching Debian's kubernetes source package from:"; sed 's/^/    /' "$apt_dir/sources.list" >&2
  local opts=(-o "Dir::Etc::SourceList=$apt_dir/sources.list" -o Dir::Etc::SourceParts=/dev/null
    -o "Dir::State::Lists=$apt_dir/lists" -o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache=)
  apt-get "${opts[@]}" -q update </dev/null >"$apt_dir/update.log" 2>&1 \
    || { tail -n 20 "$apt_dir/update.log" >&2; die "apt-get update with the private source list failed"; }
  (cd "$SRC_ROOT" && apt-get "${opts[@]}" -q source --download-only "kubernetes" </dev/null >"$apt_dir/source.log" 2>&1) \
    || { tail -n 20 "$apt_dir/source.log" >&2; die "apt-get source kubernetes failed"; }
  local dsc; dsc=$(ls "$SRC_ROOT"/kubernetes_*.dsc)
  case "$dsc" in *"$K8S_VERSION"*) ;; *) die "expected kubernetes $K8S_VERSION, found $(basename "$dsc")";; esac
  (cd "$SRC_ROOT" && dpkg-source -x "$dsc" >"$apt_dir/unpack.log" 2>&1) \
    || { tail -n 20 "$apt_dir/unpack.log" >&2; die "dpkg-source could not unpack $dsc"; }
  rm -f "$SRC_ROOT"/*.tar.* "$SRC_ROOT"/*.dsc   # the unpacked tree is all that is needed
}

find_source_tree() { ls -d "$SRC_ROOT"/kubernetes-*/ 2>/dev/null | head -n 1 | sed 's:/$::'; }

# The vendored reflect2 v1.0.1 crashes the apiserver under Go >= 1.18 on the first
# custom-resource write (fatal error: fault in runtime.mapiterinit from json-iterator); Debian's
# reflect2 1.0.2 is a drop-in replacement.
REFLECT2_SRC=/usr/share/gocode/src/github.com/modern-go/reflect2
patch_reflect2() {
  local tree=$1 dest="$1/vendor/github.com/modern-go/reflect2"
  [ -d "$REFLECT2_SRC" ] || die "$REFLECT2_SRC is missing (package golang-github-modern-go-reflect2-dev)"
  rm -rf "$dest"; mkdir -p "$dest"
  cp -r "$REFLECT2_SRC"/. "$dest"/
  rm -f "$dest/go.mod" "$dest/go.sum"
  find "$dest" -name '*_test.go' -delete
  rm -rf "$dest/test" "$dest/test15"
}

build_stamp() {
  local reflect2_version go_version
  reflect2_version=$(dpkg-query -W -f '${Version}' golang-github-modern-go-reflect2-dev 2>/dev/null || echo none)
  go_version=$(go version 2>/dev/null || echo none)
  echo "kubernetes=$K8S_VERSION recipe=$BUILD_RECIPE reflect2=$reflect2_version go=[$go_version] binaries=${BINARIES[*]}"
}

cmd_build() {
  install_packages
  local stamp; stamp=$(build_stamp)
  if [ -f "$BIN_DIR/.stamp" ] && [ "$(cat "$BIN_DIR/.stamp")" = "$stamp" ] && all_binaries_present; then
    log "binaries are up to date in $BIN_DIR"; return
  fi
  local started=$SECONDS
  fetch_source
  local tree; tree=$(find_source_tree)
  patch_reflect2 "$tree"
  # The build wants the tree at k8s.io/kubernetes inside a GOPATH; keep that GOPATH in the tree.
  mkdir -p "$tree/_gopath/src/k8s.io"
  ln -sfn ../../.. "$tree/_gopath/src/k8s.io/kubernetes"   # as debian/rules does
  # A failed build can leave empty outputs that make takes as done. Go's build cache
  # (_output/local/go/cache, where Kubernetes' scripts put it) stays, so a rebuild is faster.
  rm -rf "$tree/_output/bin" "$tree/_output/local/bin"
  local what="" b
  for b in "${BINARIES[@]}"; do what+="cmd/$b "; done
  log "building ${BINARIES[*]} with $(go version | cut -d' ' -f3) (about 7 min on 2 cores, cold); log in $CACHE_DIR/build.log"
  # GOPROXY=off: everything is vendored, and nothing may be fetched. CGO_ENABLED=0: static
  # binaries. The version is stamped by hand: the unpacked source has no git history.
  (
    cd "$tree"
    export GOPATH="$tree/_gopath" GOPROXY=off GOFLAGS='' CGO_ENABLED=0
    export KUBE_GIT_VERSION="v$K8S_VERSION" KUBE_GIT_TREE_STATE=clean KUBE_GIT_MAJOR=1 KUBE_GIT_MINOR=20
    make WHAT="${what% }"
  ) >"$CACHE_DIR/build.log" 2>&1 || { tail -n 30 "$CACHE_DIR/build.log" >&2; die "the build failed (see $CACHE_DIR/build.log)"; }
  mkdir -p "$BIN_DIR"
  for b in "${BINARIES[@]}"; do
    cp "$tree/_output/bin/$b" "$BIN_DIR/$b.new" && mv "$BIN_DIR/$b.new" "$BIN_DIR/$b"
  done
  echo "$stamp" >"$BIN_DIR/.stamp"
  log "built in $((SECONDS - started)) s: $BIN_DIR"
}

all_binaries_present() {
  local b
  for b in "${BINARIES[@]}"; do [ -x "$BIN_DIR/$b" ] || return 1; done
}

# ---------------------------------------------------------------------------------------------
# up
# ---------------------------------------------------------------------------------------------

# Every daemon is started in its own session (so it outlives the shell that ran `up` or `start`),
# appends to $RUN_DIR/logs/NAME.log (a restarted one after a line that says so), and its pid goes
# to $RUN_DIR/pids/NAME.pid with the executable's path beside it: `down` and `kill` reach exactly
# those processes, never anything found by name.
start_daemon() {
  local name=$1; shift
  local exe pid i
  exe=$(readlink -f "$(command -v "$1")")
  if [ -s "$RUN_DIR/logs/$name.log" ]; then
    echo "----- $(date -u +%Y-%m-%dT%H:%M:%SZ) test-cluster.sh: $name started again -----" >>"$RUN_DIR/logs/$name.log"
  fi
  setsid "$@" </dev/null >>"$RUN_DIR/logs/$name.log" 2>&1 &
  pid=$!
  echo "$pid" >"$RUN_DIR/pids/$name.pid"
  echo "$exe" >"$RUN_DIR/pids/$name.exe"
  # setsid execs the program in the same process (this shell has no job control, so the child
  # is not a group leader and setsid need not fork): wait for that exec so the pid is checkable.
  for ((i = 0; i < 50; i++)); do [ "$(readlink -f "/proc/$pid/exe" 2>/dev/null)" = "$exe" ] && return; sleep 0.1; done
  tail -n 20 "$RUN_DIR/logs/$name.log" >&2
  die "$name did not start (log: $RUN_DIR/logs/$name.log)"
}

# The pid in NAME.pid if that process is still the program that was started.
daemon_pid() {
  local name=$1 pid exe
  [ -f "$RUN_DIR/pids/$name.pid" ] || return 1
  pid=$(cat "$RUN_DIR/pids/$name.pid"); exe=$(cat "$RUN_DIR/pids/$name.exe" 2>/dev/null || true)
  [ -n "$pid" ] && [ "$(readlink -f "/proc/$pid/exe" 2>/dev/null)" = "$exe" ] || return 1
  echo "$pid"
}

# Waits until a command succeeds; dies with the daemon's log when it does not in time.
wait_for() {
  local what=$1 seconds=$2 logname=$3; shift 3
  local deadline=$((SECONDS + seconds))
  until "$@" >/dev/null 2>&1; do
    if ! daemon_pid "$logname" >/dev/null; then
      tail -n 25 "$RUN_DIR/logs/$logname.log" >&2
      die "$logname exited while waiting for $what (log: $RUN_DIR/logs/$logname.log)"
    elif [ "$SECONDS" -ge "$deadline" ]; then
      tail -n 25 "$RUN_DIR/logs/$logname.log" >&2
      die "$what did not happen within $seconds s (log: $RUN_DIR/logs/$logname.log)"
    fi
    sleep 0.5
  done
}

api_get() { curl -sf --cacert "$RUN_DIR/pki/ca.crt" -H "Authorization: Bearer $(cat "$RUN_DIR/pki/admin.token")" "https://$HOST_IP:$API_PORT$1"; }
kubectl_() { "$BIN_DIR/kubectl" --kubeconfig "$RUN_DIR/kubeconfig" "$@"; }
ctr_() { ctr -a "$RUN_DIR/containerd/containerd.sock" -n k8s.io "$@"; }

# A CA, the apiserver's serving certificate (for the bridge's address, 127.0.0.1, localhost and
# the `kubernetes` Service's names and ClusterIP), the service-account
# signing key, and one bearer token per client in a static token file (a test cluster: no client
# certificates to rotate).
make_pki() {
  local pki="$RUN_DIR/pki"
  mkdir -p "$pki"; chmod 700 "$pki"
  openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj "/CN=devbox-test-cluster-ca" \
    -keyout "$pki/ca.key" -out "$pki/ca.crt" 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -subj "/CN=kube-apiserver" \
    -keyout "$pki/apiserver.key" -out "$pki/apiserver.csr" 2>/dev/null
  printf 'subjectAltName=IP:%s,IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,IP:%s\n' \
    "$HOST_IP" "${SERVICE_RANGE%.*}.1" >"$pki/apiserver.ext"
  openssl x509 -req -in "$pki/apiserver.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial \
    -days 30 -extfile "$pki/apiserver.ext" -out "$pki/apiserver.crt" 2>/dev/null
  openssl genrsa -out "$pki/sa.key" 2048 2>/dev/null
  openssl rsa -in "$pki/sa.key" -pubout -out "$pki/sa.pub" 2>/dev/null
  local who token
  : >"$pki/tokens.csv"
  # name, user, groups. The controller-manager and the scheduler get the users that Kubernetes'
  # default RBAC bindings name; the admin (tests, kubectl) and the kubelet are cluster admins.
  for who in "admin admin system:masters" \
             "kubelet system:node:$NODE_NAME system:nodes,system:masters" \
             "controller-manager system:kube-controller-manager -" \
             "scheduler system:kube-scheduler -"; do
    set -- $who
    token=$(openssl rand -hex 24)
    echo "$token" >"$pki/$1.token"
    if [ "$3" = - ]; then echo "$token,$2,$2" >>"$pki/tokens.csv"
    else echo "$token,$2,$2,\"$3\"" >>"$pki/tokens.csv"; fi
    write_kubeconfig "$RUN_DIR/$1.kubeconfig" "$token"
  done
  mv "$RUN_DIR/admin.kubeconfig" "$RUN_DIR/kubeconfig"
}

write_kubeconfig() {
  cat >"$1" <<KUBECONFIG
apiVersion: v1
kind: Config
clusters:
- name: devbox-test
  cluster:
    server: https://$HOST_IP:$API_PORT
    certificate-authority: $RUN_DIR/pki/ca.crt
users:
- name: devbox-test
  user:
    token: $2
contexts:
- name: devbox-test
  context: {cluster: devbox-test, user: devbox-test}
current-context: devbox-test
KUBECONFIG
  chmod 600 "$1"
}

# containerd with its own root, state and socket. The changes from `containerd config default`
# that this machine kind needs: restrict_oom_score_adj (runc cannot lower oom_score_adj without
# CAP_SYS_RESOURCE, which a VM's root may lack: every sandbox failed without it), no AppArmor,
# cgroupfs, network namespaces under the state folder, the local pause image, and the cluster's
# own CNI config folder.
write_containerd_config() {
  local c="$RUN_DIR/containerd"
  mkdir -p "$c/root" "$c/state" "$c/opt"
  cat >"$c/config.toml" <<TOML
version = 2
root = "$c/root"
state = "$c/state"
[grpc]
  address = "$c/containerd.sock"
[ttrpc]
  address = "$c/containerd.sock.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "$c/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  restrict_oom_score_adj = true
  disable_apparmor = true
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$RUN_DIR/cni/net.d"
TOML
}

# The pods' network: a bridge of the cluster's own with a private /24 that exists only on this
# machine. No masquerading and no default route in the pods: they reach each other and this
# machine (the bridge's address), nothing beyond. IP allocations are kept in the run folder.
write_cni_config() {
  mkdir -p "$RUN_DIR/cni/net.d" "$RUN_DIR/cni/ipam"
  cat >"$RUN_DIR/cni/net.d/10-devbox.conflist" <<JSON
{
  "cniVersion": "0.4.0",
  "name": "devbox-test",
  "plugins": [{
    "type": "bridge",
    "bridge": "$BRIDGE",
    "isGateway": true,
    "ipMasq": false,
    "hairpinMode": true,
    "ipam": {
      "type": "host-local",
      "dataDir": "$RUN_DIR/cni/ipam",
      "ranges": [[{"subnet": "$POD_SUBNET_PREFIX.0/24", "gateway": "$POD_SUBNET_PREFIX.1"}]]
    }
  }]
}
JSON
}

# Three images without a registry: a busybox-static root file system as one layer, the same
# layer as the pause image (a static binary that sleeps forever is all a sandbox needs), and a
# "toolchain" image, the busybox layer and a second one with a marker program
# (/opt/toolchain/bin/toolchain-hello, on the image's PATH), for an editor that runs in a
# repository's own image (devcontainer.json's `image`). Written as one OCI image layout by hand
# and imported with ctr.
build_images() {
  local work="$RUN_DIR/images" rootfs="$RUN_DIR/images/rootfs" layout="$RUN_DIR/images/layout"
  rm -rf "$work"; mkdir -p "$rootfs/bin" "$rootfs"/{etc,tmp,proc,sys,dev,root} "$layout/blobs/sha256"
  cp /bin/busybox "$rootfs/bin/busybox"
  local applet
  for applet in $(/bin/busybox --list); do [ "$applet" = busybox ] || ln -s busybox "$rootfs/bin/$applet"; done
  chmod 1777 "$rootfs/tmp"
  echo 'root:x:0:0:root:/root:/bin/sh' >"$rootfs/etc/passwd"
  echo 'root:x:0:' >"$rootfs/etc/group"
  local tools="$work/toolchain"
  mkdir -p "$tools/opt/toolchain/bin"
  printf '#!/bin/sh\necho "toolchain-hello: the repository'"'"'s own toolchain"\n' >"$tools/opt/toolchain/bin/toolchain-hello"
  chmod 755 "$tools/opt/toolchain/bin/toolchain-hello"
  local base tool
  base=$(image_layer "$rootfs" "$work/base" "$layout")
  tool=$(image_layer "$tools" "$work/tool" "$layout")
  local path='PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
  local index_entries=""
  index_entries+=$(image_entry "$BUSYBOX_IMAGE" '["/bin/sh"]' "$path" "$work" "$layout" "$base")
  index_entries+=,$(image_entry "$PAUSE_IMAGE" '["/bin/sleep","2147483647"]' "$path" "$work" "$layout" "$base")
  index_entries+=,$(image_entry "$TOOLCHAIN_IMAGE" '["/bin/sh"]' "PATH=/opt/toolchain/bin:${path#PATH=}" "$work" "$layout" "$base" "$tool")
  echo '{"imageLayoutVersion":"1.0.0"}' >"$layout/oci-layout"
  echo "{\"schemaVersion\":2,\"manifests\":[$index_entries]}" >"$layout/index.json"
  tar -C "$layout" -cf "$work/images.tar" .
  rm -rf "$rootfs" "$tools" "$layout"
}

# One layer of FOLDER into the layout: prints "diff_id digest size" (the uncompressed tar's
# sha256, then the gzipped blob's). Reproducible bytes, so the digests only change when the
# content does.
image_layer() {
  local folder=$1 out=$2 layout=$3
  tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$folder" -cf "$out.tar" .
  local diff_id; diff_id=$(sha256sum "$out.tar" | cut -d' ' -f1)
  gzip -n -c "$out.tar" >"$out.tar.gz"
  rm -f "$out.tar"
  echo "$diff_id $(blob "$out.tar.gz" "$layout")"
}

# The index entry of image NAME (its config and manifest written into the layout), with command
# CMD, the one variable ENV, and the LAYERS ("diff_id digest size" each) in order.
image_entry() {
  local name=$1 cmd=$2 env=$3 work=$4 layout=$5; shift 5
  local diff_ids="" layers="" layer
  for layer in "$@"; do
    set -- $layer
    diff_ids+="${diff_ids:+,}\"sha256:$1\""
    layers+="${layers:+,}{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar+gzip\",\"digest\":\"sha256:$2\",\"size\":$3}"
  done
  printf '{"architecture":"amd64","os":"linux","config":{"Env":["%s"],"Cmd":%s},"rootfs":{"type":"layers","diff_ids":[%s]}}' \
    "$env" "$cmd" "$diff_ids" >"$work/config.json"
  local config; config=$(blob "$work/config.json" "$layout")
  printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[%s]}' \
    "${config% *}" "${config#* }" "$layers" >"$work/manifest.json"
  local manifest; manifest=$(blob "$work/manifest.json" "$layout")
  printf '{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"platform":{"architecture":"amd64","os":"linux"},"annotations":{"io.containerd.image.name":"%s","org.opencontainers.image.ref.name":"%s"}}' \
    "${manifest% *}" "${manifest#* }" "$name" "${name##*:}"
}

# The local images, built and imported into the cluster's containerd (again: an import of an
# image already there changes nothing).
import_images() {
  build_images
  ctr_ images import "$RUN_DIR/images/images.tar" >"$RUN_DIR/logs/image-import.log" 2>&1 \
    || { cat "$RUN_DIR/logs/image-import.log" >&2; die "ctr could not import the local images"; }
}

# `images`: the local images imported into a running cluster (one started before an image was added).
cmd_images() {
  need_root images; need_cluster
  daemon_pid containerd >/dev/null || die "containerd is not running"
  import_images
  log "images imported: $BUSYBOX_IMAGE, $PAUSE_IMAGE, $TOOLCHAIN_IMAGE"
}

# Copies a file into the layout's blobs; prints "sha256hex size".
blob() {
  local digest size
  digest=$(sha256sum "$1" | cut -d' ' -f1); size=$(stat -c %s "$1")
  cp "$1" "$2/blobs/sha256/$digest"
  echo "$digest $size"
}

# What `down` must put back: sysctl values, and which fixed folders and iptables chains already
# existed (those are left alone).
save_machine_state() {
  local s d
  : >"$RUN_DIR/saved-sysctls"
  for s in "${SYSCTLS[@]}"; do echo "$s=$(sysctl -n "$s")" >>"$RUN_DIR/saved-sysctls"; done
  : >"$RUN_DIR/preexisting-dirs"
  for d in "${FIXED_DIRS[@]}"; do [ -e "$d" ] && echo "$d" >>"$RUN_DIR/preexisting-dirs"; done
  kube_chains >"$RUN_DIR/preexisting-chains" || true
  ls -d /sys/fs/cgroup/*/k8s.io >"$RUN_DIR/preexisting-cgroups" 2>/dev/null || true
}

# "tool table chain" for every KUBE-* chain in iptables and ip6tables.
kube_chains() {
  local tool table
  for tool in iptables ip6tables; do
    command -v "$tool" >/dev/null || continue
    for table in filter nat mangle; do
      "$tool" -t "$table" -S 2>/dev/null | awk -v t="$tool" -v tb="$table" '$1 == "-N" && $2 ~ /^KUBE-/ { print t, tb, $2 }'
    done
  done
}

cmd_up() {
  need_root up
  all_binaries_present || die "no binaries in $BIN_DIR: run '$0 build' first"
  install_packages
  if daemon_pid kube-apiserver >/dev/null || daemon_pid kubelet >/dev/null; then
    log "already running in $RUN_DIR"; echo "$RUN_DIR/kubeconfig"; return
  fi
  [ ! -e "$RUN_DIR" ] || die "$RUN_DIR is left from an earlier cluster: run '$0 down' first"
  ! ip link show "$BRIDGE" >/dev/null 2>&1 || die "the interface $BRIDGE exists already: run '$0 down' first"
  if ip route show | grep -q "^$POD_SUBNET_PREFIX\."; then
    die "the pod subnet $POD_SUBNET_PREFIX.0/24 is already routed on this machine: set DEVBOX_K8S_POD_SUBNET_PREFIX"
  fi
  local started=$SECONDS
  trap 'log "up did not finish: \"$0 down\" stops what it started and restores the machine"' EXIT
  mkdir -p "$RUN_DIR"/{logs,pids,etcd,kubelet,kubelet-pki,volume-plugins}
  chmod 700 "$RUN_DIR"
  save_machine_state
  make_pki

  # The bridge is made first rather than by the CNI plugin on the first pod so that the API
  # server and the kubelet can serve on its address: a machine-local address that is not loopback
  # (which Pods cannot reach, and the kubelet refuses as a node IP) and not the machine's
  # outward one.
  ip link add "$BRIDGE" type bridge
  echo "$BRIDGE" >"$RUN_DIR/created-bridge"
  ip addr add "$HOST_IP/24" dev "$BRIDGE"
  ip link set "$BRIDGE" up

  start_component etcd
  start_component kube-apiserver
  log "apiserver ready ($((SECONDS - started)) s)"
  start_component kube-controller-manager
  start_component kube-scheduler
  # Before any test can make a claim: one made before the default StorageClass exists would keep
  # no class and never bind.
  start_component provisioner

  write_containerd_config
  write_cni_config
  start_component containerd
  import_images
  log "containerd ready, images imported ($((SECONDS - started)) s)"

  start_component kubelet
  log "node $NODE_NAME Ready ($((SECONDS - started)) s)"
  # Pods cannot be created in a namespace before its default service account exists.
  wait_for "the default service account" 60 kube-controller-manager kubectl_ get serviceaccount default
  trap - EXIT
  log "up in $((SECONDS - started)) s; kubeconfig:"
  echo "$RUN_DIR/kubeconfig"
}

# ---------------------------------------------------------------------------------------------
# The components: one start function each, used by `up` and by `start`, with `up`'s flags
# ---------------------------------------------------------------------------------------------

# In the order `up` starts them.
COMPONENTS=(etcd kube-apiserver kube-controller-manager kube-scheduler provisioner containerd kubelet)

# Starts one component and waits until it is ready, or dies with its log.
start_component() {
  local name=$1 heartbeat log_size
  case "$name" in
    etcd)
      start_etcd
      wait_for "etcd's /health" 30 etcd etcd_healthy ;;
    kube-apiserver)
      start_apiserver
      wait_for "the apiserver's /readyz" 60 kube-apiserver api_get /readyz ;;
    kube-controller-manager)
      start_controller_manager
      wait_for "the controller-manager's /healthz" 30 kube-controller-manager serves_healthz "$CM_PORT" ;;
    kube-scheduler)
      start_scheduler
      wait_for "the scheduler's /healthz" 30 kube-scheduler serves_healthz "$SCHED_PORT" ;;
    provisioner)
      # Ready once it has made sure of its StorageClass and listed claims and volumes: its log
      # says so (the log is appended to across restarts, hence the offset).
      log_size=$(stat -c %s "$RUN_DIR/logs/provisioner.log" 2>/dev/null || echo 0)
      start_provisioner
      wait_for "the provisioner's StorageClass $STORAGE_CLASS and first list" 30 provisioner logged_since provisioner "$log_size" ' ready: ' ;;
    containerd)
      start_containerd
      wait_for "containerd's socket" 30 containerd ctr_ version ;;
    kubelet)
      # A restarted kubelet's node is still Ready from before (until the controller-manager's
      # grace period ends): wait for a status report from the new one.
      heartbeat=$(node_heartbeat)
      start_kubelet
      wait_for "node $NODE_NAME Ready, reported by this kubelet" 90 kubelet node_ready_since "$heartbeat" ;;
    *) die "no component '$name': one of ${COMPONENTS[*]}" ;;
  esac
}

start_etcd() {
  start_daemon etcd etcd --name devbox-test --data-dir "$RUN_DIR/etcd" \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$((ETCD_PORT + 1))" \
    --initial-advertise-peer-urls "http://127.0.0.1:$((ETCD_PORT + 1))" \
    --initial-cluster "devbox-test=http://127.0.0.1:$((ETCD_PORT + 1))"
}

# --kubelet-preferred-address-types: the node's hostname does not resolve, so the apiserver
# (logs, exec) must dial the node's IP. It serves on the bridge's address, and advertises it as
# the `kubernetes` Service's endpoint, so that Pods reach it too (a controller run in the cluster).
start_apiserver() {
  local pki="$RUN_DIR/pki"
  start_daemon kube-apiserver "$BIN_DIR/kube-apiserver" \
    --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
    --bind-address "$HOST_IP" --advertise-address "$HOST_IP" --secure-port "$API_PORT" \
    --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" \
    --token-auth-file "$pki/tokens.csv" --authorization-mode RBAC \
    --service-account-issuer https://kubernetes.default.svc \
    --service-account-key-file "$pki/sa.pub" --service-account-signing-key-file "$pki/sa.key" \
    --service-cluster-ip-range "$SERVICE_RANGE" \
    --kubelet-preferred-address-types InternalIP,Hostname \
    --allow-privileged=true --insecure-port 0 --profiling=false
}

# A node whose kubelet stops reporting is NotReady (and its Pods not Ready) after 16 s instead of
# 40 s, so a test of a lost node keeps its outage short. The kubelet's heartbeat is its node
# Lease, renewed every 4 s (start_kubelet): four missed renewals; checked every 2 s.
start_controller_manager() {
  local pki="$RUN_DIR/pki"
  start_daemon kube-controller-manager "$BIN_DIR/kube-controller-manager" \
    --kubeconfig "$RUN_DIR/controller-manager.kubeconfig" --leader-elect=false \
    --bind-address 127.0.0.1 --secure-port "$CM_PORT" --port 0 \
    --service-account-private-key-file "$pki/sa.key" --root-ca-file "$pki/ca.crt" \
    --use-service-account-credentials=true --service-cluster-ip-range "$SERVICE_RANGE" \
    --node-monitor-period 2s --node-monitor-grace-period 16s \
    --profiling=false
}

start_scheduler() {
  start_daemon kube-scheduler "$BIN_DIR/kube-scheduler" \
    --kubeconfig "$RUN_DIR/scheduler.kubeconfig" --leader-elect=false \
    --bind-address 127.0.0.1 --secure-port "$SCHED_PORT" --port 0 --profiling=false
}

# The dynamic volume provisioner (scripts/test-cluster-provisioner.mjs): a hostPath volume under
# $RUN_DIR/volumes for every claim of the default StorageClass, removed with its claim. The
# admin's kubeconfig: it creates StorageClasses and PersistentVolumes. NODE_OPTIONS is the
# caller's (a test runner's), not the provisioner's.
start_provisioner() {
  local node="$REPO_DIR/node_modules/.bin/node"
  [ -x "$node" ] || node=$(command -v node) || die "no Node.js for the volume provisioner: run 'npm install' or install nodejs"
  NODE_OPTIONS='' start_daemon provisioner "$node" "$PROVISIONER" \
    --kubeconfig "$RUN_DIR/kubeconfig" --volumes "$RUN_DIR/volumes"
}

# Its configuration is written by `up` (write_containerd_config); its images stay in its root.
start_containerd() {
  start_daemon containerd containerd --config "$RUN_DIR/containerd/config.toml"
}

# Anonymous, always-allowed kubelet API: tests only, and it listens on the bridge alone. The
# node registers NotReady and turns Ready at its next status report: every 4 s instead of 10.
# Its Lease lasts 16 s instead of 40, so it is renewed every 4 s instead of 10 (a quarter of it):
# the controller-manager's grace period (16 s) is then four renewals, and an API server outage of
# a few seconds (a fault test's) does not make the node NotReady. No flag sets the Lease in 1.20:
# a config file does (with webhook authentication off, as the flags' defaults have it).
start_kubelet() {
  local sock="unix://$RUN_DIR/containerd/containerd.sock"
  cat >"$RUN_DIR/kubelet-config.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
nodeLeaseDurationSeconds: 16
authentication:
  webhook:
    enabled: false
YAML
  start_daemon kubelet "$BIN_DIR/kubelet" --config "$RUN_DIR/kubelet-config.yaml" \
    --kubeconfig "$RUN_DIR/kubelet.kubeconfig" \
    --container-runtime remote --container-runtime-endpoint "$sock" --image-service-endpoint "$sock" \
    --pod-infra-container-image "$PAUSE_IMAGE" \
    --fail-swap-on=false --cgroup-driver cgroupfs --cgroups-per-qos=false --enforce-node-allocatable= \
    --hostname-override "$NODE_NAME" --node-ip "$HOST_IP" \
    --address "$HOST_IP" --port "$KUBELET_PORT" --read-only-port 0 \
    --healthz-bind-address 127.0.0.1 --healthz-port "$KUBELET_HEALTHZ_PORT" \
    --root-dir "$RUN_DIR/kubelet" --cert-dir "$RUN_DIR/kubelet-pki" \
    --volume-plugin-dir "$RUN_DIR/volume-plugins" --seccomp-profile-root "$RUN_DIR/kubelet/seccomp" \
    --anonymous-auth=true --authorization-mode AlwaysAllow \
    --image-gc-high-threshold 100 --image-gc-low-threshold 99 \
    --eviction-hard 'memory.available<100Mi,nodefs.available<2%,imagefs.available<2%' \
    --serialize-image-pulls=false --node-status-update-frequency 4s
}

etcd_healthy() { curl -sf "http://127.0.0.1:$ETCD_PORT/health" | grep -q '"health":"true"'; }
# The controller-manager's and the scheduler's serving certificates are their own, self-signed.
serves_healthz() { [ "$(curl -sfk "https://127.0.0.1:$1/healthz")" = ok ]; }
# Whether NAME's log has gained a line containing TEXT past byte OFFSET.
logged_since() { tail -c +"$(($2 + 1))" "$RUN_DIR/logs/$1.log" | grep -qF -- "$3"; }

node_ready() {
  [ "$(kubectl_ get node "$NODE_NAME" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ]
}

# The time of the node's last status report (empty before it registered).
node_heartbeat() {
  kubectl_ get node "$NODE_NAME" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].lastHeartbeatTime}' 2>/dev/null || true
}

# The kubelet answers its healthz, and the node is Ready by a status report other than BEFORE.
node_ready_since() {
  [ "$(curl -sf "http://127.0.0.1:$KUBELET_HEALTHZ_PORT/healthz")" = ok ] && node_ready \
    && [ "$(node_heartbeat)" != "$1" ]
}

# ---------------------------------------------------------------------------------------------
# down
# ---------------------------------------------------------------------------------------------

STOPPED_PIDS=()

# Whether a process still runs. A daemon whose starter has exited is reaped by init, which can
# take a moment: a zombie counts as stopped.
running() {
  local state
  state=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1) || return 1
  [ -n "$state" ] && [ "$state" != Z ]
}

# SIGTERM, then SIGKILL after a grace period, to the process in NAME.pid.
stop_daemon() {
  local name=$1 grace=${2:-15} pid i
  pid=$(daemon_pid "$name") || { rm -f "$RUN_DIR/pids/$name".*; return 0; }
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < grace * 10; i++)); do running "$pid" || break; sleep 0.1; done
  if running "$pid"; then log "$name did not stop in $grace s: SIGKILL"; kill -KILL "$pid" 2>/dev/null || true; sleep 0.2; fi
  rm -f "$RUN_DIR/pids/$name".*
  STOPPED_PIDS+=("$pid")
  log "stopped $name ($pid)"
}

cmd_down() {
  need_root down
  [ -d "$RUN_DIR" ] || { log "nothing to stop: no $RUN_DIR"; return 0; }
  [ -f "$RUN_DIR/saved-sysctls" ] || die "$RUN_DIR was not made by this script (no saved-sysctls): not touching it"

  # The provisioner before the API server it watches goes; its volumes are folders in the run
  # folder and go with it.
  stop_daemon provisioner
  # Pods first, while the kubelet runs, so it tears down their networks and volumes itself.
  if daemon_pid kube-apiserver >/dev/null && daemon_pid kubelet >/dev/null && [ -x "$BIN_DIR/kubectl" ]; then
    kubectl_ delete pods --all --all-namespaces --grace-period=0 --force --wait=false >/dev/null 2>&1 || true
    local deadline=$((SECONDS + 30))
    while [ "$SECONDS" -lt "$deadline" ] && [ -n "$(ctr_ tasks ls -q 2>/dev/null)" ]; do sleep 0.5; done
  fi
  stop_daemon kubelet
  # Whatever the kubelet left: containers' tasks end through containerd, which also ends their
  # shims (processes containerd started, so they are reached through it, not by name).
  if daemon_pid containerd >/dev/null; then
    local id
    for id in $(ctr_ tasks ls -q 2>/dev/null); do
      ctr_ tasks kill -s SIGKILL "$id" >/dev/null 2>&1 || true
    done
    sleep 0.5
    for id in $(ctr_ tasks ls -q 2>/dev/null); do ctr_ tasks delete -f "$id" >/dev/null 2>&1 || true; done
    for id in $(ctr_ containers ls -q 2>/dev/null); do ctr_ containers delete "$id" >/dev/null 2>&1 || true; done
  fi
  stop_daemon containerd
  stop_daemon kube-scheduler
  stop_daemon kube-controller-manager
  stop_daemon kube-apiserver
  stop_daemon etcd

  # Mounts under the cluster's folders (the kubelet's bind mount of its root onto itself, pods'
  # volumes, containers' root file systems, network namespaces), deepest first.
  # A mount point can be stacked (mounted twice), hence a few passes.
  local m
  for _ in 1 2 3; do
    [ -z "$(mounts_under)" ] && break
    mounts_under | sort -r | while read -r m; do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true; done
  done
  if [ -n "$(mounts_under)" ]; then
    mounts_under >&2
    die "these mounts would not go: nothing removed, run '$0 down' again or unmount them by hand"
  fi

  # The kubelet's iptables chains: rules that jump to them from the built-in chains, then the
  # chains themselves. Chains that existed before `up` belong to someone else and stay.
  local tool table chain rule d
  while read -r tool table chain; do
    grep -qx "$tool $table $chain" "$RUN_DIR/preexisting-chains" 2>/dev/null && continue
    "$tool" -t "$table" -S 2>/dev/null | { grep -E -- "^-A [A-Z]+ .*-j $chain( |\$)" || true; } | while read -r rule; do
      eval "\"$tool\" -t \"$table\" -D ${rule#-A }" 2>/dev/null || true
    done
  done < <(kube_chains)
  while read -r tool table chain; do
    grep -qx "$tool $table $chain" "$RUN_DIR/preexisting-chains" 2>/dev/null && continue
    "$tool" -t "$table" -F "$chain" 2>/dev/null || true
  done < <(kube_chains)
  while read -r tool table chain; do
    grep -qx "$tool $table $chain" "$RUN_DIR/preexisting-chains" 2>/dev/null && continue
    "$tool" -t "$table" -X "$chain" 2>/dev/null || log "could not delete $tool -t $table chain $chain"
  done < <(kube_chains)

  if [ -f "$RUN_DIR/created-bridge" ] && ip link show "$BRIDGE" >/dev/null 2>&1; then
    ip link delete "$BRIDGE"
  fi

  local line
  while IFS= read -r line; do sysctl -q -w "$line" >/dev/null || log "could not restore $line"; done <"$RUN_DIR/saved-sysctls"

  for d in "${FIXED_DIRS[@]}"; do
    grep -qx "$d" "$RUN_DIR/preexisting-dirs" 2>/dev/null || rm -rf --one-file-system "$d"
  done
  # containerd puts containers' cgroups (cgroupfs) under k8s.io in every hierarchy; runc removes
  # each container's own, the empty parent stays. rmdir only removes it when empty.
  for d in /sys/fs/cgroup/*/k8s.io; do
    [ -d "$d" ] || continue
    grep -qx "$d" "$RUN_DIR/preexisting-cgroups" 2>/dev/null || rmdir "$d" 2>/dev/null || log "cgroup $d is not empty: left"
  done
  # --one-file-system: even a mount that appeared meanwhile is never deleted through.
  rm -rf --one-file-system "$RUN_DIR"
  # Give init a moment to reap the stopped daemons, so that no trace of them is left on return.
  local pid i
  for pid in "${STOPPED_PIDS[@]}"; do
    for ((i = 0; i < 50; i++)); do [ -e "/proc/$pid" ] || break; sleep 0.1; done
  done
  log "down: processes stopped, machine state restored, $RUN_DIR removed"
}

# Mount points under the cluster's folders.
mounts_under() {
  local d
  for d in "$RUN_DIR" /run/containerd /var/lib/kubelet; do
    awk -v d="$d" '$5 == d || index($5, d "/") == 1 { print $5 }' /proc/self/mountinfo
  done
}

# ---------------------------------------------------------------------------------------------
# faults: kill a component as a crash would, start it again; kill a container as the OOM killer would
# ---------------------------------------------------------------------------------------------

# A running cluster made by `up`, or die.
need_cluster() {
  [ -f "$RUN_DIR/saved-sysctls" ] || die "no cluster made by '$0 up' in $RUN_DIR"
}

component_name() {
  local c
  for c in "${COMPONENTS[@]}"; do [ "$c" = "${1:-}" ] && return; done
  die "no component '${1:-}': one of ${COMPONENTS[*]}"
}

# SIGKILL: no shutdown, as a crash or the OOM killer. Returns once the process is gone.
cmd_kill() {
  need_root kill; need_cluster; component_name "${1:-}"
  local name=$1 pid i
  pid=$(daemon_pid "$name") || die "$name is not running"
  kill -KILL "$pid"
  for ((i = 0; i < 100; i++)); do running "$pid" || break; sleep 0.1; done
  running "$pid" && die "$name ($pid) is still there 10 s after SIGKILL"
  rm -f "$RUN_DIR/pids/$name".*
  log "killed $name ($pid) with SIGKILL"
}

# Starts one component again with `up`'s flags and returns once it is ready.
cmd_start() {
  need_root start; need_cluster; component_name "${1:-}"
  local name=$1 started=$SECONDS pid
  if pid=$(daemon_pid "$name"); then log "$name is already running ($pid)"; return; fi
  start_component "$name"
  log "started $name ($(daemon_pid "$name")), ready in $((SECONDS - started)) s"
}

# SIGKILL to a container's task through the cluster's containerd (an ID as in a pod's status,
# with or without its containerd:// prefix): the container ends with 137, as when the OOM killer
# ends it, and the kubelet sees it end.
cmd_kill_container() {
  need_root kill-container; need_cluster
  local id=${1:-}
  id=${id#containerd://}
  [[ "$id" =~ ^[0-9a-f]{64}$ ]] || die "kill-container needs a container ID (64 hex digits, as in a pod's status), not '${1:-}'"
  daemon_pid containerd >/dev/null || die "containerd is not running"
  ctr_ tasks kill -s SIGKILL "$id" >/dev/null || die "containerd has no running task for container $id"
  log "sent SIGKILL to container $id"
}

# ---------------------------------------------------------------------------------------------
# status
# ---------------------------------------------------------------------------------------------

cmd_status() {
  if [ ! -d "$RUN_DIR" ]; then echo "no cluster in $RUN_DIR"; return 3; fi
  local name pid rss
  for name in "${COMPONENTS[@]}"; do
    if pid=$(daemon_pid "$name"); then
      rss=$(awk '/^VmRSS/ { print int($2 / 1024) }' "/proc/$pid/status")
      printf '%-24s running  pid %-8s %s MB\n' "$name" "$pid" "$rss"
    else
      printf '%-24s stopped\n' "$name"
    fi
  done
  if [ -f "$RUN_DIR/pki/admin.token" ] && [ "$(api_get /readyz 2>/dev/null)" = ok ]; then
    echo "apiserver                ready    https://$HOST_IP:$API_PORT"
  else
    echo "apiserver                not ready"
  fi
  if [ -x "$BIN_DIR/kubectl" ] && node_ready; then echo "node $NODE_NAME         Ready"; else echo "node $NODE_NAME         not ready"; fi
  echo "volumes                  $(find "$RUN_DIR/volumes" -mindepth 1 -maxdepth 1 -type d 2>/dev/null | wc -l) in $RUN_DIR/volumes (StorageClass $STORAGE_CLASS)"
  echo "kubeconfig               $RUN_DIR/kubeconfig"
}

case "${1:-}" in
  build) cmd_build ;;
  up) cmd_up ;;
  down) cmd_down ;;
  status) cmd_status ;;
  kill) cmd_kill "${2:-}" ;;
  start) cmd_start "${2:-}" ;;
  kill-container) cmd_kill_container "${2:-}" ;;
  images) cmd_images ;;
  *) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
