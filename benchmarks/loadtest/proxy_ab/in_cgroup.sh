#!/bin/sh
# Runs a command in the cgroup v1 cpuacct group mha-loadtest-proxy (proxy_ab.sh makes it), so that every process
# of the proxy is counted, nginx's workers ended by a reload among them (run.py reads MHA_LOADTEST_PROXY_CGROUP).
echo $$ > /sys/fs/cgroup/cpuacct/mha-loadtest-proxy/tasks
exec "$@"
