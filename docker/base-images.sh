#!/usr/bin/env bash
# Make local base images for a machine that reaches Debian's package mirror but no container registry.
#
#   docker/base-images.sh            # makes what is missing, prints the two image names
#
# Two images, tagged under gitmem-local/ so they never shadow the public ones:
#   gitmem-local/python:3.11-bookworm   Debian bookworm minbase, python3 in a venv at /opt/python
#                                       (so `python` and `pip` work as in python:3.11-slim-bookworm)
#   gitmem-local/redis:7-bookworm       the same base with Debian's redis-server
# Use them with the compose file through GITMEM_PYTHON_IMAGE and GITMEM_REDIS_IMAGE (docs/docker.md,
# "Run with Docker"). The root file system comes from debootstrap (installed with apt when
# missing), from the mirror in GITMEM_DEBIAN_MIRROR or the one this machine's apt uses. The
# certificate authorities this machine added (/usr/local/share/ca-certificates) are carried into
# the images, so pip and apt inside a build trust what the host trusts (an intercepting proxy).
set -euo pipefail
cd "$(dirname "$0")"

PYTHON_IMAGE=gitmem-local/python:3.11-bookworm
REDIS_IMAGE=gitmem-local/redis:7-bookworm
BASE_IMAGE=gitmem-local/debian:bookworm

have() { docker image inspect "$1" >/dev/null 2>&1; }
say() { echo "base-images: $*" >&2; }

mirror() {
    if [ -n "${GITMEM_DEBIAN_MIRROR:-}" ]; then echo "$GITMEM_DEBIAN_MIRROR"; return; fi
    # The first Debian archive apt is set up with (deb822 .sources or one-line .list), else the CDN.
    local found
    found=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '/^URIs:/ {print $2}' | grep -v security | head -n1 || true)
    if [ -z "$found" ]; then
        found=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null \
                | awk '$1 == "deb" && $0 !~ /security/ {for (i = 2; i <= NF; i++) if ($i ~ /^https?:/) {print $i; exit}}' || true)
    fi
    echo "${found:-http://deb.debian.org/debian}"
}

make_base() {
    have "$BASE_IMAGE" && return
    if ! command -v debootstrap >/dev/null 2>&1; then
        say "installing debootstrap"
        apt-get install -y -qq debootstrap >/dev/null 2>&1 \
            || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null; }
    fi
    local root url started
    root=$(mktemp -d /tmp/gitmem-rootfs.XXXXXX)
    trap 'rm -rf "$root"' RETURN
    url=$(mirror)
    started=$(date +%s)
    say "debootstrap bookworm (minbase) from $url"
    debootstrap --variant=minbase --include=ca-certificates bookworm "$root" "$url" >"$root.log" 2>&1 \
        || { tail -n 20 "$root.log" >&2; rm -f "$root.log"; return 1; }
    rm -f "$root.log"
    if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
        cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
        chroot "$root" update-ca-certificates >/dev/null 2>&1
    fi
    # What an image needs no copy of: downloaded packages, package lists (apt-get update fetches
    # them), documentation and translations (as Debian's own docker images leave them out).
    rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* \
           "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/info/* "$root"/usr/share/locale/*
    cat >"$root/etc/dpkg/dpkg.cfg.d/docker-slim" <<'EOF'
path-exclude /usr/share/doc/*
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
EOF
    # As in Debian's own images: apt keeps no downloaded packages or caches in an image's layers.
    cat >"$root/etc/apt/apt.conf.d/docker-clean" <<'EOF'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
Acquire::Languages "none";
Acquire::GzipIndexes "true";
EOF
    tar -C "$root" -c . | docker import -c 'ENV LANG=C.UTF-8' -c 'CMD ["bash"]' - "$BASE_IMAGE" >/dev/null
    say "$BASE_IMAGE made in $(( $(date +%s) - started )) s"
}

build() {  # build TAG, with a Dockerfile on standard input and an empty context
    local context status=0
    context=$(mktemp -d)
    docker build -t "$1" -f - "$context" >"$context.log" 2>&1 || status=$?
    [ "$status" = 0 ] || tail -n 30 "$context.log" >&2
    rm -rf "$context" "$context.log"
    return "$status"
}

if ! have "$PYTHON_IMAGE"; then
    make_base
    say "building $PYTHON_IMAGE"
    build "$PYTHON_IMAGE" <<EOF
FROM $BASE_IMAGE
RUN apt-get update \\
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3 python3-venv \\
 && rm -rf /var/lib/apt/lists/* \\
 && python3 -m venv /opt/python \\
 && /opt/python/bin/pip install -q --no-cache-dir --upgrade pip \\
 && find /opt/python /usr/lib/python3* -name __pycache__ -prune -exec rm -rf {} +
ENV PATH=/opt/python/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
CMD ["python"]
EOF
fi

if ! have "$REDIS_IMAGE"; then
    make_base
    say "building $REDIS_IMAGE"
    build "$REDIS_IMAGE" <<EOF
FROM $BASE_IMAGE
RUN apt-get update \\
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends redis-server \\
 && rm -rf /var/lib/apt/lists/* \\
 && mkdir -p /data && chown redis:redis /data
USER redis
WORKDIR /data
EXPOSE 6379
CMD ["redis-server", "--protected-mode", "no"]
EOF
fi

echo "GITMEM_PYTHON_IMAGE=$PYTHON_IMAGE"
echo "GITMEM_REDIS_IMAGE=$REDIS_IMAGE"
