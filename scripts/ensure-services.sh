#!/usr/bin/env bash
# Makes sure the PostgreSQL and Redis the test suites use are up on loopback, starting them the way
# the development machines do when they are not. Prints what it did; fails if a service stays down.
set -uo pipefail

up() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

wait_for() {
  for _ in $(seq 1 30); do up "$1" && return 0; sleep 1; done
  return 1
}

if ! up 5432; then
  echo "PostgreSQL is not answering on 127.0.0.1:5432; starting it."
  if command -v pg_ctlcluster >/dev/null && [ -d /etc/postgresql ]; then
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -1)" main start || true
  fi
  wait_for 5432 || { echo "PostgreSQL did not start." >&2; exit 1; }
fi

if ! up 6379; then
  echo "Redis is not answering on 127.0.0.1:6379; starting it."
  if command -v redis-server >/dev/null; then
    mkdir -p /var/lib/redis /var/log/redis 2>/dev/null || true
    redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
      --dir /var/lib/redis --logfile /var/log/redis/ci.log || true
  fi
  wait_for 6379 || { echo "Redis did not start." >&2; exit 1; }
fi
echo "PostgreSQL and Redis are up."
