#!/usr/bin/env bash
# System tools some tests drive (the server itself needs none of them):
#   kcat            compatibility matrix (librdkafka's command-line client)
#   a JDK (17)      golden bytes from Kafka's own serializers, the Java client, Spark, java.util.Properties
#   node + npm      kafkajs in the compatibility matrix
#   iproute2 (ip)   the chaos lab's network namespaces (tests/chaos, as root)
#   promtool        checks and unit-tests docs/monitoring's alert rules (Debian's prometheus package)
# Debian/Ubuntu via apt-get; as root or with passwordless sudo. Installs only what is missing.
# Without them the tests that need them skip with a printed reason (under CI=true they fail).
set -euo pipefail
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo -n"
need=()
command -v kcat >/dev/null 2>&1 || need+=(kcat)
command -v javac >/dev/null 2>&1 || need+=(openjdk-17-jdk-headless)
command -v npm >/dev/null 2>&1 || need+=(nodejs npm)
command -v ip >/dev/null 2>&1 || need+=(iproute2)
command -v promtool >/dev/null 2>&1 || need+=(prometheus)
if [ ${#need[@]} -eq 0 ]; then
  echo "system tools present: kcat, javac, npm, ip, promtool"
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "no apt-get: install ${need[*]} with your package manager" >&2
  exit 1
fi
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq "${need[@]}"
echo "installed: ${need[*]}"
