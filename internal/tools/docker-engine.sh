#!/usr/bin/env bash
# Makes a Docker engine reachable for the docker driver's tests, if it can:
# as root, installs Debian's docker.io when dockerd is missing and starts
# dockerd when no engine answers. It never fails the build: where no
# engine can run, it says so, and those tests skip, each saying why.
set -u
# The README's "Plugins as containers" builds a writer image from Debian's
# static busybox.
if ! dpkg -s busybox-static >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
	(apt-get update -qq && apt-get install -y -qq busybox-static) >/dev/null 2>&1 ||
		echo "busybox-static could not be installed; the README's containers walkthrough will fail"
fi
reachable() {
	if command -v docker >/dev/null 2>&1; then
		docker info >/dev/null 2>&1
	elif command -v curl >/dev/null 2>&1; then
		curl -fsS --unix-socket /var/run/docker.sock http://d/_ping >/dev/null 2>&1
	else
		[ -S /var/run/docker.sock ]
	fi
}
if reachable; then
	echo "docker engine: reachable"
	exit 0
fi
if [ "$(id -u)" != 0 ]; then
	echo "docker engine: not reachable and not root; the docker driver's tests will skip"
	exit 0
fi
if ! command -v dockerd >/dev/null 2>&1; then
	(apt-get update -qq && apt-get install -y -qq docker.io) >/dev/null 2>&1 ||
		{ echo "docker engine: could not install docker.io; the docker driver's tests will skip"; exit 0; }
fi
nohup dockerd >/tmp/berth-ci-dockerd.log 2>&1 &
for _ in $(seq 1 30); do
	if reachable; then
		echo "docker engine: started (dockerd pid $!)"
		exit 0
	fi
	sleep 1
done
echo "docker engine: dockerd did not answer within 30 s (see /tmp/berth-ci-dockerd.log); the docker driver's tests will skip"
exit 0
