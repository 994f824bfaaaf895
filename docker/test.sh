#!/usr/bin/env bash
# Build gitmem's image and check the compose layout end to end, as an operator would run it.
#
#   docker/test.sh            (from anywhere; needs a running Docker daemon, docker compose or
#                              docker-compose, python3 and git on this machine)
#
# 1. Base images: python:3.11-slim-bookworm and redis:7-alpine when Docker has them or can pull
#    them; otherwise local ones from Debian's packages (docker/base-images.sh).
# 2. gitmem's image, built by compose (its build arguments name the base image).
# 3. The layout of docker/compose.yaml (two web replicas, two workers, beat, Redis, one data
#    volume) plus docker/e2e/compose.yaml (a stand-in model), as its own compose project on
#    free ports of 127.0.0.1, configured through the environment as a user would.
# 4. docker/e2e/check.py: health of every replica, writes through both, a consolidation whose
#    worker is killed mid-run, the review approved, git clone over HTTP.
# 5. `compose down -v`, and nothing of the project may be left (containers, volumes, network).
#
# Exit 0 when every check held; otherwise the failing check, the services' state and logs.
set -euo pipefail
cd "$(dirname "$0")/.."
began=$(date +%s)
say() { echo "docker/test.sh: $*"; }
elapsed() { echo $(( $(date +%s) - $1 )); }

if ! docker info >/dev/null 2>&1; then
    say "no Docker daemon answers (is dockerd running, and may this user use it?)" >&2
    exit 2
fi
if docker compose version >/dev/null 2>&1; then
    compose_cmd="docker compose"
elif command -v docker-compose >/dev/null 2>&1; then
    compose_cmd="docker-compose"
else
    say "neither 'docker compose' nor 'docker-compose' is installed" >&2
    exit 2
fi

# The test's settings only: nothing from the caller's gitmem configuration leaks in.
while read -r name; do
    case "$name" in
        GITMEM_PYTHON_IMAGE|GITMEM_REDIS_IMAGE|GITMEM_DEBIAN_MIRROR|GITMEM_IMAGE) ;;
        GITMEM_*|SLACK_*) unset "$name" ;;
    esac
done < <(compgen -e)

# 1. Base images.
usable() { docker image inspect "$1" >/dev/null 2>&1 || docker pull -q "$1" >/dev/null 2>&1; }
python_image=${GITMEM_PYTHON_IMAGE:-python:3.11-slim-bookworm}
redis_image=${GITMEM_REDIS_IMAGE:-redis:7-alpine}
step=$(date +%s)
if ! usable "$python_image" || ! usable "$redis_image"; then
    say "no $python_image or $redis_image from a registry: using local base images"
    local_images=$(docker/base-images.sh)
    usable "$python_image" || python_image=$(sed -n 's/^GITMEM_PYTHON_IMAGE=//p' <<<"$local_images")
    usable "$redis_image" || redis_image=$(sed -n 's/^GITMEM_REDIS_IMAGE=//p' <<<"$local_images")
fi
export GITMEM_PYTHON_IMAGE=$python_image GITMEM_REDIS_IMAGE=$redis_image
export GITMEM_IMAGE=${GITMEM_IMAGE:-gitmem:latest}
say "base images $GITMEM_PYTHON_IMAGE and $GITMEM_REDIS_IMAGE ready ($(elapsed "$step") s)"

# Two free neighbouring ports on 127.0.0.1 for the web replicas.
read -r port port_last < <(python3 - <<'EOF'
import random, socket
for _ in range(200):
    base = random.randrange(20000, 60000)
    try:
        sockets = [socket.create_server(("127.0.0.1", p)) for p in (base, base + 1)]
    except OSError:
        continue
    for s in sockets:
        s.close()
    print(base, base + 1)
    break
EOF
)
export GITMEM_BIND=127.0.0.1 GITMEM_PORT=$port GITMEM_PORT_LAST=$port_last
# A model to ask (the stand-in), runs handed back quickly, no runs but the one the check asks for.
export GITMEM_LLM_BASE_URL=http://model:8080/v1 GITMEM_LLM_TIMEOUT=300 GITMEM_LOCK_LEASE_SECONDS=6 \
       GITMEM_BROKER_VISIBILITY_TIMEOUT=20 GITMEM_CONSOLIDATE_MIN_ACTIVE=100000 \
       GITMEM_SECRET_KEY=$(python3 -c 'import secrets; print(secrets.token_hex(32))')

project=gitmem-e2e-$$
report=$(mktemp) no_env=$(mktemp)  # an empty --env-file: a .env file beside compose.yaml stays out of it
compose="$compose_cmd --project-name $project --env-file $no_env -f docker/compose.yaml -f docker/e2e/compose.yaml"
started=0

finish() {
    local status=$?
    trap - EXIT
    if [ "$started" = 1 ]; then
        if [ "$status" != 0 ]; then
            say "failed; the services:" >&2
            $compose ps >&2 || true
            $compose logs --no-color --tail 60 >&2 || true
        fi
        step=$(date +%s)
        if ! $compose down -v --remove-orphans >/dev/null 2>&1; then
            say "'compose down -v' failed" >&2
            status=1
        fi
        left=$(docker ps -aq --filter "label=com.docker.compose.project=$project"
               docker volume ls -q --filter "label=com.docker.compose.project=$project"
               docker network ls -q --filter "label=com.docker.compose.project=$project")
        if [ -n "$left" ]; then
            say "'compose down -v' left containers, volumes or networks behind: $(echo "$left" | tr '\n' ' ')" >&2
            status=1
        else
            say "compose down -v: nothing left ($(elapsed "$step") s)"
        fi
    fi
    rm -f "$report" "$no_env"
    if [ "$status" = 0 ]; then
        say "passed in $(elapsed "$began") s"
    else
        say "FAILED after $(elapsed "$began") s" >&2
    fi
    exit "$status"
}
trap finish EXIT

# 2. gitmem's image.
step=$(date +%s)
$compose build -q web >/dev/null 2>"$report" || { cat "$report" >&2; exit 1; }
size=$(docker image inspect -f '{{.Size}}' "$GITMEM_IMAGE")
say "built $GITMEM_IMAGE on $GITMEM_PYTHON_IMAGE: $(( size / 1000000 )) MB ($(elapsed "$step") s)"
user=$(docker run --rm --entrypoint id "$GITMEM_IMAGE" -u)
[ "$user" != 0 ] || { say "the image runs as root" >&2; exit 1; }

# 3. Up.
started=1
up_started=$(python3 -c 'import time; print(time.time())')
$compose up -d >/dev/null 2>"$report" || { cat "$report" >&2; exit 1; }
say "compose up -d returned in $(python3 -c "import time; print(round(time.time() - $up_started, 1))") s" \
    "($compose_cmd, project $project, web on 127.0.0.1:$port-$port_last)"

# 4. The checks.
python3 docker/e2e/check.py --compose "$compose" --up-started "$up_started" --report "$report"
say "image $GITMEM_IMAGE: $(( size / 1000000 )) MB; $(cat "$report")"
